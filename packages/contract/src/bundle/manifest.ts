/**
 * manifest.json and the naming rules shared by the writer and the reader: what a bundle name, a native path and an
 * entry name may look like, and which roles a compatibility profile admits.
 */
import { findInterval, type ProfileSet } from '../profiles/index.js';
import type { BundleFile, BundleManifest } from '../schema/index.js';
import { CONTROL_CHARACTERS } from '../util/terminal-text.js';
import { ARTIFACT_FORMAT, LIMITS } from './limits.js';

export type { BundleFile, BundleManifest } from '../schema/index.js';

export const MANIFEST_NAME = 'manifest.json';
export const NAME_PATTERN = /^[A-Za-z0-9._-]+$/;
/** `files/NNNN-<name>`; group 1 is the bundle name with its index. */
export const FILE_ENTRY_PATTERN = /^files\/([0-9]{4}-[A-Za-z0-9._-]+)$/;

export function fileEntryName(index: number, name: string): string {
  return `files/${String(index).padStart(4, '0')}-${name}`;
}

// Control and bidirectional characters (util/terminal-text.ts): nothing legitimate in a path carries them, and they
// can rewrite a terminal or reorder what a person reads.
const CONTROL = new RegExp(`[${CONTROL_CHARACTERS}]`);

/** Why `name` cannot be a file's bundle name, or undefined. */
export function nameProblem(name: string): string | undefined {
  if (!NAME_PATTERN.test(name)) return 'must be 1 or more characters of A-Z a-z 0-9 . _ -';
  if (name.length > LIMITS.nameBytes) return `is longer than ${LIMITS.nameBytes} characters`;
  return undefined;
}

/**
 * Why `p` cannot be a native path (relative to a session root, `/`-separated), or undefined. Anything a restore could
 * resolve outside the root, or that means different things on different systems, is refused.
 */
export function nativePathProblem(p: string): string | undefined {
  if (p.length === 0) return 'is empty';
  if (Buffer.byteLength(p) > LIMITS.nativePathBytes) return `is longer than ${LIMITS.nativePathBytes} bytes`;
  if (p.includes('\0')) return 'contains a NUL character';
  if (p.includes('\\')) return 'contains a backslash';
  if (CONTROL.test(p)) return 'contains a control character';
  if (p.startsWith('/')) return 'is absolute';
  if (/^[A-Za-z]:/.test(p)) return 'starts with a drive letter';
  for (const segment of p.split('/')) {
    if (segment === '') return 'has an empty path segment ("//" or a leading or trailing "/")';
    if (segment === '..') return 'contains ".."';
    if (segment === '.') return 'contains a "." segment';
    if (Buffer.byteLength(segment) > 255) return 'has a path segment longer than 255 bytes';
    // Restore names its staging folders and temp files so; nothing of a session is, and restore refuses such paths.
    if (segment.includes('.blue-agent-restore')) return 'names a blue-agent temporary file (".blue-agent-restore")';
  }
  return undefined;
}

/** Why a tar entry name is unsafe to extract anywhere, or undefined. `directory` admits one trailing slash. */
export function entryNameProblem(name: string, directory = false): string | undefined {
  if (name.length === 0) return 'has an empty name';
  if (Buffer.byteLength(name) > LIMITS.entryNameBytes) return `has a name longer than ${LIMITS.entryNameBytes} bytes`;
  if (name.includes('\0')) return 'has a NUL character in its name';
  if (name.includes('\\')) return 'has a backslash in its name';
  if (CONTROL.test(name)) return 'has a control character in its name';
  if (name.startsWith('/')) return 'has an absolute name';
  if (/^[A-Za-z]:/.test(name)) return 'has a name starting with a drive letter';
  const body = directory && name.endsWith('/') ? name.slice(0, -1) : name;
  for (const segment of body.split('/')) {
    if (segment === '..') return 'has ".." in its name';
    if (segment === '.') return 'has a "." segment in its name';
    if (segment === '') return 'has an empty segment in its name ("//", or a leading or trailing "/")';
    if (Buffer.byteLength(segment) > 255) return 'has a name segment longer than 255 bytes';
  }
  return undefined;
}

/** The role rules of one profile, applied to a list of files. `label(i)` names file i in messages. */
export function profileProblem(
  manifest: {
    harness: string;
    compatibility_profile: string;
    files: readonly Pick<BundleFile, 'role' | 'native_path'>[];
  },
  profiles: ProfileSet,
  label: (index: number) => string,
): string | undefined {
  const profile = manifest.compatibility_profile;
  const found = findInterval(profiles, profile);
  if (found === undefined) return `compatibility profile "${profile}" is unknown to this blue-agent`;
  if (found.harness !== manifest.harness)
    return `harness "${manifest.harness}" does not match profile ${profile}, which is for ${found.harness}`;
  const session = found.interval.session;
  if (session === undefined) return `profile ${profile} describes no session files`;
  const counts = new Map<string, number>();
  for (const [i, file] of manifest.files.entries()) {
    const rule = session.roles.find((r) => r.role === file.role);
    if (rule === undefined) {
      return (
        `${label(i)}: role ${file.role} is not one of profile ${profile}'s roles (` +
        `${session.roles.map((r) => r.role).join(', ')})`
      );
    }
    if (session.root !== undefined && file.native_path === undefined) {
      return `${label(i)}: has no native_path, but profile ${profile} restores every file under its session root`;
    }
    if (session.root === undefined && file.native_path !== undefined) {
      return (
        `${label(i)}: has a native_path, but profile ${profile} has no session root (its files are restored ` +
        `through the harness)`
      );
    }
    counts.set(file.role, (counts.get(file.role) ?? 0) + 1);
  }
  for (const rule of session.roles) {
    const n = counts.get(rule.role) ?? 0;
    if (n < rule.min || n > rule.max) {
      const wanted = rule.min === rule.max ? `exactly ${rule.min}` : `${rule.min} to ${rule.max}`;
      return `profile ${profile} needs ${wanted} ${rule.role} file${rule.max === 1 ? '' : 's'}, found ${n}`;
    }
  }
  return undefined;
}

export interface ManifestFields {
  harness: BundleManifest['harness'];
  profile: string;
  sessionId: string;
  capturedAtUnixMs: number;
  cwd?: string | undefined;
  repository?: { root: string; remote?: string | undefined } | undefined;
  title?: string | undefined;
  summary?: string | undefined;
  captureReason?: BundleManifest['capture_reason'];
  resumable?: false | undefined;
  redaction?: BundleManifest['redaction'];
}

/** The manifest object, keys in schema order (`files` last) so that equal input serialises to equal bytes. */
export function buildManifest(fields: ManifestFields, files: BundleFile[]): BundleManifest {
  return {
    schema_version: 1,
    artifact_format: ARTIFACT_FORMAT,
    harness: fields.harness,
    compatibility_profile: fields.profile,
    native_session_id: fields.sessionId,
    captured_at_unix_ms: fields.capturedAtUnixMs,
    ...(fields.cwd === undefined ? {} : { cwd: fields.cwd }),
    ...(fields.repository === undefined
      ? {}
      : {
          repository: {
            root: fields.repository.root,
            ...(fields.repository.remote === undefined ? {} : { remote: fields.repository.remote }),
          },
        }),
    ...(fields.title === undefined ? {} : { title: fields.title }),
    ...(fields.summary === undefined ? {} : { summary: fields.summary }),
    ...(fields.captureReason === undefined ? {} : { capture_reason: fields.captureReason }),
    ...(fields.resumable === undefined ? {} : { resumable: fields.resumable }),
    ...(fields.redaction === undefined ? {} : { redaction: fields.redaction }),
    files: files.map((f) => ({
      role: f.role,
      path: f.path,
      ...(f.native_path === undefined ? {} : { native_path: f.native_path }),
      size: f.size,
      sha256: f.sha256,
    })),
  };
}

export function serializeManifest(manifest: BundleManifest): Buffer {
  return Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`, 'utf8');
}

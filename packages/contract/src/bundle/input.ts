/**
 * What a bundle is written from: a captured session's files and the texts beside them (`BundleInput`), and the
 * redactor they pass through on their way in (`BundleRedaction`).
 */
import type { HarnessName } from '../schema/index.js';
import type { BundleFile } from './manifest.js';

/** One file of a captured session, before it is packed. */
export interface SessionFile {
  role: BundleFile['role'];
  /** Name of the entry in the bundle (`files/NNNN-<name>`): [A-Za-z0-9._-]+. */
  name: string;
  /** Where it lives, relative to the session root, `/`-separated; absent for files with no native place. */
  nativePath?: string;
  /** An absolute path inside the session root, read (as a regular file, never through a link) when packing. */
  path?: string;
  /** Bytes made at capture instead of a file on disk (a harness's own export, a sanitised state file). */
  content?: Uint8Array;
}

export interface BundleInput {
  harness: HarnessName;
  profile: string;
  sessionId: string;
  capturedAtUnixMs: number;
  cwd?: string;
  repository?: { root: string; remote?: string };
  title?: string;
  summary?: string;
  /** Absolute session root: every SessionFile.path must lie inside it (realpath), native paths are relative to it. */
  root?: string;
  files: SessionFile[];
  /** Not a session-end hook's capture: what found the session (the agent's idle sweep, backfill). */
  captureReason?: 'idle' | 'backfill';
  /** The session's files predate its profile: no restore places them. */
  resumable?: false;
}

/** What a redactor makes of one file's bytes: the bytes to pack and how many secrets it replaced. */
export interface Redacted {
  bytes: Buffer;
  replaced: number;
}

/** Passes every file of a bundle through one redactor (each file whole, within the per-file cap), and its manifest's
 * texts. */
export interface BundleRedaction {
  /** Recorded in the manifest: the rule set and its version. */
  rules: string;
  version: string;
  redact(bytes: Buffer, file: { role: string; name: string }): Redacted | Promise<Redacted>;
  /** One short text of the manifest (a title, a folder), read as plain text. */
  redactText(text: string): Promise<{ text: string; replaced: number }>;
}

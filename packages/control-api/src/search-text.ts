/**
 * What a session says, for full-text search: the user and assistant text of a verified bundle, read by its harness's
 * own transcript reader (the contract's, which `sessions export` uses too), secrets masked by the rules titles
 * follow, bounded per session. Tool output is left out: it is mostly file contents and command noise, and it is where
 * secrets hide.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { limitsWith } from '@blue-agent/contract/bundle/limits.js';
import { scanBundle, violation } from '@blue-agent/contract/bundle/scan.js';
import { checkScan, withBundle } from '@blue-agent/contract/bundle/verify.js';
import { maskSecrets } from '@blue-agent/contract/util/secrets.js';
import type { ProfileSet } from '@blue-agent/contract/profiles/index.js';
import type { BlobStore } from './blobs/types.js';
import type { Artifact } from './store/index.js';
import { readTranscript, wantedFiles } from '@blue-agent/contract/harnesses/index.js';
import {
  MAX_RECORD_BYTES,
  parseRecord,
  RECORD_FORMAT,
  recordSearchParts,
  recordTranscript,
  type SessionRecord,
} from '@blue-agent/contract/bundle/record.js';
import { readChecked } from '@blue-agent/contract/util/safe-read.js';

/** At most this much text of one session is indexed (the first of it: how a session starts says what it is about). */
export const MAX_SEARCH_TEXT_CHARS = 200_000;

export type Conversation = ReturnType<typeof readTranscript>;

/**
 * What the stored object of `artifact` says, for search, or undefined when it is gone, not what was uploaded, or not
 * a readable bundle. A blob store that cannot be read throws (the caller tries again later).
 */
export async function storedSearchText(
  blobs: BlobStore,
  artifact: StoredArtifact,
  profiles: ProfileSet,
): Promise<string | undefined> {
  if (artifact.artifact_format === RECORD_FORMAT) {
    const record = await withStoredObject(blobs, artifact, (file) => readRecord(file));
    return record === undefined ? undefined : boundedText(recordSearchParts(record));
  }
  const transcript = await storedTranscript(blobs, artifact, profiles);
  return transcript === undefined ? undefined : searchText(transcript);
}

type StoredArtifact = Pick<Artifact, 'blob_key' | 'size_bytes' | 'sha256' | 'artifact_format'>;

/**
 * The conversation of the stored object of `artifact` (the transcript viewer's, and search's), or undefined when it
 * is gone, not what was uploaded, or not a readable bundle. A blob store that cannot be read throws.
 */
export async function storedTranscript(
  blobs: BlobStore,
  artifact: StoredArtifact,
  profiles: ProfileSet,
): Promise<Conversation | undefined> {
  if (artifact.artifact_format === RECORD_FORMAT) {
    const record = await withStoredObject(blobs, artifact, (file) => readRecord(file));
    return record === undefined ? undefined : recordTranscript(record);
  }
  return withStoredObject(blobs, artifact, (file) => readConversation(file, profiles));
}

/**
 * Runs `read` on the stored object of `artifact`: a local object where it is (verified at complete; its URL binds the
 * digest), any other copied into a temporary folder and checked against what was completed. Undefined when it is gone,
 * not what was uploaded, or `read` fails on it; a blob store that cannot be read throws.
 */
async function withStoredObject<T>(
  blobs: BlobStore,
  artifact: StoredArtifact,
  read: (file: string) => Promise<T>,
): Promise<T | undefined> {
  const local = blobs.fileOf?.(artifact.blob_key);
  if (local !== undefined) return read(local).catch(() => undefined);
  const work = await mkdtemp(path.join(tmpdir(), 'blue-control-read-'));
  try {
    const file = path.join(work, 'object');
    const stored = await blobs.stat(artifact.blob_key, { copyTo: file });
    if (stored === undefined || stored.size !== artifact.size_bytes || stored.sha256 !== artifact.sha256)
      return undefined;
    return await read(file).catch(() => undefined);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** A session record in `file`, read within its size limit. */
async function readRecord(file: string): Promise<SessionRecord> {
  const bytes = await readChecked(file, { code: 'BUNDLE_INVALID', maxBytes: MAX_RECORD_BYTES });
  return parseRecord(bytes!, 'the stored session record');
}

/**
 * Up to this many bytes of a bundle's files are kept in memory while it is verified, so that a small bundle is read
 * once; a larger one is read a second time for the files its transcript reader wants.
 */
export const ONE_PASS_BYTES = 4 * 1024 * 1024;

/**
 * The conversation of the bundle in `file`, verified as `extractBundle` verifies it (every entry's digest against the
 * manifest, the profile), read in memory: nothing is written to disk.
 */
async function readConversation(file: string, profiles: ProfileSet): Promise<Conversation> {
  const limits = limitsWith(undefined);
  return withBundle(file, async (handle) => {
    // Each kept file in one buffer of the size its entry declares (the scan holds entries to their size and limits).
    const kept = new Map<string, { bytes: Buffer; filled: number }>();
    let keptBytes = 0;
    let keeping = true;
    let current: { bytes: Buffer; filled: number } | undefined;
    const keep = (name: string, size: number): void => {
      current = { bytes: Buffer.allocUnsafe(size), filled: 0 };
      kept.set(name, current);
    };
    const write = async (chunk: Buffer): Promise<void> => {
      if (current === undefined) return;
      current.filled += chunk.copy(current.bytes, current.filled);
    };
    const close = async (): Promise<void> => void (current = undefined);
    const first = await scanBundle(handle, file, {
      limits,
      sink: {
        async open(name, size) {
          keptBytes += size;
          if (keptBytes > ONE_PASS_BYTES) {
            keeping = false;
            kept.clear();
          }
          current = undefined;
          if (keeping) keep(name, size);
        },
        write,
        close,
      },
    });
    const manifest = checkScan(first, file, profiles, limits);
    const wanted = wantedFiles(manifest);
    if (!keeping) {
      // The second pass keeps only the wanted files and checks them again: the file may have changed in between.
      const names = new Set(wanted.map((i) => manifest.files[i]!.path));
      const second = await scanBundle(handle, file, {
        limits,
        sink: {
          async open(name, size) {
            current = undefined;
            if (names.has(name)) keep(name, size);
          },
          write,
          close,
        },
      });
      if (second.sha256 !== first.sha256) throw violation(file)('changed while being read');
    }
    const sources = wanted.map((i) => {
      const f = manifest.files[i]!;
      const entry = kept.get(f.path);
      const bytes = entry === undefined ? Buffer.alloc(0) : entry.bytes.subarray(0, entry.filled);
      // Bytes kept in the first pass are the ones its digests were taken of; a second pass's are checked here.
      if (!keeping && (bytes.length !== f.size || createHash('sha256').update(bytes).digest('hex') !== f.sha256)) {
        throw violation(file)(`changed while being read (${f.path} differs)`);
      }
      return {
        role: f.role,
        path: f.path,
        ...(f.native_path === undefined ? {} : { native_path: f.native_path }),
        bytes,
      };
    });
    return readTranscript(manifest, sources);
  });
}

/** The user and assistant turns (subagents' too), one per line, white space collapsed, masked and cut. */
export function searchText(transcript: Conversation): string {
  const parts: string[] = [];
  let length = 0;
  const add = (t: Conversation): void => {
    for (const turn of t.turns) {
      if (length >= MAX_SEARCH_TEXT_CHARS) return;
      if (turn.role === 'tool') continue;
      const text = turn.text.replace(/[\s\u0000]+/g, ' ').trim();
      if (text === '') continue;
      parts.push(text);
      length += text.length + 1;
    }
    for (const section of t.sections ?? []) add(section.transcript);
  };
  add(transcript);
  return boundedText(parts);
}

/**
 * Parts joined one per line, masked and cut: masked after joining, so a secret split over two turns is still one
 * match for the rules; cut after masking, so a cut never leaves half a secret unmasked.
 */
function boundedText(parts: readonly string[]): string {
  const text = parts
    .map((p) => p.replace(/[\s\u0000]+/g, ' ').trim())
    .filter((p) => p !== '')
    .join('\n');
  return cutAtCodePoint(maskSecrets(text.slice(0, MAX_SEARCH_TEXT_CHARS * 2)), MAX_SEARCH_TEXT_CHARS);
}

function cutAtCodePoint(text: string, max: number): string {
  if (text.length <= max) return text;
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}

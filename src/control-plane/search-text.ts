/**
 * What a session says, for full-text search: the user and assistant text of a verified bundle, read by its harness's
 * own transcript reader (the same one `sessions export` uses), secrets masked by the rules titles follow, bounded per
 * session. Tool output is left out: it is mostly file contents and command noise, and it is where secrets hide.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { extractBundle } from '../bundle/extract.js';
import { maskSecrets } from '../harness-kit/secrets.js';
import type { ProfileSet } from '../profiles/index.js';
import type { BlobStore } from './blobs/types.js';
import type { Artifact } from './store/index.js';
import { readTranscript, wantedFiles } from '../sessions/export.js';

/** At most this much text of one session is indexed (the first of it: how a session starts says what it is about). */
export const MAX_SEARCH_TEXT_CHARS = 200_000;

export type Conversation = ReturnType<typeof readTranscript>;

/**
 * What the stored object of `artifact` says, for search, or undefined when it is gone, not what was uploaded, or not
 * a readable bundle. A blob store that cannot be read throws (the caller tries again later).
 */
export async function storedSearchText(blobs: BlobStore, artifact: Pick<Artifact, 'blob_key' | 'size_bytes' | 'sha256'>, profiles: ProfileSet): Promise<string | undefined> {
  const transcript = await storedTranscript(blobs, artifact, profiles);
  return transcript === undefined ? undefined : searchText(transcript);
}

/**
 * The conversation of the stored object of `artifact` (the transcript viewer's, and search's), or undefined when it
 * is gone, not what was uploaded, or not a readable bundle. A blob store that cannot be read throws.
 */
export async function storedTranscript(blobs: BlobStore, artifact: Pick<Artifact, 'blob_key' | 'size_bytes' | 'sha256'>, profiles: ProfileSet): Promise<Conversation | undefined> {
  const work = await mkdtemp(path.join(tmpdir(), 'blue-control-read-'));
  try {
    // A local object is read where it is (verified at complete; its URL binds the digest); any other is copied here
    // and checked against what was completed.
    let file = blobs.fileOf?.(artifact.blob_key);
    if (file === undefined) {
      file = path.join(work, 'bundle');
      const stored = await blobs.stat(artifact.blob_key, { copyTo: file });
      if (stored === undefined || stored.size !== artifact.size_bytes || stored.sha256 !== artifact.sha256) return undefined;
    }
    return await readConversation(file, work, profiles).catch(() => undefined);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** The conversation of the bundle in `file` (verified and extracted in a temporary folder under `workRoot`). */
async function readConversation(file: string, workRoot: string, profiles: ProfileSet): Promise<Conversation> {
  const dir = await mkdtemp(path.join(workRoot, 'index-'));
  try {
    const result = await extractBundle(file, path.join(dir, 'files'), { profiles });
    const manifest = result.manifest;
    const sources = [];
    for (const i of wantedFiles(manifest)) {
      const f = manifest.files[i]!;
      sources.push({ role: f.role, path: f.path, ...(f.native_path === undefined ? {} : { native_path: f.native_path }), bytes: await readFile(result.files[i]!) });
    }
    return readTranscript(manifest, sources);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
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
  // Masked after joining, so a secret split over two turns is still one match for the rules; cut after masking, so
  // a cut never leaves half a secret unmasked.
  return cutAtCodePoint(maskSecrets(parts.join('\n')), MAX_SEARCH_TEXT_CHARS);
}

function cutAtCodePoint(text: string, max: number): string {
  if (text.length <= max) return text;
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}

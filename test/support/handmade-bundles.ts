/**
 * Building bundles by hand, hostile ones included: a small tar writer that will write whatever it is told (links,
 * traversal, bad checksums, hidden names), and a session of real files on disk to bundle.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import zlib from 'node:zlib';
import type { BundleInput } from '../../packages/contract/src/bundle/index.js';
import { loadProfiles, type ProfileSet } from '../../packages/contract/src/profiles/index.js';
import { agentRoot } from './context.js';

export const sha = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

let cached: ProfileSet | undefined;
export async function shippedProfiles(): Promise<ProfileSet> {
  cached ??= await loadProfiles(path.join(agentRoot, 'profiles'));
  return cached;
}

export interface RawEntry {
  name: string;
  data?: Buffer | string;
  /** Typeflag character; '0' by default. */
  type?: string;
  linkname?: string;
  /** Size written in the header when it must differ from the data's length. */
  size?: number;
  /** A pax header placed before this entry. */
  pax?: Record<string, string>;
  /** Edits the finished header block (the checksum is recomputed afterwards unless `keepChecksum`). */
  patch?: (block: Buffer) => void;
  keepChecksum?: boolean;
}

function octal(block: Buffer, offset: number, length: number, value: number): void {
  block.write(`${value.toString(8).padStart(length - 1, '0')}\0`, offset, length, 'latin1');
}

function checksum(block: Buffer): void {
  block.fill(0x20, 148, 156);
  let sum = 0;
  for (const b of block) sum += b;
  block.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'latin1');
}

export function header(entry: RawEntry, size: number): Buffer {
  const block = Buffer.alloc(512);
  block.write(entry.name, 0, 100, 'utf8');
  octal(block, 100, 8, 0o600);
  octal(block, 108, 8, 0);
  octal(block, 116, 8, 0);
  octal(block, 124, 12, size);
  octal(block, 136, 12, 0);
  block.write(entry.type ?? '0', 156, 1, 'latin1');
  if (entry.linkname !== undefined) block.write(entry.linkname, 157, 100, 'utf8');
  block.write('ustar\u000000', 257, 8, 'latin1');
  checksum(block);
  if (entry.patch !== undefined) {
    entry.patch(block);
    if (entry.keepChecksum !== true) checksum(block);
  }
  return block;
}

const pad = (n: number) => Buffer.alloc((512 - (n % 512)) % 512);

function paxData(records: Record<string, string>): Buffer {
  return Buffer.concat(
    Object.entries(records).map(([k, v]) => {
      const body = ` ${k}=${v}\n`;
      let len = Buffer.byteLength(body) + 1;
      while (String(len).length + Buffer.byteLength(body) !== len) len = String(len).length + Buffer.byteLength(body);
      return Buffer.from(`${len}${body}`);
    }),
  );
}

export function tarOf(entries: RawEntry[], options: { end?: 0 | 1 | 2; after?: Buffer } = {}): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    if (entry.pax !== undefined) {
      const data = paxData(entry.pax);
      parts.push(header({ name: 'PaxHeader/x', type: 'x' }, data.length), data, pad(data.length));
    }
    const data = typeof entry.data === 'string' ? Buffer.from(entry.data) : (entry.data ?? Buffer.alloc(0));
    parts.push(header(entry, entry.size ?? data.length), data, pad(data.length));
  }
  parts.push(Buffer.alloc(512 * (options.end ?? 2)));
  if (options.after !== undefined) parts.push(options.after);
  return Buffer.concat(parts);
}

export const gzip = (data: Buffer): Buffer => zlib.gzipSync(data);

/** A valid Codex bundle's parts: one rollout file and its manifest, to be broken one way at a time. */
export function codexParts(overrides: Record<string, unknown> = {}): {
  content: Buffer;
  manifest: Record<string, unknown>;
} {
  const content = Buffer.from('{"type":"session_meta"}\n{"type":"message","text":"hello"}\n');
  const manifest: Record<string, unknown> = {
    schema_version: 1,
    artifact_format: 'blue-session-bundle-v1',
    harness: 'codex',
    compatibility_profile: 'codex-v0_145_0',
    native_session_id: 'sess-1',
    captured_at_unix_ms: 1700000000000,
    files: [
      {
        role: 'rollout',
        path: 'files/0000-rollout.jsonl',
        native_path: '2025/01/02/rollout.jsonl',
        size: content.length,
        sha256: sha(content),
      },
    ],
    ...overrides,
  };
  return { content, manifest };
}

export function codexBundle(
  edit: (parts: {
    content: Buffer;
    manifest: Record<string, unknown>;
    entries: RawEntry[];
  }) => RawEntry[] | void = () => undefined,
): Buffer {
  const { content, manifest } = codexParts();
  const entries: RawEntry[] = [{ name: 'files/0000-rollout.jsonl', data: content }];
  const replaced = edit({ content, manifest, entries });
  const all = replaced ?? [...entries, { name: 'manifest.json', data: JSON.stringify(manifest) }];
  return gzip(tarOf(all));
}

/** A Claude session on disk under `<root>/projects`. */
export async function claudeSession(root: string): Promise<BundleInput> {
  const projects = path.join(root, 'projects');
  const project = path.join(projects, '-home-dev-app');
  await mkdir(path.join(project, 'c0ffee', 'subagents'), { recursive: true });
  const transcript = path.join(project, 'c0ffee.jsonl');
  const companion = path.join(project, 'c0ffee', 'subagents', 'agent-1.jsonl');
  await writeFile(transcript, jsonl(400, 'main'));
  await writeFile(companion, jsonl(50, 'agent'));
  return {
    harness: 'claude',
    profile: 'claude-v2_0_12',
    sessionId: 'c0ffee',
    capturedAtUnixMs: 1700000000123,
    cwd: '/home/dev/app',
    repository: { root: '/home/dev/app', remote: 'git@example.com:dev/app.git' },
    title: 'Fix the flaky test',
    summary: 'Find why the test fails one run in ten',
    root: projects,
    files: [
      { role: 'primary_transcript', name: 'c0ffee.jsonl', nativePath: '-home-dev-app/c0ffee.jsonl', path: transcript },
      {
        role: 'session_companion',
        name: 'agent-1.jsonl',
        nativePath: '-home-dev-app/c0ffee/subagents/agent-1.jsonl',
        path: companion,
      },
    ],
  };
}

export function jsonl(lines: number, who: string): string {
  let out = '';
  for (let i = 0; i < lines; i++) {
    out +=
      JSON.stringify({
        type: i % 2 ? 'assistant' : 'user',
        uuid: `${who}-${i}`,
        message: { content: `line ${i} of ${who}: ${'x'.repeat(i % 37)}` },
      }) + '\n';
  }
  return out;
}

/** Every file (not directory) under `dir`, relative; empty when `dir` does not exist. */
export async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      const full = path.join(d, e.name);
      if (e.isDirectory()) await walk(full);
      else out.push(path.relative(dir, full));
    }
  };
  await walk(dir);
  return out.sort();
}

/**
 * What each session's last capture held: the content digest's invariances, remembering and forgetting, a damaged
 * record counting as none, and pruning old records.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Context } from '../../src/context.js';
import {
  MAX_CAPTURED_PER_HARNESS,
  contentDigest,
  forgetCapture,
  lastCapture,
  pruneCaptures,
  rememberCapture,
} from '../../src/drain/captured.js';
import type { BundleFile } from '@blue-agent/contract/schema/index.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';

const file = (over: Partial<BundleFile> = {}): BundleFile => ({
  role: 'primary_transcript',
  path: 'files/0000-t.jsonl',
  native_path: 'k/s.jsonl',
  size: 10,
  sha256: 'a'.repeat(64),
  ...over,
});

describe('contentDigest', () => {
  const base = {
    compatibility_profile: 'claude-v2_0_12',
    files: [
      file(),
      file({ role: 'session_companion', path: 'files/0001-x', native_path: 'k/s/x', sha256: 'b'.repeat(64) }),
    ],
  };

  it('does not depend on the order of the files, their bundle names, or anything outside the files', () => {
    const reordered = {
      ...base,
      files: [...base.files].reverse().map((f, i) => ({ ...f, path: `files/000${i}-renamed` })),
    };
    expect(contentDigest(reordered)).toBe(contentDigest(base));
    expect(contentDigest({ ...base, captured_at_unix_ms: 5, title: 'other' } as typeof base)).toBe(contentDigest(base));
  });

  it("changes with the profile and with any file's role, native path, size or digest", () => {
    const d = contentDigest(base);
    expect(contentDigest({ ...base, compatibility_profile: 'claude-v1_0_85' })).not.toBe(d);
    for (const change of [
      { role: 'session_state' as const },
      { native_path: 'k/t.jsonl' },
      { size: 11 },
      { sha256: 'c'.repeat(64) },
    ]) {
      expect(contentDigest({ ...base, files: [file(change), base.files[1]!] })).not.toBe(d);
    }
    expect(contentDigest({ ...base, files: [base.files[0]!] })).not.toBe(d);
  });
});

describe('the capture records', () => {
  let t: TestHome;
  let now: number;
  let ctx: Context;
  beforeEach(async () => {
    t = await makeTestHome();
    now = 1_800_000_000_000;
    ctx = t.context({ clock: { now: () => now } });
  });
  afterEach(async () => {
    await t.cleanup();
  });

  it('remembers per harness and session, and forgets only the capture it is told of', async () => {
    await rememberCapture(ctx, { harness: 'claude', session_id: 's1', content_sha256: 'd1', record: 'r1' });
    expect(await lastCapture(ctx, 'claude', 's1')).toMatchObject({
      content_sha256: 'd1',
      record: 'r1',
      at_unix_ms: now,
    });
    expect(await lastCapture(ctx, 'codex', 's1')).toBeUndefined();
    expect(await lastCapture(ctx, 'claude', 's2')).toBeUndefined();

    await rememberCapture(ctx, { harness: 'claude', session_id: 's1', content_sha256: 'd2', record: 'r2' });
    await forgetCapture(ctx, 'claude', 's1', 'r1');
    expect((await lastCapture(ctx, 'claude', 's1'))?.record).toBe('r2');
    await forgetCapture(ctx, 'claude', 's1', 'r2');
    expect(await lastCapture(ctx, 'claude', 's1')).toBeUndefined();
  });

  it('a damaged or foreign record counts as none', async () => {
    await rememberCapture(ctx, { harness: 'claude', session_id: 's1', content_sha256: 'd1', record: 'r1' });
    const dir = path.join(ctx.paths.capturedDir, 'claude');
    const [name] = await readdir(dir);
    await writeFile(path.join(dir, name!), '{"format":"blue-agent-captured-v1","harness":"claude","session_id":"s1"');
    expect(await lastCapture(ctx, 'claude', 's1')).toBeUndefined();
    await writeFile(
      path.join(dir, name!),
      JSON.stringify({
        format: 'blue-agent-captured-v1',
        harness: 'claude',
        session_id: 'other',
        content_sha256: 'd1',
        record: 'r1',
      }),
    );
    expect(await lastCapture(ctx, 'claude', 's1')).toBeUndefined();
  });

  it('keeps at most the bound per harness, the oldest going first, leaving other harnesses and files', async () => {
    for (let i = 0; i < 5; i++)
      await rememberCapture(ctx, { harness: 'claude', session_id: `s${i}`, content_sha256: 'd', record: `r${i}` });
    // Oldest by modification time: s0 first, s1 next.
    const dir = path.join(ctx.paths.capturedDir, 'claude');
    for (const [i, id] of ['s0', 's1', 's2', 's3', 's4'].entries()) {
      const name = (await readdir(dir)).find((n) => n.startsWith(sha(id)))!;
      await utimes(path.join(dir, name), new Date(1_000_000 + i * 1000), new Date(1_000_000 + i * 1000));
    }
    await writeFile(path.join(dir, 'notes.txt'), 'kept');
    await rememberCapture(ctx, { harness: 'codex', session_id: 'c', content_sha256: 'd', record: 'r' });
    expect(await pruneCaptures(ctx, 'claude', 3)).toBe(2);
    expect(await lastCapture(ctx, 'claude', 's0')).toBeUndefined();
    expect(await lastCapture(ctx, 'claude', 's1')).toBeUndefined();
    for (const id of ['s2', 's3', 's4']) expect(await lastCapture(ctx, 'claude', id)).toBeDefined();
    expect(await lastCapture(ctx, 'codex', 'c')).toBeDefined();
    expect(await readdir(dir)).toContain('notes.txt');
    expect(await pruneCaptures(ctx, 'claude', 3)).toBe(0);
  });

  it('remembering past the bound prunes on the way', async () => {
    const dir = await mkdirP(ctx);
    for (let i = 0; i <= MAX_CAPTURED_PER_HARNESS; i++) {
      const file = path.join(dir, `${String(i).padStart(64, '0')}.json`);
      await writeFile(file, '{}');
      await utimes(file, new Date(1_000_000), new Date(1_000_000));
    }
    await rememberCapture(ctx, { harness: 'claude', session_id: 'fresh', content_sha256: 'd', record: 'r' });
    expect((await readdir(path.join(ctx.paths.capturedDir, 'claude'))).length).toBe(MAX_CAPTURED_PER_HARNESS);
    expect(await lastCapture(ctx, 'claude', 'fresh')).toBeDefined();
  });
});

function sha(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

async function mkdirP(ctx: Context): Promise<string> {
  const dir = path.join(ctx.paths.capturedDir, 'claude');
  await mkdir(dir, { recursive: true });
  return dir;
}

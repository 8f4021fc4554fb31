/**
 * State files are written whole: a temp file beside the target, fsynced and renamed over it. Through a link, the
 * link's target is written and the link kept. Writes to one file from one process land in call order.
 */
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { randomUuid, writeStateFile } from '../../../src/util/startup/fs-light.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-fs-light-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('writeStateFile', () => {
  it('creates its private folder and a 0600 file, and leaves no temp file', async () => {
    const file = path.join(dir, 'state', 'cache', 'documents.json');
    await writeStateFile(file, '{"a":1}');
    expect(await readFile(file, 'utf8')).toBe('{"a":1}');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(path.dirname(file))).mode & 0o777).toBe(0o700);
    expect(await readdir(path.dirname(file))).toEqual(['documents.json']);
  });

  it("writes a link's target and keeps the link", async () => {
    await mkdir(path.join(dir, 'real'));
    const real = path.join(dir, 'real', 'ledger.json');
    await writeFile(real, 'old');
    const link = path.join(dir, 'ledger.json');
    await symlink(real, link);
    await writeStateFile(link, 'new');
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    expect(await readFile(real, 'utf8')).toBe('new');
    expect(await readdir(path.join(dir, 'real'))).toEqual(['ledger.json']);
  });

  it('concurrent writes of one file land in call order, each whole', async () => {
    const file = path.join(dir, 'policy.json');
    const texts = Array.from({ length: 40 }, (_, i) => `${String(i).repeat(1000)}\n`);
    await Promise.all(texts.map((text) => writeStateFile(file, text)));
    expect(await readFile(file, 'utf8')).toBe(texts.at(-1));
    expect(await readdir(dir)).toEqual(['policy.json']);
  });

  it('a failed write is a typed error naming the file, and the old content stays', async () => {
    const file = path.join(dir, 'gone', 'x.json');
    await writeFile(path.join(dir, 'gone'), 'a file, not a folder');
    await expect(writeStateFile(file, 'new')).rejects.toMatchObject({ code: expect.any(String), file });
    expect(await readFile(path.join(dir, 'gone'), 'utf8')).toBe('a file, not a folder');
  });
});

describe('randomUuid', () => {
  it('gives version 4 UUIDs (RFC 9562 variant), every one different', () => {
    const ids = Array.from({ length: 2000 }, () => randomUuid());
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(ids.length);
    // Every hex digit outside the fixed bits takes many values: the bytes are random, not a counter or a constant.
    const positions = ids[0]!.replace(/-/g, '').length;
    for (let i = 0; i < positions; i++) {
      if (i === 12 || i === 16) continue;
      expect(new Set(ids.map((id) => id.replace(/-/g, '')[i])).size).toBeGreaterThan(8);
    }
  });

  it('falls back to node:crypto where the kernel source cannot be read, or ends early', () => {
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    const ids = [randomUuid('/nonexistent/urandom'), randomUuid('/nonexistent/urandom'), randomUuid('/dev/null')];
    for (const id of ids) expect(id).toMatch(uuid);
    expect(new Set(ids).size).toBe(3);
  });
});

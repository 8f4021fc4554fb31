import { execFileSync } from 'node:child_process';
import { link, lstat, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BlueError } from '../../src/errors.js';
import {
  checkFile,
  openChecked,
  readChecked,
  sha256Checked,
  type SafeReadIO,
  type SafeReadOptions,
} from '../../src/util/safe-read.js';

let dir: string;
const rule: SafeReadOptions = { code: 'ARTIFACT_INVALID', maxBytes: 1024 };

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-safe-read-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function refusal(fn: () => Promise<unknown>): Promise<BlueError> {
  try {
    await fn();
  } catch (error) {
    expect(error, String(error)).toBeInstanceOf(BlueError);
    return error as BlueError;
  }
  throw new Error('expected a refusal');
}

/** lstat as usual, then `between` runs before the open: a deterministic race between the check and the open. */
function racing(between: () => Promise<void>): SafeReadIO {
  return {
    lstat: async (file) => {
      const info = await lstat(file);
      await between();
      return info;
    },
    open: async (file, flags) => (await import('node:fs/promises')).open(file, flags),
  };
}

describe('safe-read', () => {
  it('reads a regular file with one link, whole, its head, its tail, and its digest', async () => {
    const file = path.join(dir, 'a.txt');
    await writeFile(file, 'hello world');
    expect((await readChecked(file, rule))!.toString()).toBe('hello world');
    expect((await readChecked(file, { ...rule, head: 5 }))!.toString()).toBe('hello');
    expect((await readChecked(file, { ...rule, tail: 5 }))!.toString()).toBe('world');
    expect(await sha256Checked(file, rule)).toBe('b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9');
    expect(await readChecked(path.join(dir, 'missing'), { ...rule, optional: true })).toBeUndefined();
  });

  it("refuses a hard link (another name for a file that may be anywhere), naming it, with caller's code", async () => {
    const secret = path.join(dir, 'id_rsa');
    await writeFile(secret, 'PRIVATE KEY');
    const linked = path.join(dir, 'tool-result.txt');
    await link(secret, linked);
    for (const read of [
      () => readChecked(linked, rule),
      () => sha256Checked(linked, rule),
      () => checkFile(linked, rule),
    ]) {
      const error = await refusal(read);
      expect(error.code).toBe('ARTIFACT_INVALID');
      expect(error.file).toBe(linked);
      expect(error.message).toBe(`${linked}: has 2 hard links (only a file with one name is read)`);
      expect(error.hint).toMatch(/hard links/);
    }
    expect((await refusal(() => readChecked(linked, { ...rule, code: 'RESTORE_UNSAFE' }))).code).toBe('RESTORE_UNSAFE');
    // A caller that made the second link itself says so.
    expect((await readChecked(linked, { ...rule, links: 2 }))!.toString()).toBe('PRIVATE KEY');
  });

  it('refuses a symbolic link, a FIFO (without blocking), a directory and a file over the cap', async () => {
    await writeFile(path.join(dir, 'target'), 'x');
    await symlink(path.join(dir, 'target'), path.join(dir, 'link'));
    expect((await refusal(() => readChecked(path.join(dir, 'link'), rule))).message).toMatch(/: is a symbolic link$/);
    execFileSync('mkfifo', [path.join(dir, 'fifo')]);
    expect((await refusal(() => readChecked(path.join(dir, 'fifo'), rule))).message).toMatch(
      /: is not a regular file \(a FIFO\)$/,
    );
    expect((await refusal(() => readChecked(dir, rule))).message).toMatch(/: is not a regular file \(a directory\)$/);
    await writeFile(path.join(dir, 'big'), Buffer.alloc(1025));
    expect((await refusal(() => readChecked(path.join(dir, 'big'), rule))).message).toMatch(
      /: is 1025 bytes, over the 1024-byte limit$/,
    );
  });

  it('catches a file swapped between the lstat and the open by the fstat of the open descriptor', async () => {
    const file = path.join(dir, 'transcript.jsonl');
    await writeFile(file, 'the session');
    const other = path.join(dir, 'other');
    await writeFile(other, 'something else');
    const error = await refusal(() => readChecked(file, { ...rule, io: racing(() => rename(other, file)) }));
    expect(error.message).toBe(`${file}: changed while it was being checked (another file is there now)`);
  });

  it('catches a hard link made between the lstat and the open', async () => {
    const file = path.join(dir, 'transcript.jsonl');
    await writeFile(file, 'the session');
    const error = await refusal(() =>
      readChecked(file, { ...rule, io: racing(() => link(file, path.join(dir, 'second-name'))) }),
    );
    expect(error.message).toMatch(/has 2 hard links/);
  });

  it('a FIFO swapped in between the lstat and the open neither blocks the open nor is read', async () => {
    const file = path.join(dir, 'transcript.jsonl');
    await writeFile(file, 'the session');
    const swap = async () => {
      await rm(file);
      execFileSync('mkfifo', [file]);
    };
    // No writer ever opens the FIFO: a blocking open would never return.
    const error = await refusal(() => readChecked(file, { ...rule, io: racing(swap) }));
    expect(error.message).toMatch(/: is not a regular file \(a FIFO\)$/);
  });

  it('a symbolic link swapped in between the lstat and the open is not followed', async () => {
    const file = path.join(dir, 'transcript.jsonl');
    await writeFile(file, 'the session');
    await writeFile(path.join(dir, 'secret'), 'secret');
    const swap = async () => {
      await rm(file);
      await symlink(path.join(dir, 'secret'), file);
    };
    const error = await refusal(() => openChecked(file, { ...rule, io: racing(swap) }));
    expect(error.message).toMatch(/: is a symbolic link$/);
  });

  it('refuses a file that is not the inode checked before', async () => {
    const file = path.join(dir, 'a');
    await writeFile(file, 'one');
    const before = await lstat(file);
    await writeFile(path.join(dir, 'b'), 'two');
    await rename(path.join(dir, 'b'), file);
    const error = await refusal(() => readChecked(file, { ...rule, expect: { dev: before.dev, ino: before.ino } }));
    expect(error.message).toMatch(/changed while it was being checked/);
  });
});

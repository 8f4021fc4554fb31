import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, open, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  missingParents,
  readBytesIfExists,
  readBytesIfExistsSync,
  removeEmptyDirs,
  resolveWriteTarget,
  writeBuffers,
} from '../../src/util/fs.js';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'blue-agent-fs-'));
});
afterEach(async () => rm(root, { recursive: true, force: true }));

describe('readBytesIfExists', () => {
  it('reads a regular file, through a link; nothing there (or a dangling link) is null', async () => {
    await writeFile(path.join(root, 'f'), 'abc');
    await symlink(path.join(root, 'f'), path.join(root, 'l'));
    await symlink(path.join(root, 'gone'), path.join(root, 'dangling'));
    expect((await readBytesIfExists(path.join(root, 'l')))!.toString()).toBe('abc');
    expect(readBytesIfExistsSync(path.join(root, 'f'))!.toString()).toBe('abc');
    expect(await readBytesIfExists(path.join(root, 'none'))).toBeNull();
    expect(await readBytesIfExists(path.join(root, 'dangling'))).toBeNull();
  });

  it('refuses a FIFO, a socket, a directory, a device and a link loop without blocking', async () => {
    execFileSync('mkfifo', [path.join(root, 'fifo')]);
    await mkdir(path.join(root, 'dir'));
    await symlink('/dev/null', path.join(root, 'null'));
    await symlink('loop', path.join(root, 'loop'));
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(path.join(root, 'sock'), resolve));
    try {
      const cases: Array<[string, RegExp]> = [
        ['fifo', /is a FIFO/],
        ['sock', /is a socket/],
        ['dir', /is a directory/],
        ['null', /is a symbolic link to a character device/],
        ['loop', /loop/],
      ];
      for (const [name, message] of cases) {
        await expect(readBytesIfExists(path.join(root, name))).rejects.toMatchObject({ code: 'UNSAFE_PATH', message });
        if (name !== 'sock')
          expect(() => readBytesIfExistsSync(path.join(root, name))).toThrow(
            expect.objectContaining({ code: 'UNSAFE_PATH' }),
          );
      }
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('refuses a file over the limit, one byte is enough', async () => {
    await writeFile(path.join(root, 'f'), 'x'.repeat(11));
    await expect(readBytesIfExists(path.join(root, 'f'), 10)).rejects.toMatchObject({
      code: 'FILE_TOO_LARGE',
      file: path.join(root, 'f'),
    });
    expect(() => readBytesIfExistsSync(path.join(root, 'f'), 10)).toThrow(
      expect.objectContaining({ code: 'FILE_TOO_LARGE' }),
    );
    expect((await readBytesIfExists(path.join(root, 'f'), 11))!.length).toBe(11);
  });
});

describe('resolveWriteTarget', () => {
  it('follows links to existing files and keeps missing names under an existing folder', async () => {
    await mkdir(path.join(root, 'real'));
    await symlink(path.join(root, 'real'), path.join(root, 'linkdir'));
    expect(await resolveWriteTarget(path.join(root, 'linkdir', 'a', 'b.json'))).toBe(
      path.join(root, 'real', 'a', 'b.json'),
    );
    expect(await missingParents(path.join(root, 'real', 'a', 'c', 'b.json'))).toEqual([
      path.join(root, 'real', 'a'),
      path.join(root, 'real', 'a', 'c'),
    ]);
  });

  it('refuses a dangling link, a dangling parent, a loop and a parent that is a file', async () => {
    await symlink(path.join(root, 'x', 'a', 'b'), path.join(root, 'dangling'));
    await symlink(path.join(root, 'y'), path.join(root, 'parent'));
    await symlink('self', path.join(root, 'self'));
    await writeFile(path.join(root, 'file'), '');
    const cases: Array<[string, RegExp]> = [
      [path.join(root, 'dangling'), /is a symbolic link to .*x\/a\/b, which does not exist/],
      [
        path.join(root, 'parent', 'deep', 'f.json'),
        /lies under .*parent, a symbolic link to .*y, which does not exist/,
      ],
      [path.join(root, 'self'), /loop/],
      [path.join(root, 'file', 'f.json'), /file is a regular file, not a folder/],
    ];
    for (const [file, message] of cases)
      await expect(resolveWriteTarget(file)).rejects.toMatchObject({ code: 'UNSAFE_PATH', message });
    expect((await readdir(root)).sort()).toEqual(['dangling', 'file', 'parent', 'self']);
  });

  it('removeEmptyDirs removes only empty folders, innermost first', async () => {
    await mkdir(path.join(root, 'a', 'b', 'c'), { recursive: true });
    await mkdir(path.join(root, 'k', 'l'), { recursive: true });
    await writeFile(path.join(root, 'k', 'keep'), '');
    await removeEmptyDirs([
      path.join(root, 'a'),
      path.join(root, 'a', 'b'),
      path.join(root, 'a', 'b', 'c'),
      path.join(root, 'k'),
      path.join(root, 'k', 'l'),
    ]);
    expect((await readdir(root)).sort()).toEqual(['k']);
    expect(await readdir(path.join(root, 'k'))).toEqual(['keep']);
  });
});

describe('writeBuffers', () => {
  const buffers = [Buffer.from('first-'), Buffer.from(''), Buffer.from('second-'), Buffer.from('third')];

  /** A handle that takes at most `perWritev` bytes in a writev and `perWrite` in a write, appending to `out`. */
  function shortHandle(perWritev: number, perWrite: number, out: Buffer[]) {
    return {
      writev: async (list: Buffer[]) => {
        const all = Buffer.concat(list).subarray(0, perWritev);
        out.push(all);
        return { bytesWritten: all.length, buffers: list };
      },
      write: async (buffer: Buffer, offset = 0, length = buffer.length - offset) => {
        const part = buffer.subarray(offset, offset + Math.min(length, perWrite));
        out.push(part);
        return { bytesWritten: part.length, buffer };
      },
    } as never;
  }

  it('writes every byte in order when writev and write take only part of what they are given', async () => {
    for (const [perWritev, perWrite] of [
      [0, 1],
      [3, 2],
      [6, 4],
      [13, 100],
      [18, 1],
      [100, 1],
    ] as const) {
      const out: Buffer[] = [];
      await writeBuffers(shortHandle(perWritev, perWrite, out), buffers);
      expect(Buffer.concat(out).toString()).toBe('first-second-third');
    }
  });

  it('fails instead of looping when the file system takes nothing', async () => {
    await expect(writeBuffers(shortHandle(2, 0, []), buffers)).rejects.toMatchObject({ code: 'IO_ERROR' });
  });

  it('appends to a real file at its position', async () => {
    const file = path.join(root, 'out');
    const handle = await open(file, 'w');
    try {
      await writeBuffers(handle, buffers);
      await writeBuffers(handle, []);
      await writeBuffers(handle, [Buffer.from('!')]);
    } finally {
      await handle.close();
    }
    expect(await readFile(file, 'utf8')).toBe('first-second-third!');
  });
});

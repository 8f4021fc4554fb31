import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { missingParents, readBytesIfExists, readBytesIfExistsSync, removeEmptyDirs, resolveWriteTarget } from '../../src/util/fs.js';

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
        if (name !== 'sock') expect(() => readBytesIfExistsSync(path.join(root, name))).toThrow(expect.objectContaining({ code: 'UNSAFE_PATH' }));
      }
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('refuses a file over the limit, one byte is enough', async () => {
    await writeFile(path.join(root, 'f'), 'x'.repeat(11));
    await expect(readBytesIfExists(path.join(root, 'f'), 10)).rejects.toMatchObject({ code: 'FILE_TOO_LARGE', file: path.join(root, 'f') });
    expect(() => readBytesIfExistsSync(path.join(root, 'f'), 10)).toThrow(expect.objectContaining({ code: 'FILE_TOO_LARGE' }));
    expect((await readBytesIfExists(path.join(root, 'f'), 11))!.length).toBe(11);
  });
});

describe('resolveWriteTarget', () => {
  it('follows links to existing files and keeps missing names under an existing folder', async () => {
    await mkdir(path.join(root, 'real'));
    await symlink(path.join(root, 'real'), path.join(root, 'linkdir'));
    expect(await resolveWriteTarget(path.join(root, 'linkdir', 'a', 'b.json'))).toBe(path.join(root, 'real', 'a', 'b.json'));
    expect(await missingParents(path.join(root, 'real', 'a', 'c', 'b.json'))).toEqual([path.join(root, 'real', 'a'), path.join(root, 'real', 'a', 'c')]);
  });

  it('refuses a dangling link, a dangling parent, a loop and a parent that is a file', async () => {
    await symlink(path.join(root, 'x', 'a', 'b'), path.join(root, 'dangling'));
    await symlink(path.join(root, 'y'), path.join(root, 'parent'));
    await symlink('self', path.join(root, 'self'));
    await writeFile(path.join(root, 'file'), '');
    const cases: Array<[string, RegExp]> = [
      [path.join(root, 'dangling'), /is a symbolic link to .*x\/a\/b, which does not exist/],
      [path.join(root, 'parent', 'deep', 'f.json'), /lies under .*parent, a symbolic link to .*y, which does not exist/],
      [path.join(root, 'self'), /loop/],
      [path.join(root, 'file', 'f.json'), /file is a regular file, not a folder/],
    ];
    for (const [file, message] of cases) await expect(resolveWriteTarget(file)).rejects.toMatchObject({ code: 'UNSAFE_PATH', message });
    expect((await readdir(root)).sort()).toEqual(['dangling', 'file', 'parent', 'self']);
  });

  it('removeEmptyDirs removes only empty folders, innermost first', async () => {
    await mkdir(path.join(root, 'a', 'b', 'c'), { recursive: true });
    await mkdir(path.join(root, 'k', 'l'), { recursive: true });
    await writeFile(path.join(root, 'k', 'keep'), '');
    await removeEmptyDirs([path.join(root, 'a'), path.join(root, 'a', 'b'), path.join(root, 'a', 'b', 'c'), path.join(root, 'k'), path.join(root, 'k', 'l')]);
    expect((await readdir(root)).sort()).toEqual(['k']);
    expect(await readdir(path.join(root, 'k'))).toEqual(['keep']);
  });
});

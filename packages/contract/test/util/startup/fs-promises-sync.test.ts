/**
 * The one-shot reconcile's node:fs/promises (src/util/startup/fs-promises-sync.ts) answers every call the code makes as
 * node:fs/promises does: the same values, the same errors, on file handles too; and it has every name the code imports.
 */
import * as real from 'node:fs/promises';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as shim from '../../../src/util/startup/fs-promises-sync.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-fs-sync-'));
});
afterEach(async () => rm(dir, { recursive: true, force: true }));

/** What a call settles to, comparable across the two modules: its value, or its error's code and message. */
async function outcome(call: () => Promise<unknown>): Promise<unknown> {
  try {
    const value = await call();
    if (value instanceof Object && 'isFile' in value && 'ino' in value) {
      const { mode, size, nlink, uid } = value as unknown as { mode: number; size: number; nlink: number; uid: number };
      return { stat: { mode, size, nlink, uid } };
    }
    return { value };
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    return { code: e.code, syscall: e.syscall, message: e.message };
  }
}

type Module = typeof real;

/** Calls made on a fresh copy of the same tree, each through both modules, in order. */
const CALLS: [string, (fs: Module, d: string) => Promise<unknown>][] = [
  ['writeFile', (fs, d) => fs.writeFile(path.join(d, 'a.txt'), 'alpha\n', { mode: 0o640 })],
  ['readFile utf8', (fs, d) => fs.readFile(path.join(d, 'a.txt'), 'utf8')],
  ['readFile bytes', (fs, d) => fs.readFile(path.join(d, 'a.txt'))],
  ['readFile missing', (fs, d) => fs.readFile(path.join(d, 'none'), 'utf8')],
  ['stat', (fs, d) => fs.stat(path.join(d, 'a.txt'))],
  ['lstat missing', (fs, d) => fs.lstat(path.join(d, 'none'))],
  ['mkdir recursive', (fs, d) => fs.mkdir(path.join(d, 'x', 'y'), { recursive: true, mode: 0o700 })],
  ['mkdir exists', (fs, d) => fs.mkdir(path.join(d, 'x'))],
  ['readdir', async (fs, d) => (await fs.readdir(d)).sort()],
  [
    'readdir withFileTypes',
    async (fs, d) => (await fs.readdir(d, { withFileTypes: true })).map((e) => [e.name, e.isDirectory()]).sort(),
  ],
  ['realpath', (fs, d) => fs.realpath(path.join(d, 'x', 'y', '..'))],
  ['realpath missing parent', (fs, d) => fs.realpath(path.join(d, 'none', 'y'))],
  [
    'realpath link loop',
    async (fs, d) => {
      await real.symlink('loop', path.join(d, 'loop')).catch(() => undefined);
      return fs.realpath(path.join(d, 'loop', 'y'));
    },
  ],
  ['readlink not a link', (fs, d) => fs.readlink(path.join(d, 'a.txt'))],
  ['access', (fs, d) => fs.access(path.join(d, 'none'))],
  ['link', (fs, d) => fs.link(path.join(d, 'a.txt'), path.join(d, 'b.txt'))],
  ['copyFile', (fs, d) => fs.copyFile(path.join(d, 'a.txt'), path.join(d, 'c.txt'))],
  ['chmod', (fs, d) => fs.chmod(path.join(d, 'c.txt'), 0o600)],
  ['utimes', (fs, d) => fs.utimes(path.join(d, 'c.txt'), 1_000_000, 2_000_000)],
  [
    'stat after',
    async (fs, d) => {
      const s = await fs.stat(path.join(d, 'c.txt'));
      return [s.mode, s.mtimeMs, s.nlink];
    },
  ],
  ['chown to self', (fs, d) => fs.chown(path.join(d, 'c.txt'), process.getuid!(), process.getgid!())],
  ['rename', (fs, d) => fs.rename(path.join(d, 'c.txt'), path.join(d, 'x', 'c.txt'))],
  ['unlink', (fs, d) => fs.unlink(path.join(d, 'b.txt'))],
  ['unlink missing', (fs, d) => fs.unlink(path.join(d, 'b.txt'))],
  ['rmdir not empty', (fs, d) => fs.rmdir(path.join(d, 'x'))],
  ['rm recursive', (fs, d) => fs.rm(path.join(d, 'x'), { recursive: true, force: true })],
  ['mkdtemp', async (fs, d) => path.basename(await fs.mkdtemp(path.join(d, 't-'))).length],
  ['open exclusive on an existing file', (fs, d) => fs.open(path.join(d, 'a.txt'), 'wx')],
];

describe('node:fs/promises made synchronous', () => {
  it('settles every call as node:fs/promises does', async () => {
    const run = async (fs: Module, name: string) => {
      const d = path.join(dir, name);
      await real.mkdir(d);
      const got: Record<string, unknown> = {};
      for (const [label, call] of CALLS) got[label] = await outcome(() => call(fs, d));
      return JSON.parse(JSON.stringify(got).replaceAll(d, '<dir>'));
    };
    expect(await run(shim as unknown as Module, 'sync')).toEqual(await run(real, 'async'));
  });

  it('gives file handles that read, write, sync and close as node:fs/promises handles do', async () => {
    const exercise = async (fs: Module, name: string) => {
      const file = path.join(dir, name);
      const out = await fs.open(file, 'w+', 0o600);
      const steps: unknown[] = [];
      steps.push((await out.write(Buffer.from('hello world'), 0, 11, 0)).bytesWritten);
      steps.push((await out.write('!', 11, 'utf8')).bytesWritten);
      await out.writeFile(' and more');
      await out.sync();
      await out.datasync();
      await out.chmod(0o640);
      const buffer = Buffer.alloc(5);
      steps.push((await out.read(buffer, 0, 5, 6)).bytesRead, buffer.toString());
      steps.push((await out.read(buffer, { position: 0, length: 3 })).bytesRead, buffer.toString());
      const whole = await out.read({ buffer: Buffer.alloc(64), position: 0 });
      steps.push(whole.buffer.subarray(0, whole.bytesRead).toString());
      steps.push((await out.stat()).size);
      await out.truncate(5);
      steps.push(await real.readFile(file, 'utf8'));
      await out.close();
      await out.close();
      const again = await fs.open(file, 'r');
      steps.push(await again.readFile('utf8'), await fs.readFile(again as never, 'utf8'));
      const chunks: Buffer[] = [];
      for await (const chunk of again.createReadStream({ start: 1 })) chunks.push(chunk as Buffer);
      steps.push(Buffer.concat(chunks).toString());
      await again.close();
      // Without a start, a stream reads on from where the descriptor is.
      const third = await fs.open(file, 'r');
      await third.read(Buffer.alloc(2), 0, 2, null);
      const rest: Buffer[] = [];
      for await (const chunk of third.createReadStream({ end: 3 })) rest.push(chunk as Buffer);
      steps.push(Buffer.concat(rest).toString());
      await third.close();
      return steps;
    };
    const sync = await exercise(shim as unknown as Module, 'sync.txt');
    expect(sync).toEqual(await exercise(real, 'async.txt'));
    expect(sync.slice(0, 4)).toEqual([11, 1, 5, 'oreld']);
  });

  it('reads a stream from a handle synchronously and leaves the descriptor to close()', async () => {
    await real.writeFile(path.join(dir, 'f'), 'abcdefghij');
    const handle = await shim.open(path.join(dir, 'f'), 'r');
    const chunks: string[] = [];
    for await (const chunk of handle.createReadStream({ start: 2, end: 6, highWaterMark: 2 }))
      chunks.push(String(chunk));
    expect(chunks.join('')).toBe('cdefg');
    const stream = handle.createReadStream();
    stream.destroy();
    await new Promise<void>((resolve) => stream.once('close', () => resolve()));
    await expect(handle.stat()).resolves.toBeDefined();
    await handle.close();
    expect(handle.fd).toBe(-1);
    await expect(handle.stat()).rejects.toMatchObject({ code: 'EBADF' });
    const late = handle.createReadStream();
    await expect(
      new Promise<void>((resolve, reject) =>
        late
          .on('error', reject)
          .on('end', () => resolve())
          .resume(),
      ),
    ).rejects.toMatchObject({ code: 'EBADF' });
  });

  it('has every name the code imports from node:fs/promises', async () => {
    const names = new Set<string>();
    const walk = async (d: string): Promise<void> => {
      for (const entry of await readdir(d, { withFileTypes: true })) {
        const file = path.join(d, entry.name);
        if (entry.isDirectory()) await walk(file);
        else if (file.endsWith('.ts')) {
          for (const m of (await readFile(file, 'utf8')).matchAll(
            /import\s*\{([^}]*)\}\s*from\s*'node:fs\/promises'/g,
          )) {
            for (const part of m[1]!.split(',')) {
              const name = part
                .trim()
                .replace(/^type\s+/, '')
                .split(/\s+as\s+/)[0]!;
              if (name !== '' && !part.trim().startsWith('type ')) names.add(name);
            }
          }
        }
      }
    };
    // The one-shot reconcile bundles the agent's sources and the contract's.
    for (const pkg of ['contract', 'agent'])
      await walk(path.join(import.meta.dirname, '..', '..', '..', '..', pkg, 'src'));
    expect(names.size).toBeGreaterThan(10);
    expect([...names].filter((name) => !(name in shim)).sort()).toEqual([]);
  });
});

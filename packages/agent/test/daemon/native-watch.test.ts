/**
 * The agent's native watches (fs.watch of folders): a file written in place or replaced by a rename, a file in a
 * folder that appears later, a folder removed and made again, sessions below a folder down to a depth, and the bound
 * on how many folders are watched. Real file events, waited for with a deadline; no timing is asserted.
 */
import { mkdtempSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { watchFiles, watchTree, type WatchHandle } from '../../src/daemon/native-watch.js';

const handles: WatchHandle[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const h of handles.splice(0)) await h.close();
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'blue-agent-watch-'));
  dirs.push(dir);
  return dir;
}

/** Waits (at most 5 s) until `seen()` holds. */
async function until(seen: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!seen()) {
    if (Date.now() > deadline) throw new Error(`no event: ${what}`);
    await sleep(10);
  }
}

describe('watchFiles', () => {
  it('reports a file written in place, replaced by a rename, removed, and no other file of its folder', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'settings.json');
    await writeFile(file, '{}');
    const events: string[] = [];
    const errors: unknown[] = [];
    handles.push(
      await watchFiles(
        [file],
        (f) => events.push(f),
        (e) => errors.push(e),
      ),
    );

    await writeFile(path.join(dir, 'other.json'), '{}');
    await writeFile(file, '{"a":1}');
    await until(() => events.length > 0, 'write in place');
    expect(new Set(events)).toEqual(new Set([file]));

    events.length = 0;
    await writeFile(path.join(dir, '.settings.json.tmp'), '{"b":2}');
    await rename(path.join(dir, '.settings.json.tmp'), file);
    await until(() => events.includes(file), 'replaced by a rename');

    events.length = 0;
    await rm(file);
    await until(() => events.includes(file), 'removed');
    expect(errors).toEqual([]);
  });

  it('watches a file whose folders do not exist yet, and its folder again after it was removed, remade', async () => {
    const root = tempDir();
    const dir = path.join(root, 'a', 'b');
    const file = path.join(dir, 'config.toml');
    const events: string[] = [];
    handles.push(
      await watchFiles(
        [file],
        (f) => events.push(f),
        () => undefined,
      ),
    );

    await mkdir(dir, { recursive: true });
    await sleep(50);
    await writeFile(file, 'x = 1');
    await until(() => events.includes(file), 'a file in a folder made after the watch');

    await rm(path.join(root, 'a'), { recursive: true });
    await until(() => events.length > 1, 'the folder removed');
    events.length = 0;
    await mkdir(dir, { recursive: true });
    await sleep(50);
    await writeFile(file, 'x = 2');
    await until(() => events.includes(file), 'a file in the folder made again');
  });

  it('keeps watching when the ancestor it watches for a missing folder is removed and made again', async () => {
    const root = tempDir();
    await mkdir(path.join(root, 'a'));
    const file = path.join(root, 'a', 'b', 'f.json');
    const events: string[] = [];
    // a/b is missing: a is watched for it.
    handles.push(
      await watchFiles(
        [file],
        (f) => events.push(f),
        () => undefined,
      ),
    );
    await rm(path.join(root, 'a'), { recursive: true });
    await sleep(100);
    await mkdir(path.join(root, 'a', 'b'), { recursive: true });
    await sleep(100);
    await writeFile(file, '{}');
    await until(() => events.includes(file), 'a file in the folder made after its ancestor was made again');
  });

  it('says nothing more once closed', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'f.json');
    const events: string[] = [];
    const handle = await watchFiles(
      [file],
      (f) => events.push(f),
      () => undefined,
    );
    await handle.close();
    await writeFile(file, '{}');
    await sleep(200);
    expect(events).toEqual([]);
  });
});

describe('watchTree', () => {
  it('reports changes down to the depth, in folders made later too, and none below it', async () => {
    const root = tempDir();
    await mkdir(path.join(root, '2026', '12'), { recursive: true });
    let count = 0;
    handles.push(
      await watchTree(
        root,
        2,
        () => count++,
        () => undefined,
      ),
    );

    await writeFile(path.join(root, '2026', '12', 'rollout-1.jsonl'), '{}\n');
    await until(() => count > 0, 'a session at the depth');

    await mkdir(path.join(root, '2027'));
    await sleep(50);
    await mkdir(path.join(root, '2027', '01'));
    await sleep(50);
    count = 0;
    await writeFile(path.join(root, '2027', '01', 'rollout-2.jsonl'), '{}\n');
    await until(() => count > 0, 'a session in folders made after the watch');

    await mkdir(path.join(root, '2027', '01', 'deeper'));
    await sleep(100);
    count = 0;
    await writeFile(path.join(root, '2027', '01', 'deeper', 'x.jsonl'), '{}\n');
    await sleep(200);
    expect(count).toBe(0);
  });

  it('watches at most maxFolders folders and says so once', async () => {
    const root = tempDir();
    for (let i = 0; i < 5; i++) await mkdir(path.join(root, `p${i}`));
    const errors: unknown[] = [];
    handles.push(
      await watchTree(
        root,
        1,
        () => undefined,
        (e) => errors.push(e),
        3,
      ),
    );
    expect(errors).toHaveLength(1);
    expect(String(errors[0])).toContain('more than 3 folders');
  });
});

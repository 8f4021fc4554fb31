/**
 * The native indexes a restore merges into, through the engine: handled as bytes (a session_index.jsonl line that is
 * not valid UTF-8 keeps every byte), and an index past the size cap is refused before it is read — each refusal with
 * nothing written anywhere. (kimi-cli's kimi.json, JSON that is refused rather than re-encoded when it is not valid
 * UTF-8, is tested in its harness's folder.)
 */
import { link, mkdir, open, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BlueError } from '@blue-agent/contract/errors.js';
import { applyRestore, prepareRestore } from '../../src/restore/index.js';
import type { TestHome } from '../../../../test/support/context.js';
import { fixtureBundle, shippedProfiles, snapshot, useRestoreHomes } from '../../../../test/support/restore-homes.js';

let source: TestHome;
let target: TestHome;
let destination: string;

useRestoreHomes('dest', (homes) => ({ source, target, destination } = homes));

async function refused(bundle: string): Promise<BlueError> {
  const prepared = await prepareRestore(target.ctx, {
    bundleFile: bundle,
    destination,
    profiles: await shippedProfiles(),
  });
  try {
    await applyRestore(target.ctx, prepared);
  } catch (error) {
    expect(error, String(error)).toBeInstanceOf(BlueError);
    return error as BlueError;
  } finally {
    await prepared.dispose();
  }
  throw new Error('expected the restore to be refused');
}

describe('Codex session_index.jsonl', () => {
  it('keeps every byte of lines that are not valid UTF-8 and appends the session line', async () => {
    const session = await fixtureBundle('codex', source, path.join(source.root, 'codex.bundle'));
    const index = path.join(target.home, '.codex', 'session_index.jsonl');
    await mkdir(path.dirname(index), { recursive: true });
    const before = Buffer.concat([
      Buffer.from('{"id":"x","thread_name":"caf'),
      Buffer.from([0xe9, 0xff]),
      Buffer.from('","updated_at":"1"}\n'),
    ]);
    await writeFile(index, before);
    const prepared = await prepareRestore(target.ctx, {
      bundleFile: session.bundle,
      destination,
      profiles: await shippedProfiles(),
    });
    const result = await applyRestore(target.ctx, prepared);
    await prepared.dispose();
    expect(result.merged).toEqual([index]);
    const after = await readFile(index);
    expect(after.subarray(0, before.length).equals(before)).toBe(true);
    expect(JSON.parse(after.subarray(before.length).toString('utf8'))).toMatchObject({
      id: session.sessionId,
      thread_name: session.result.manifest.title,
    });
  });

  it('an index past 64 MiB is refused before it is read, with nothing written', async () => {
    const session = await fixtureBundle('codex', source, path.join(source.root, 'codex.bundle'));
    const index = path.join(target.home, '.codex', 'session_index.jsonl');
    await mkdir(path.dirname(index), { recursive: true });
    const handle = await open(index, 'w');
    await handle.truncate(64 * 1024 * 1024 + 1); // sparse: no disk used
    await handle.close();
    const before = await snapshot(path.join(target.home, '.codex'), ['session_index.jsonl']);
    const error = await refused(session.bundle);
    expect(error.code).toBe('RESTORE_CONFLICT');
    expect(error.message).toMatch(/larger than 64 MiB/);
    expect(await snapshot(path.join(target.home, '.codex'), ['session_index.jsonl'])).toEqual(before);
  });
});

describe('a hard-linked index', () => {
  it('is refused (RESTORE_UNSAFE, naming it) before it is read or merged, with nothing written anywhere', async () => {
    const session = await fixtureBundle('codex', source, path.join(source.root, 'codex.bundle'));
    const index = path.join(target.home, '.codex', 'session_index.jsonl');
    await mkdir(path.dirname(index), { recursive: true });
    // Another name for a file elsewhere: merging would copy its bytes into the harness's index.
    const elsewhere = path.join(target.root, 'elsewhere.jsonl');
    await writeFile(elsewhere, '{"id":"x","thread_name":"not the index","updated_at":"1"}\n');
    await link(elsewhere, index);
    const before = await snapshot(target.home);
    const error = await refused(session.bundle);
    expect(error.code).toBe('RESTORE_UNSAFE');
    expect(error.file).toBe(index);
    expect(error.message).toBe(`${index}: has 2 hard links (only a file with one name is read)`);
    expect(await snapshot(target.home)).toEqual(before);
  });
});

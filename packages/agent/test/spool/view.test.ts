/**
 * The spool's read-only view: what readers (status, doctor, the agent, a drain's report) see, without the view ever
 * creating or changing a file; and the rule that nothing outside src/spool/ spells the spool's folder names.
 */
import { readdirSync } from 'node:fs';
import { chmod, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Spool, SpoolView, type RecordState } from '../../src/spool/index.js';
import { rejected } from '../../../../test/support/errors.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';
import { scanSource, scanSources, type ScannedSource } from '../../../../test/support/source-scan.js';

let t: TestHome;
beforeEach(async () => {
  t = await makeTestHome();
});
afterEach(async () => {
  await t.cleanup();
});

const payload = { session_id: 'sess-1', cwd: '/work/project' };

/** Every file and folder under `dir`, relative to it. */
function tree(dir: string): string[] {
  try {
    return readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();
  } catch {
    return [];
  }
}

describe('SpoolView', () => {
  it('reads a spool that does not exist as empty, and creates nothing', async () => {
    const view = new SpoolView(t.ctx.paths);
    expect(await view.exists()).toBe(false);
    expect(await view.complete()).toBe(false);
    expect(await view.hasWork()).toBe(false);
    expect(await view.listByName()).toEqual([]);
    expect(await view.idsIn('intake')).toEqual([]);
    expect(await view.peek('intake', '000000000-0000000000')).toBeUndefined();
    expect(tree(t.home).some((p) => p.includes('blue-agent'))).toBe(false);
  });

  it('names every folder that opening the spool creates, tmp as the transient one', async () => {
    const spool = await Spool.open(t.ctx.paths);
    const view = new SpoolView(t.ctx.paths);
    expect(
      view
        .folders()
        .map((f) => path.basename(f.path))
        .sort(),
    ).toEqual(readdirSync(spool.root).sort());
    expect(
      view
        .folders()
        .filter((f) => f.transient)
        .map((f) => path.basename(f.path)),
    ).toEqual(['tmp']);
    expect(await view.complete()).toBe(true);
    expect(view.intakeDir()).toBe(view.folders()[0]!.path);
  });

  it('peeks at a record as it is on disk, and finds work in intake', async () => {
    const spool = await Spool.open(t.ctx.paths);
    const record = await spool.enqueueIntake({
      harness: 'claude',
      profile: 'claude-v2_0_12',
      payload,
      createdAtUnixMs: Date.now(),
    });
    const view = new SpoolView(t.ctx.paths);
    const before = tree(spool.root);
    expect(await view.hasWork()).toBe(true);
    expect(await view.peek('intake', record.id)).toEqual(record);
    expect(await view.peek('ready', record.id)).toBeUndefined();
    expect(await view.listRecords()).toMatchObject([
      { id: record.id, state: 'intake', harness: 'claude', session_id: 'sess-1' },
    ]);
    await writeFile(path.join(view.intakeDir(), `${record.id}.json`), 'null');
    expect(await view.peek('intake', record.id)).toBeUndefined();
    expect(tree(spool.root)).toEqual(before);
  });

  it('lists an unsafe or incomplete spool by file name, never creating the missing folders', async () => {
    const spool = await Spool.open(t.ctx.paths);
    const record = await spool.enqueueIntake({
      harness: 'claude',
      profile: 'claude-v2_0_12',
      payload,
      createdAtUnixMs: Date.now(),
    });
    await chmod(spool.root, 0o777);
    const view = new SpoolView(t.ctx.paths);
    expect((await rejected(view.listRecords())).code).toBe('SPOOL_UNSAFE');
    expect(await view.listByName()).toMatchObject([{ id: record.id, state: 'intake', harness: '?' }]);
    await chmod(spool.root, 0o700);
    await rm(view.folders().at(-1)!.path, { recursive: true });
    expect(await view.complete()).toBe(false);
    expect(await view.listByName()).toHaveLength(1);
    expect(await view.complete()).toBe(false);
  });

  it("counts a claim, even a dead process's, as work", async () => {
    const spool = await Spool.open(t.ctx.paths);
    await spool.enqueueIntake({ harness: 'claude', profile: 'claude-v2_0_12', payload, createdAtUnixMs: Date.now() });
    const claim = await spool.claimNext('intake');
    expect(claim).toBeDefined();
    const view = new SpoolView(t.ctx.paths);
    expect(await view.idsIn('intake')).toEqual([]);
    expect(await view.hasWork()).toBe(true);
    expect(await view.listByName()).toMatchObject([{ id: claim!.id, state: 'building' }]);
    await spool.release(claim!);
  });

  it('counts a capture the sh hook handed over (its own drain may never have run) as work', async () => {
    const spool = await Spool.open(t.ctx.paths);
    const view = new SpoolView(t.ctx.paths);
    const inbox = view.folders().find((f) => path.basename(f.path) === 'inbox')!.path;
    // A temp file of a hook still writing is not work yet.
    await writeFile(path.join(inbox, '.hook.4242.tmp'), 'blue-agent-hook-v1\n');
    expect(await view.hasWork()).toBe(false);
    await writeFile(path.join(inbox, '4242-0.hook'), 'blue-agent-hook-v1\n\n{}');
    expect(await view.hasWork()).toBe(true);
    expect(await view.handedOver()).toBe(1);
    expect(spool.root).toBe(view.root);
  });
});

/** The spool's folder names, from the view itself, and the record states (its interface's words for records). */
const FOLDERS = new Set(
  new SpoolView({ stateDir: '/s', spoolDir: '/s/spool' }).folders().map((f) => path.basename(f.path)),
);
const STATES = new Set<string>(['intake', 'building', 'ready', 'uploading', 'failed'] satisfies RecordState[]);

/** Where `source` builds a path into the spool or lists its folder names, as `file:line what`. */
function spoolFolderSpellings(source: ScannedSource): string[] {
  const found: string[] = [];
  for (const call of source.pathCalls) {
    if (
      call.args.some((a) =>
        a.literal !== undefined ? FOLDERS.has(a.literal) && a.literal !== 'tmp' : /spoolDir|spool\.root/.test(a.code),
      )
    ) {
      found.push(`${source.file}:${call.line} joins ${call.args.map((a) => a.code).join(', ')}`);
    }
  }
  for (const literal of source.literals) {
    if (literal.kind === 'template' && /(spoolDir|spool\.root)\}\//.test(literal.text))
      found.push(`${source.file}:${literal.line} builds \`${literal.text}\``);
  }
  // Record states are words of the spool's interface ('intake' | 'ready'): a list of them is no folder list, but one
  // that also names a folder that is no state is.
  for (const array of source.stringArrays) {
    const folders = array.items.filter((item) => FOLDERS.has(item));
    if (folders.length >= 2 && folders.some((f) => !STATES.has(f)))
      found.push(`${source.file}:${array.line} lists ${array.items.join(', ')}`);
  }
  for (const literal of source.literals) {
    if (literal.kind === 'string' && FOLDERS.has(literal.text) && !STATES.has(literal.text) && literal.text !== 'tmp') {
      found.push(`${source.file}:${literal.line} names ${JSON.stringify(literal.text)}`);
    }
  }
  return found;
}

describe('the spool layout', () => {
  it('is spelled in src/spool/ alone: no other module joins a path into the spool or lists its folders', () => {
    const found = scanSources()
      .filter((s) => !s.file.startsWith('packages/agent/src/spool/'))
      .flatMap(spoolFolderSpellings);
    expect(found).toEqual([]);
  });

  it('the scan finds the spellings it refuses', () => {
    const source = scanSource(
      'src/x.ts',
      [
        "const a = path.join(root, 'intake', `${id}.json`);",
        "for (const dir of ['intake', 'ready', 'bundles']) await readdir(path.join(ctx.paths.spoolDir, dir));",
        'const b = `${ctx.paths.spoolDir}/failed`;',
        "const c = path.join(home, 'tmp'); const d: 'intake' | 'ready' = 'ready'; const e = ['ready', 'failed'];",
      ].join('\n'),
    );
    expect(spoolFolderSpellings(source)).toEqual([
      'src/x.ts:1 joins root, "intake", "${id}.json"',
      'src/x.ts:2 joins ctx.paths.spoolDir, dir',
      'src/x.ts:3 builds `${ctx.paths.spoolDir}/failed`',
      'src/x.ts:2 lists intake, ready, bundles',
      'src/x.ts:2 names "bundles"',
    ]);
  });
});

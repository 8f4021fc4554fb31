/**
 * The restore engine on recorded sessions: a bundle captured in one HOME is restored into another HOME under a
 * different destination, identical and different local copies are handled, hostile bundles and unsafe folders are
 * refused with nothing written anywhere, and a disk that fills at any step leaves nothing behind.
 */
import {
  chmod,
  link,
  mkdir,
  readdir,
  readFile,
  realpath,
  rm,
  stat,
  symlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BlueError } from '@blue-agent/contract/errors.js';
import type { LockWorld } from '../../src/lock/liveness.js';
import { claudeProjectKey } from '../../src/harnesses/claude/session.js';
import {
  applyRestore,
  prepareRestore,
  realRestoreIO,
  recoverRestores,
  type PreparedRestore,
  type RestoreIO,
} from '../../src/restore/index.js';
import type { TestHome } from '../../../../test/support/context.js';
import {
  errnoError,
  fixtureBundle,
  shippedProfiles,
  snapshot,
  type FixtureSession,
  useRestoreHomes,
} from '../../../../test/support/restore-homes.js';
import { HARNESS_RIGS, rigFor } from '../../../../test/support/rigs.js';
import type { HarnessName } from '@blue-agent/contract/schema/index.js';

let source: TestHome;
let target: TestHome;
let destination: string;

useRestoreHomes('my_project', (homes) => ({ source, target, destination } = homes));

async function prepare(bundle: string, dest = destination, home = target): Promise<PreparedRestore> {
  return prepareRestore(home.ctx, { bundleFile: bundle, destination: dest, profiles: await shippedProfiles() });
}

async function blueError(fn: () => Promise<unknown>): Promise<BlueError> {
  try {
    await fn();
  } catch (error) {
    expect(error, String(error)).toBeInstanceOf(BlueError);
    return error as BlueError;
  }
  throw new Error('expected a BlueError');
}

/** Source files of a fixture session by native path, as captured. */
async function sourceFiles(harness: HarnessName, session: FixtureSession): Promise<Map<string, Buffer>> {
  const base = rigFor(harness).fixture.sessionsIn!(source.home);
  const out = new Map<string, Buffer>();
  for (const f of session.result.manifest.files) {
    out.set(f.native_path!, await readFile(path.join(base, ...f.native_path!.split('/'))));
  }
  return out;
}

async function journals(): Promise<string[]> {
  return readdir(path.join(target.env.BLUE_AGENT_HOME!, 'restores')).catch(() => []);
}

/** Restore staging folders or files left anywhere in the HOME (three levels deep: where harnesses keep their files). */
async function stagingLeft(home: TestHome): Promise<string[]> {
  const found: string[] = [];
  const visit = async (dir: string, depth: number): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      const full = path.join(dir, entry.name);
      if (entry.name.includes('.blue-agent-restore')) found.push(full);
      else if (entry.isDirectory() && depth < 3) await visit(full, depth + 1);
    }
  };
  await visit(home.home, 1);
  return found;
}

/** The native indexes of every harness, as a machine that used them has them (each rig's fixture.seedIndexes). */
async function seedIndexes(home: string): Promise<void> {
  for (const rig of HARNESS_RIGS) await rig.fixture.seedIndexes?.(home);
}

describe('Claude Code', () => {
  it("places the transcript and its companion folder under the destination's project key, fresh mtimes", async () => {
    const session = await fixtureBundle('claude', source, path.join(source.root, 'claude.bundle'));
    const prepared = await prepare(session.bundle);
    expect(prepared).toMatchObject({
      harness: 'claude',
      sessionId: session.sessionId,
      collision: 'none',
      resumeArgv: ['claude', '--resume', session.sessionId],
    });
    expect(prepared.staging.startsWith(path.join(target.home, '.blue-agent-restore-'))).toBe(true);
    // Preparing wrote nothing but the staging folder.
    expect(await snapshot(path.join(target.home, '.claude'))).toEqual({});

    const started = Date.now();
    const result = await applyRestore(target.ctx, prepared);
    await prepared.dispose();
    const key = claudeProjectKey(destination);
    expect(key).toBe(destination.replace(/[^A-Za-z0-9]/g, '-'));
    const projects = path.join(target.home, '.claude', 'projects');
    expect(result.placed.sort()).toEqual(
      session.result.manifest.files.map((f) => path.join(projects, key, ...f.native_path!.split('/').slice(1))).sort(),
    );
    for (const [rel, bytes] of await sourceFiles('claude', session)) {
      const placed = path.join(projects, key, ...rel.split('/').slice(1));
      expect(await readFile(placed)).toEqual(bytes);
      expect((await stat(placed)).mtimeMs).toBeGreaterThanOrEqual(started - 2000);
    }
    expect(await journals()).toEqual([]);
    expect(await stagingLeft(target)).toEqual([]);
    expect(result.resumeArgv).toEqual(['claude', '--resume', session.sessionId]);
  });

  it('an identical local copy is nothing to write; a different one is refused and never overwritten', async () => {
    const session = await fixtureBundle('claude', source, path.join(source.root, 'claude.bundle'));
    const first = await prepare(session.bundle);
    await applyRestore(target.ctx, first);
    const transcript = path.join(
      target.home,
      '.claude',
      'projects',
      claudeProjectKey(destination),
      `${session.sessionId}.jsonl`,
    );
    const old = new Date('2001-01-01T00:00:00Z');
    await utimes(transcript, old, old);
    const before = await snapshot(target.home);

    const again = await prepare(session.bundle);
    expect(again.collision).toBe('identical');
    expect(again.summary.create).toEqual([]);
    const result = await applyRestore(target.ctx, again);
    expect(result.placed).toEqual([]);
    expect(result.skipped.length).toBe(session.result.manifest.files.length);
    expect((await stat(transcript)).mtime.getTime()).toBe(old.getTime());
    expect(await snapshot(target.home)).toEqual(before);

    await writeFile(
      transcript,
      `${await readFile(transcript, 'utf8')}{"type":"user","message":{"role":"user","content":"local turn"}}\n`,
    );
    const changed = await snapshot(target.home);
    const different = await prepare(session.bundle);
    expect(different.collision).toBe('different');
    expect(different.summary.conflicts[0]!.path).toBe(transcript);
    const error = await blueError(() => applyRestore(target.ctx, different));
    expect(error.code).toBe('RESTORE_CONFLICT');
    expect(error.hint).toMatch(/never overwrites/);
    await different.dispose();
    expect(await snapshot(target.home)).toEqual(changed);
  });

  it('the session already in another project folder is a conflict, same bytes too: no second copy made', async () => {
    const session = await fixtureBundle('claude', source, path.join(source.root, 'claude.bundle'));
    const first = path.join(target.root, 'elsewhere', 'first_place');
    await mkdir(first);
    const resolvedFirst = await realpath(first);
    await applyRestore(target.ctx, await prepare(session.bundle, resolvedFirst));
    const existing = path.join(
      target.home,
      '.claude',
      'projects',
      claudeProjectKey(resolvedFirst),
      `${session.sessionId}.jsonl`,
    );
    const before = await snapshot(target.home);

    // Restored again where it is: the same files, nothing to write.
    const here = await prepare(session.bundle, resolvedFirst);
    expect(here.collision).toBe('identical');
    await here.dispose();

    // Into another directory: Claude Code would find two files for one id.
    const prepared = await prepare(session.bundle);
    expect(prepared.collision).toBe('different');
    expect(prepared.summary.conflicts).toEqual([
      {
        path: existing,
        why: expect.stringContaining('another project folder'),
        hint: expect.stringContaining(`move or delete ${existing}`),
      },
    ]);
    const error = await blueError(() => applyRestore(target.ctx, prepared));
    expect(error).toMatchObject({
      code: 'RESTORE_CONFLICT',
      file: existing,
      message:
        `this machine already has claude session ${session.sessionId}: ${existing}: a copy in another ` +
        `project folder; Claude Code finds a session by its id in every project folder, so a second copy would ` +
        `make \`claude --resume ${session.sessionId}\` ambiguous`,
    });
    expect(error.hint).toContain(`claude --resume ${session.sessionId}`);
    await prepared.dispose();
    expect(await snapshot(target.home)).toEqual(before);
  });

  it('a copy that appears in another project folder between preflight and apply is found under the lock', async () => {
    const session = await fixtureBundle('claude', source, path.join(source.root, 'claude.bundle'));
    const prepared = await prepare(session.bundle);
    expect(prepared.collision).toBe('none');
    const copy = path.join(target.home, '.claude', 'projects', '-somewhere-else', `${session.sessionId}.jsonl`);
    await mkdir(path.dirname(copy), { recursive: true });
    await writeFile(copy, 'a copy\n');
    const before = await snapshot(path.join(target.home, '.claude'));
    expect(await blueError(() => applyRestore(target.ctx, prepared))).toMatchObject({
      code: 'RESTORE_CONFLICT',
      file: copy,
    });
    await prepared.dispose();
    expect(await snapshot(path.join(target.home, '.claude'))).toEqual(before);
  });

  it('a local copy that is a hard link (or a symbolic link) is refused before it is read, and left as is', async () => {
    const session = await fixtureBundle('claude', source, path.join(source.root, 'claude.bundle'));
    await applyRestore(target.ctx, await prepare(session.bundle));
    const transcript = path.join(
      target.home,
      '.claude',
      'projects',
      claudeProjectKey(destination),
      `${session.sessionId}.jsonl`,
    );
    const second = path.join(target.root, 'second-name.jsonl');
    await link(transcript, second);
    const before = await snapshot(target.home);
    const error = await blueError(() => prepare(session.bundle));
    expect(error).toMatchObject({
      code: 'RESTORE_UNSAFE',
      file: transcript,
      message: `${transcript}: has 2 hard links (only a file with one name is read)`,
    });
    expect(await snapshot(target.home)).toEqual(before);

    await rm(transcript);
    await symlink(second, transcript);
    expect(await blueError(() => prepare(session.bundle))).toMatchObject({
      code: 'RESTORE_UNSAFE',
      file: transcript,
      message: expect.stringMatching(/symbolic link/),
    });
  });

  it(
    'a companion that appears with other content between preflight and apply is a conflict, and what was placed ' +
      'goes',
    async () => {
      const session = await fixtureBundle('claude', source, path.join(source.root, 'claude.bundle'));
      const before = await snapshot(target.home);
      const prepared = await prepare(session.bundle);
      const companion = prepared.summary.create.find((p) => p.includes(`${session.sessionId}${path.sep}`))!;
      await mkdir(path.dirname(companion), { recursive: true });
      await writeFile(companion, 'someone else\n');
      const error = await blueError(() => applyRestore(target.ctx, prepared));
      expect(error.code).toBe('RESTORE_CONFLICT');
      expect(await readFile(companion, 'utf8')).toBe('someone else\n');
      await rm(path.join(target.home, '.claude'), { recursive: true });
      await prepared.dispose();
      expect(await snapshot(target.home)).toEqual(before);
    },
  );

  it('refuses a symlinked project folder below the session root, writing nothing anywhere', async () => {
    const session = await fixtureBundle('claude', source, path.join(source.root, 'claude.bundle'));
    const outside = path.join(target.root, 'outside');
    await mkdir(outside);
    const projects = path.join(target.home, '.claude', 'projects');
    await mkdir(projects, { recursive: true });
    await symlink(outside, path.join(projects, claudeProjectKey(destination)));
    const before = await snapshot(target.root);
    const error = await blueError(() => prepare(session.bundle));
    expect(error.code).toBe('RESTORE_UNSAFE');
    expect(error.message).toContain('symbolic link');
    expect(await snapshot(target.root)).toEqual(before);
  });

  it('a symlinked session root (a dotfiles checkout) is followed, as capture does', async () => {
    const session = await fixtureBundle('claude', source, path.join(source.root, 'claude.bundle'));
    const dotfiles = path.join(target.root, 'dotfiles', 'claude');
    await mkdir(dotfiles, { recursive: true });
    await symlink(dotfiles, path.join(target.home, '.claude'));
    const prepared = await prepare(session.bundle);
    await applyRestore(target.ctx, prepared);
    expect(await readdir(path.join(dotfiles, 'projects', claudeProjectKey(destination)))).toContain(
      `${session.sessionId}.jsonl`,
    );
  });

  it('a destination that does not exist, or vanished after the preflight, is refused, nothing written', async () => {
    const session = await fixtureBundle('claude', source, path.join(source.root, 'claude.bundle'));
    const before = await snapshot(target.home);
    const missing = await blueError(() => prepare(session.bundle, path.join(target.root, 'nowhere')));
    expect(missing.code).toBe('DESTINATION_INVALID');
    expect(await snapshot(target.home)).toEqual(before);

    const prepared = await prepare(session.bundle);
    await rm(destination, { recursive: true });
    const vanished = await blueError(() => applyRestore(target.ctx, prepared));
    expect(vanished.code).toBe('DESTINATION_INVALID');
    await prepared.dispose();
    expect(await snapshot(target.home)).toEqual(before);
  });
});

describe('Codex', () => {
  it('places the rollout in the dated folder of its session_meta, adds its thread to session_index.jsonl', async () => {
    const session = await fixtureBundle('codex', source, path.join(source.root, 'codex.bundle'));
    const codexHome = path.join(target.home, '.codex');
    await mkdir(codexHome, { recursive: true });
    const index = path.join(codexHome, 'session_index.jsonl');
    const otherLines =
      '{"id":"other-1","thread_name":"Theirs","updated_at":"2026-01-01T00:00:00Z"}\n' +
      '{"id":"other-2","thread_name":"No newline","updated_at":"2026-01-02T00:00:00Z"}';
    await writeFile(index, otherLines);
    await chmod(index, 0o640);
    const prepared = await prepare(session.bundle);
    expect(prepared.summary.indexes).toEqual([index]);
    const result = await applyRestore(target.ctx, prepared);
    const rollout = path.join(
      codexHome,
      'sessions',
      '2026',
      '11',
      '30',
      `rollout-2026-11-30T16-33-24-${session.sessionId}.jsonl`,
    );
    expect(result.placed).toEqual([rollout]);
    expect(result.merged).toEqual([index]);
    expect(result.resumeArgv).toEqual(['codex', 'resume', session.sessionId]);
    const text = await readFile(index, 'utf8');
    expect(text.startsWith(`${otherLines}\n`)).toBe(true);
    const added = JSON.parse(text.trimEnd().split('\n').at(-1)!) as Record<string, unknown>;
    expect(added).toMatchObject({ id: session.sessionId, thread_name: session.result.manifest.title });
    expect((await stat(index)).mode & 0o777).toBe(0o640);

    // Again: identical rollout, index already names it -> nothing written.
    const before = await snapshot(target.home);
    const again = await prepare(session.bundle);
    expect(again.collision).toBe('identical');
    expect((await applyRestore(target.ctx, again)).merged).toEqual([]);
    expect(await snapshot(target.home)).toEqual(before);
  });

  it(
    'a machine in another time zone names the rollout by its local time, as Codex does, and finds its own copy ' +
      'there',
    async () => {
      const session = await fixtureBundle('codex', source, path.join(source.root, 'codex.bundle'));
      // Chatham in summer, +13:45: the session started at 16:33:24.929 UTC, 06:18:24 on the next day there.
      const chatham = target.context({ clock: { now: () => Date.now(), utcOffsetMinutes: () => 825 } });
      const prepared = await prepareRestore(chatham, {
        bundleFile: session.bundle,
        destination,
        profiles: await shippedProfiles(),
      });
      const rollout = path.join(
        target.home,
        '.codex',
        'sessions',
        '2026',
        '12',
        '01',
        `rollout-2026-12-01T06-18-24-${session.sessionId}.jsonl`,
      );
      expect(prepared.summary.create).toEqual([rollout]);
      expect((await applyRestore(chatham, prepared)).placed).toEqual([rollout]);
      await prepared.dispose();

      // Restored again on that machine: its own file, nothing to write and no second name.
      const before = await snapshot(target.home);
      const again = await prepareRestore(chatham, {
        bundleFile: session.bundle,
        destination,
        profiles: await shippedProfiles(),
      });
      expect(again).toMatchObject({ collision: 'identical', summary: { create: [], identical: [rollout] } });
      expect(again.plan.aliases).toEqual([]);
      expect((await applyRestore(chatham, again)).placed).toEqual([]);
      await again.dispose();
      expect(await snapshot(target.home)).toEqual(before);
    },
  );

  it('the same session in another date folder is the same session: identical skipped, different refused', async () => {
    const session = await fixtureBundle('codex', source, path.join(source.root, 'codex.bundle'));
    const local = path.join(
      target.home,
      '.codex',
      'sessions',
      '2026',
      '11',
      '29',
      `rollout-2026-11-29T23-59-59-${session.sessionId}.jsonl`,
    );
    await mkdir(path.dirname(local), { recursive: true });
    const sourceRollout = (await sourceFiles('codex', session)).values().next().value as Buffer;
    await writeFile(local, sourceRollout);
    const identical = await prepare(session.bundle);
    expect(identical.collision).toBe('identical');
    expect(identical.summary.create).toEqual([]);
    await identical.dispose();

    await writeFile(local, Buffer.concat([sourceRollout, Buffer.from('{"type":"event_msg","payload":{}}\n')]));
    const different = await prepare(session.bundle);
    expect(different.collision).toBe('different');
    expect(different.summary.conflicts[0]!.why).toContain(local);
    await different.dispose();
  });
});

/** Counts every effect and fails the Nth with `code`. */
function faultyIO(failAt: number, code: string): RestoreIO & { calls: number } {
  const io = {
    calls: 0,
    async step(name: string, file: string) {
      io.calls++;
      if (io.calls === failAt) throw errnoError(code, name, file);
    },
  };
  return Object.assign(io, {
    mkdir: async (dir: string, mode: number) => (await io.step('mkdir', dir), realRestoreIO.mkdir(dir, mode)),
    link: async (a: string, b: string) => (await io.step('link', b), realRestoreIO.link(a, b)),
    rename: async (a: string, b: string) => (await io.step('rename', b), realRestoreIO.rename(a, b)),
    write: async (h: Parameters<RestoreIO['write']>[0], d: Uint8Array) => (
      await io.step('write', 'fd'), realRestoreIO.write(h, d)
    ),
    copyFile: async (a: string, b: string) => (await io.step('copyfile', b), realRestoreIO.copyFile(a, b)),
    utimes: async (f: string, a: Date, m: Date) => (await io.step('utime', f), realRestoreIO.utimes(f, a, m)),
  });
}

describe('a disk that fills up', () => {
  // Every harness whose fixture is laid out on a disk (its rig's fixture.install).
  for (const harness of HARNESS_RIGS.filter((r) => r.fixture.install !== undefined).map((r) => r.name)) {
    it(`${harness}: ENOSPC at every step leaves the machine exactly as it was`, async () => {
      const session = await fixtureBundle(harness, source, path.join(source.root, `${harness}.bundle`));
      // A fixed clock: the merged index lines carry the time.
      target.ctx = target.context({ clock: { now: () => 1_800_000_000_000 } });
      // Existing indexes, so the merges (backup, temp, rename) are on the path too.
      await seedIndexes(target.home);
      const before = await snapshot(target.home);

      const counting = faultyIO(0, 'ENOSPC');
      const probe = await prepare(session.bundle);
      await applyRestore(target.ctx, probe, { io: counting });
      const total = counting.calls;
      expect(total).toBeGreaterThan(3);
      const complete = await snapshot(target.home);
      // Back to the machine before the restore: nothing but the indexes (the agent's state is outside this HOME).
      for (const name of await readdir(target.home))
        await rm(path.join(target.home, name), { recursive: true, force: true });
      await seedIndexes(target.home);
      expect(await snapshot(target.home)).toEqual(before);

      for (let n = 1; n <= total; n++) {
        const prepared = await prepare(session.bundle);
        const error = await blueError(() => applyRestore(target.ctx, prepared, { io: faultyIO(n, 'ENOSPC') }));
        expect(error.code, `step ${n}: ${error.message}`).toBe('RESTORE_NO_SPACE');
        expect(error.hint).toMatch(/Free some space/);
        await prepared.dispose();
        expect(await snapshot(target.home), `after ENOSPC at step ${n} of ${total}`).toEqual(before);
        expect(await journals()).toEqual([]);
      }
      // EIO is a failure too, with the same guarantee.
      const prepared = await prepare(session.bundle);
      const eio = await blueError(() =>
        applyRestore(target.ctx, prepared, { io: faultyIO(Math.ceil(total / 2), 'EIO') }),
      );
      expect(eio.code).toBe('RESTORE_FAILED');
      await prepared.dispose();
      expect(await snapshot(target.home)).toEqual(before);

      // And then the restore goes through.
      const last = await prepare(session.bundle);
      await applyRestore(target.ctx, last);
      expect(await snapshot(target.home)).toEqual(complete);
      expect(await recoverRestores(target.ctx)).toEqual({ rolledBack: [], completed: [] });
    }, 60_000);
  }
});

describe('the staging folder', () => {
  it('dispose removes it; a prepare abandoned by a dead process is swept by recoverRestores', async () => {
    const session = await fixtureBundle('claude', source, path.join(source.root, 'claude.bundle'));
    const before = await snapshot(target.home);
    const prepared = await prepare(session.bundle);
    expect(await stagingLeft(target)).toEqual([prepared.staging]);
    // Live in this process: recovery leaves it alone.
    await recoverRestores(target.ctx);
    expect(await stagingLeft(target)).toEqual([prepared.staging]);
    await prepared.dispose();
    await prepared.dispose();
    expect(await snapshot(target.home)).toEqual(before);

    const abandoned = await prepare(session.bundle);
    await writeFile(
      path.join(abandoned.staging, 'owner.json'),
      JSON.stringify({ pid: 2 ** 22 + 7, host: (await import('node:os')).hostname(), started_at_unix_ms: Date.now() }),
    );
    await recoverRestores(target.ctx);
    expect(await stagingLeft(target)).toEqual([]);
    expect(await snapshot(target.home)).toEqual(before);
  });
});

describe('recoverRestores', () => {
  it('leaves the journal of a restore whose process still runs, and rolls back one whose process is gone', async () => {
    const session = await fixtureBundle('claude', source, path.join(source.root, 'claude.bundle'));
    const before = await snapshot(target.home);
    const prepared = await prepare(session.bundle);
    const target0 = prepared.summary.create[0]!;
    // A restore that got as far as one placement, by a process that is still alive (in the injected world).
    const { hostname } = await import('node:os');
    const LIVE = 4_000_123;
    const world: LockWorld = {
      host: hostname(),
      pid: process.pid,
      bootAt: Date.now() - 3_600_000,
      probe: (pid) => (pid === LIVE ? 'alive' : 'gone'),
      procStart: () => undefined,
      startedAt: () => undefined,
    };
    const journal = {
      format: 'blue-agent-restore-journal-v1',
      id: '0123456789abcdef',
      pid: LIVE,
      host: hostname(),
      started_at_unix_ms: Date.now(),
      harness: 'claude',
      session_id: session.sessionId,
      state: 'placing',
      staging: prepared.staging,
      root: prepared.plan.root,
      dirs: [path.join(target.home, '.claude'), path.join(target.home, '.claude', 'projects'), path.dirname(target0)],
      targets: prepared.plan.placements.map((p) => ({
        path: p.to,
        staged: p.from,
        sha256: p.sha256,
        size: p.size,
        temp: `${p.to}.tmp`,
      })),
      indexes: [],
    };
    const restores = path.join(target.env.BLUE_AGENT_HOME!, 'restores');
    await mkdir(restores, { recursive: true });
    await writeFile(path.join(restores, `${journal.id}.json`), JSON.stringify(journal));
    await mkdir(path.dirname(target0), { recursive: true });
    await link(prepared.plan.placements.find((p) => p.to === target0)!.from, target0);

    expect(await recoverRestores(target.ctx, { world })).toEqual({ rolledBack: [], completed: [] });
    expect(await readFile(target0)).toBeTruthy();

    await writeFile(path.join(restores, `${journal.id}.json`), JSON.stringify({ ...journal, pid: 2 ** 22 + 11 }));
    expect(await recoverRestores(target.ctx, { world })).toEqual({ rolledBack: [journal.id], completed: [] });
    expect(await snapshot(target.home)).toEqual(before);
    expect(await journals()).toEqual([]);
  });
});

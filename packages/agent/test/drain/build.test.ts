/**
 * The drain's build stage (`blue-agent drain`): from intake records to verified bundles, the outcome of every kind of
 * failure, concurrent drains, the `drain` and `spool list` output, and `bundle create` sharing the same assembly.
 */
import { execFileSync } from 'node:child_process';
import { link, mkdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { verifyBundle } from '@blue-agent/contract/bundle/index.js';
import { pickRemote, stripCredentials } from '../../src/drain/repository.js';
import { buildFromRecord, drain, MAX_DRAIN_PASSES, SETTLE_MS, type BuildFunction } from '../../src/drain/index.js';
import { drainCommand } from '../../src/cli/drain.js';
import { readLastDrain } from '../../src/daemon/state.js';
import { spoolListCommand } from '../../src/cli/spool.js';
import { bufferOutput, stateLayout, type Context } from '../../src/context.js';
import { main } from '../../src/cli/main.js';
import { loadProfiles } from '@blue-agent/contract/profiles/index.js';
import { MAX_ATTEMPTS, RETRY_DELAYS_MS, Spool, type SpoolRecord } from '../../src/spool/index.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';
import {
  canMountTmpfs,
  claudeSession,
  CLAUDE_PROFILE,
  mountTmpfs,
  readJson,
  runCli,
  spoolFiles,
  type ClaudeSession,
} from '../../../../test/support/cli-process.js';

let t: TestHome;
let stateDir: string;
let claudeDir: string;
let cwd: string;
let now: number;
let ctx: Context;

beforeEach(async () => {
  t = await makeTestHome();
  stateDir = t.env.BLUE_AGENT_HOME!;
  claudeDir = path.join(t.home, '.claude');
  cwd = path.join(t.home, 'work', 'shop');
  await mkdir(cwd, { recursive: true });
  now = Date.now();
  ctx = t.context({ clock: { now: () => now } });
});
afterEach(async () => {
  await t.cleanup();
});

let enqueued = 0;
/** Enqueues like the hook did a minute ago; later calls get later times, so records build in call order. */
async function enqueue(
  session: { payload: SpoolRecord['payload'] },
  profile = CLAUDE_PROFILE,
  harness = 'claude',
): Promise<SpoolRecord> {
  const spool = await Spool.open(stateLayout(stateDir));
  return spool.enqueueIntake({
    harness,
    profile,
    payload: session.payload,
    createdAtUnixMs: now - 60_000 + ++enqueued,
  });
}

async function session(
  id: string,
  prompt = `Refactor the checkout flow (${id})`,
  extra: { padBytes?: number } = {},
): Promise<ClaudeSession> {
  return claudeSession(claudeDir, { id, cwd, prompt, ...extra });
}

function recordIn(state: string, id: string): SpoolRecord {
  return readJson<SpoolRecord>(path.join(stateDir, 'spool', state, `${id}.json`));
}

describe('building', () => {
  it('turns a Claude session into a ready bundle that verifies, with title, repository and capture time', async () => {
    execFileSync('git', ['init', '-q', cwd]);
    execFileSync('git', [
      '-C',
      cwd,
      'remote',
      'add',
      'origin',
      'https://someone:ghp_token123@github.com/acme/shop.git',
    ]);
    const s = await session('0e2c1a4e-7b1f-4c55-9a51-2b4d7a4d8e10', 'Add a coupon field to the checkout page');
    const record = await enqueue(s);

    const report = await drain(ctx);
    expect(report.built.map((b) => b.id)).toEqual([record.id]);
    expect(report).toMatchObject({ failed: [], retried: [], left: 0 });
    expect(spoolFiles(stateDir)).toMatchObject({
      intake: [],
      building: [],
      ready: [`${record.id}.json`],
      bundles: [`${record.id}.bundle`],
      tmp: [],
    });

    const ready = recordIn('ready', record.id);
    const bundleFile = path.join(stateDir, 'spool', 'bundles', `${record.id}.bundle`);
    const verified = await verifyBundle(bundleFile, { profiles: await loadProfiles(ctx.paths.profilesDir) });
    expect(ready.bundle).toMatchObject({ size: verified.size, sha256: verified.sha256 });
    expect((await stat(bundleFile)).size).toBe(verified.size);
    expect(verified.manifest).toMatchObject({
      harness: 'claude',
      compatibility_profile: CLAUDE_PROFILE,
      native_session_id: s.id,
      captured_at_unix_ms: record.created_at_unix_ms,
      cwd,
      repository: { root: cwd, remote: 'https://github.com/acme/shop.git' },
      title: 'Add a coupon field to the checkout page',
    });
    expect(verified.manifest.files.map((f) => f.role).sort()).toEqual([
      'primary_transcript',
      'session_companion',
      'session_companion',
      'session_companion',
    ]);
    expect(JSON.stringify(verified.manifest)).not.toContain('ghp_token123');
  });

  it('leaves out the repository outside of one', async () => {
    const record = await enqueue(await session('no-repo-0001'));
    await drain(ctx);
    const verified = await verifyBundle(path.join(stateDir, 'spool', 'bundles', `${record.id}.bundle`), {
      profiles: await loadProfiles(ctx.paths.profilesDir),
    });
    expect(verified.manifest.repository).toBeUndefined();
    expect(verified.manifest.cwd).toBe(cwd);
  });

  it('waits for a fresh capture to settle before building it', async () => {
    const spool = await Spool.open(stateLayout(stateDir));
    const now = Date.now();
    const ctx = t.context({ clock: { now: () => now } });
    // Captured just now, 400 ms ago, and long ago: each waits what is left of SETTLE_MS, the old one not at all.
    const ages = [0, 400, 60_000];
    for (const [i, age] of ages.entries()) {
      const s = await session(`settle-000${i}`);
      await spool.enqueueIntake({
        harness: 'claude',
        profile: CLAUDE_PROFILE,
        payload: s.payload,
        createdAtUnixMs: now - age,
      });
    }
    const events: string[] = [];
    const waits: number[] = [];
    const build: BuildFunction = async (...args) => (
      events.push(`build ${args[1].payload.session_id}`), buildFromRecord(...args)
    );
    const report = await drain(ctx, { build, wait: async (ms) => (waits.push(ms), events.push(`wait ${ms}`)) });
    expect(report.built).toHaveLength(3);
    expect(waits.sort((a, b) => a - b)).toEqual([SETTLE_MS - 400, SETTLE_MS]);
    // Each wait comes before the build of its record.
    for (const [i, age] of ages.entries()) {
      const built = events.indexOf(`build settle-000${i}`);
      expect(built).toBeGreaterThanOrEqual(0);
      if (age < SETTLE_MS) expect(events[built - 1]).toBe(`wait ${SETTLE_MS - age}`);
    }
  });
});

describe('failures', () => {
  it('a session that must not be captured is failed at once, with the reason', async () => {
    await session('someone-else');
    const outside = path.join(t.root, 'elsewhere', 'stolen.jsonl');
    await mkdir(path.dirname(outside), { recursive: true });
    await writeFile(outside, '{}\n');
    const record = await enqueue({ payload: { session_id: 'stolen', cwd, transcript_path: outside } });
    const report = await drain(ctx);
    expect(report.failed).toMatchObject([{ id: record.id, code: 'ARTIFACT_INVALID' }]);
    expect(report.failed[0]!.reason).toContain('outside');
    const failed = recordIn('failed', record.id);
    expect(failed).toMatchObject({ attempts: 1, last_error: { code: 'ARTIFACT_INVALID' } });
    expect(spoolFiles(stateDir)).toMatchObject({ intake: [], building: [], bundles: [], tmp: [] });
  });

  it('a missing transcript is failed with the path it looked for', async () => {
    await session('someone-else');
    const record = await enqueue({ payload: { session_id: 'gone-0001', cwd } });
    const report = await drain(ctx);
    expect(report.failed[0]).toMatchObject({ id: record.id, code: 'ARTIFACT_INVALID' });
    expect(recordIn('failed', record.id).last_error!.message).toMatch(/no transcript of session gone-0001/);
  });

  it('a profile this install does not know is failed with PROFILE_UNKNOWN', async () => {
    const record = await enqueue(await session('old-profile'), 'claude-v0_0_1');
    const report = await drain(ctx);
    expect(report.failed[0]).toMatchObject({ id: record.id, code: 'PROFILE_UNKNOWN' });
  });

  it('a transient error goes back to intake with a delay, and is failed after the last attempt', async () => {
    const record = await enqueue(await session('flaky-0001'));
    let calls = 0;
    const build: BuildFunction = async (_c, _r, outFile) => {
      calls++;
      await writeFile(outFile, 'half a bundle');
      throw new Error(`EIO: i/o error (${calls})`);
    };
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const report = await drain(ctx, { build });
      if (attempt < MAX_ATTEMPTS) {
        expect(report.retried, `attempt ${attempt}`).toMatchObject([{ id: record.id, code: 'INTERNAL' }]);
        const waiting = recordIn('intake', record.id);
        expect(waiting).toMatchObject({
          attempts: attempt,
          last_error: { message: expect.stringContaining(`(${attempt})`) },
        });
        // Not retried before its time, even by another drain.
        expect((await drain(ctx, { build })).retried).toEqual([]);
        now = waiting.next_attempt_at_unix_ms!;
      } else {
        expect(report.failed).toMatchObject([{ id: record.id }]);
      }
      expect(spoolFiles(stateDir).tmp).toEqual([]);
    }
    expect(calls).toBe(MAX_ATTEMPTS);
    expect(recordIn('failed', record.id)).toMatchObject({
      attempts: MAX_ATTEMPTS,
      last_error: { message: expect.stringContaining(`after ${MAX_ATTEMPTS} attempts`) },
    });
    expect(RETRY_DELAYS_MS.length).toBeGreaterThan(0);
  });

  it('a full disk while building removes the partial bundle, keeps the record as it was in intake, stops', async () => {
    const first = await enqueue(await session('disk-0001'));
    const second = await enqueue(await session('disk-0002'));
    const build: BuildFunction = async (_c, _r, outFile) => {
      await writeFile(outFile, Buffer.alloc(4096));
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    };
    const report = await drain(ctx, { build });
    expect(report.stopped).toMatchObject({ code: 'SPOOL_FULL' });
    expect(report.retried.map((r) => r.id)).toEqual([first.id]);
    expect(report.left).toBe(2);
    expect(recordIn('intake', first.id)).toMatchObject({ attempts: 0, last_error: { code: 'SPOOL_FULL' } });
    expect(recordIn('intake', first.id).next_attempt_at_unix_ms).toBeUndefined();
    expect(recordIn('intake', second.id).last_error).toBeUndefined();
    expect(spoolFiles(stateDir)).toMatchObject({ building: [], tmp: [], bundles: [], failed: [] });
    // Room again: both build.
    expect((await drain(ctx)).built.map((b) => b.id)).toEqual([first.id, second.id]);
  });

  it('a damaged intake record is failed and the others still build', async () => {
    const good = await enqueue(await session('good-0001'));
    const badId = '000000001-0000000000';
    await writeFile(path.join(stateDir, 'spool', 'intake', `${badId}.json`), 'not json', { mode: 0o600 });
    const report = await drain(ctx);
    expect(report.failed).toMatchObject([{ id: badId, code: 'SPOOL_RECORD_DAMAGED' }]);
    expect(report.built.map((b) => b.id)).toEqual([good.id]);
  });
});

describe('on a real full filesystem', () => {
  it('keeps the record in intake and leaves no partial bundle', async (test) => {
    if (!(await canMountTmpfs(t.root))) test.skip('mounting a tmpfs needs root on Linux');
    const disk = path.join(t.root, 'disk');
    const unmount = await mountTmpfs(disk, '512k');
    try {
      const env = { BLUE_AGENT_HOME: path.join(disk, 'state') };
      const c = t.context({ env });
      // Random bytes do not compress: a 2 MiB companion file cannot fit in 512 KiB.
      const s = await session('big-0001');
      await writeFile(
        path.join(s.companionDir, 'tool-results', 'toolu_big.bin'),
        (await import('node:crypto')).randomBytes(2 * 1024 * 1024),
      );
      const spool = await Spool.open(stateLayout(env.BLUE_AGENT_HOME));
      const record = await spool.enqueueIntake({
        harness: 'claude',
        profile: CLAUDE_PROFILE,
        payload: s.payload,
        createdAtUnixMs: Date.now() - 60_000,
      });
      const report = await drain(c);
      expect(report.stopped?.code, JSON.stringify(report)).toBe('SPOOL_FULL');
      const files = spoolFiles(env.BLUE_AGENT_HOME);
      expect(files).toMatchObject({ intake: [`${record.id}.json`], building: [], bundles: [], tmp: [], failed: [] });
      await rm(path.join(s.companionDir, 'tool-results', 'toolu_big.bin'));
      expect((await drain(c)).built.map((b) => b.id)).toEqual([record.id]);
    } finally {
      unmount();
    }
  });
});

describe('concurrency', () => {
  it('two drains at once build every record exactly once', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 12; i++)
      ids.push(
        (await enqueue(await session(`conc-${String(i).padStart(4, '0')}`, `Task ${i}`, { padBytes: 64 * 1024 }))).id,
      );
    const [a, b] = await Promise.all([
      runCli(['drain', '--json'], { env: t.env }),
      runCli(['drain', '--json'], { env: t.env }),
    ]);
    const ra = JSON.parse(a.stdout) as { built: { id: string }[] };
    const rb = JSON.parse(b.stdout) as { built: { id: string }[] };
    const built = [...ra.built, ...rb.built].map((x) => x.id);
    expect(built.sort()).toEqual([...ids].sort());
    expect(new Set(built).size).toBe(ids.length);
    expect(spoolFiles(stateDir)).toMatchObject({
      intake: [],
      building: [],
      tmp: [],
      ready: ids.map((id) => `${id}.json`).sort(),
    });
    // Both took part (neither just found an empty spool), which is what makes this a test of the claims.
    expect(ra.built.length + rb.built.length).toBe(12);
  });

  it('two captures of one unchanged session built by two drains at once make one bundle (a double hook)', async () => {
    const s = await session('twice-0001', 'Fired twice');
    const records = [await enqueue(s), await enqueue(s)];
    // Both builds run to the commit together: each holds its bundle before either looks at the last capture.
    let arrived = 0;
    let release!: () => void;
    const together = new Promise<void>((resolve) => (release = resolve));
    const build: BuildFunction = async (c, record, outFile, profiles, repositories) => {
      const result = await buildFromRecord(c, record, outFile, profiles, repositories);
      if (++arrived === 2) release();
      await together;
      return result;
    };
    const [a, b] = await Promise.all([drain(ctx, { build, once: true }), drain(ctx, { build, once: true })]);
    expect(arrived).toBe(2);
    expect([...a.built, ...b.built]).toHaveLength(1);
    expect([...a.unchanged, ...b.unchanged]).toHaveLength(1);
    expect(spoolFiles(stateDir).ready).toHaveLength(1);
    expect(records.map((r) => r.id)).toContain([...a.built, ...b.built][0]!.id);
  });
});

describe('passes', () => {
  it('builds a capture that arrives while it runs; with once, that capture waits for the next drain', async () => {
    const first = await enqueue(await session('pass-0001'));
    let late = await session('pass-0002');
    let lateId: string | undefined;
    // The second session ends while the first one is being built.
    const build: BuildFunction = async (c, record, outFile, profiles, repositories) => {
      if (lateId === undefined) lateId = (await enqueue(late)).id;
      return buildFromRecord(c, record, outFile, profiles, repositories);
    };
    const once = await drain(ctx, { build, once: true });
    expect(once.built.map((b) => b.id)).toEqual([first.id]);
    expect(once.left).toBe(1);
    expect(recordIn('intake', lateId!).attempts).toBe(0);

    const waiting = lateId!;
    lateId = undefined;
    // Another session this time: the same one again would hold nothing new (see 'unchanged content').
    late = await session('pass-0004');
    const third = await enqueue(await session('pass-0003'));
    const report = await drain(ctx, { build });
    // The record --once left and the third in the first pass; the one that arrived meanwhile in a second pass.
    expect(report.built.map((b) => b.id)).toEqual([waiting, third.id, lateId]);
    expect(report.left).toBe(0);
  });

  it('a drain passes at most MAX_DRAIN_PASSES times while captures keep arriving', async () => {
    await enqueue(await session('storm-0000'));
    let n = 0;
    const build: BuildFunction = async (c, record, outFile, profiles, repositories) => {
      n++;
      await enqueue(await session(`storm-${String(n).padStart(4, '0')}`));
      return buildFromRecord(c, record, outFile, profiles, repositories);
    };
    const report = await drain(ctx, { build });
    expect(report.built).toHaveLength(MAX_DRAIN_PASSES);
    expect(report.left).toBe(1);
  });

  it('asks git once per directory in a drain, however many sessions ran there', async () => {
    execFileSync('git', ['init', '-q', cwd]);
    for (let i = 0; i < 4; i++) await enqueue(await session(`git-${String(i).padStart(4, '0')}`));
    const gitCalls: string[][] = [];
    const counting: Context = {
      ...ctx,
      run: (command, args, options) => {
        if (command === 'git') gitCalls.push([...args]);
        return ctx.run(command, args, options);
      },
    };
    const report = await drain(counting);
    expect(report.built).toHaveLength(4);
    expect(report.built.every((b) => b.size > 0)).toBe(true);
    // rev-parse and config, once each, not once per session.
    expect(gitCalls.map((a) => a.at(2))).toEqual(['rev-parse', 'config']);
  });
});

describe('output', () => {
  it('drain --json reports built, failed and left; spool list shows every record', async () => {
    const good = await enqueue(await session('out-0001', 'Write the release notes'));
    const bad = await enqueue({ payload: { session_id: 'out-missing', cwd } });
    const out = bufferOutput();
    const code = await drainCommand(t.context({ stdout: out, clock: { now: () => now } }), { json: true });
    const report = JSON.parse(out.text()) as {
      ok: boolean;
      built: { id: string; size: number }[];
      failed: { id: string; reason: string }[];
      left: number;
    };
    expect(code).toBe(1);
    expect(report).toMatchObject({ ok: false, built: [{ id: good.id }], failed: [{ id: bad.id }], left: 0 });
    // The outcome is kept for `status`.
    expect(await readLastDrain(ctx)).toEqual({
      finished_at_unix_ms: now,
      ok: false,
      built: 1,
      uploaded: 0,
      failed: 1,
      retried: 0,
      left: 0,
      left_ready: 1,
      waiting: 0,
      notes: [expect.stringContaining('no Control API is configured')],
    });

    const list = bufferOutput();
    await spoolListCommand(t.context({ stdout: list }), { json: true });
    const listed = JSON.parse(list.text()) as { records: Record<string, unknown>[] };
    expect(listed.records).toMatchObject([
      {
        id: good.id,
        state: 'ready',
        harness: 'claude',
        profile: CLAUDE_PROFILE,
        session_id: 'out-0001',
        size: report.built[0]!.size,
        attempts: 0,
        last_error: null,
      },
      {
        id: bad.id,
        state: 'failed',
        session_id: 'out-missing',
        size: null,
        attempts: 1,
        last_error: expect.stringContaining('no transcript'),
      },
    ]);
    expect(listed.records[0]!.created_at).toBe(new Date(good.created_at_unix_ms).toISOString());

    const human = bufferOutput();
    await spoolListCommand(t.context({ stdout: human }), {});
    const lines = human.text().trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+STATE\s+HARNESS\s+PROFILE\s+SESSION\s+SIZE\s+ATTEMPTS\s+CREATED\s+LAST ERROR$/);
    expect(lines[1]).toMatch(
      new RegExp(
        `^${good.id}\\s+ready\\s+claude\\s+${CLAUDE_PROFILE}\\s+out-0001\\s+` +
          `${report.built[0]!.size}\\s+0\\s+\\d{4}-\\d\\d-\\d\\dT`,
      ),
    );
    expect(lines[2]).toMatch(new RegExp(`^${bad.id}\\s+failed\\s+claude .*no transcript of session out-missing`));
  });

  it('spool list through the CLI, and an empty spool', async () => {
    const empty = await runCli(['spool', 'list'], { env: t.env });
    expect(empty.code).toBe(0);
    expect(empty.stdout).toMatch(/^The spool \(.*\) is empty\.\n$/);
    await enqueue(await session('cli-0001'));
    const json = await runCli(['spool', 'list', '--json'], { env: t.env });
    expect(JSON.parse(json.stdout).records).toMatchObject([{ state: 'intake', session_id: 'cli-0001' }]);
  });
});

describe('bundle create', () => {
  it('builds the same bundle as the worker, from the session on this machine', async () => {
    const s = await session('create-0001', 'Explain the failing test');
    const out = path.join(t.root, 'out.bundle');
    const stdout = bufferOutput();
    const code = await main(
      [
        'bundle',
        'create',
        '--harness',
        'claude',
        '--session',
        s.id,
        '--cwd',
        cwd,
        '--profile',
        CLAUDE_PROFILE,
        '--out',
        out,
        '--json',
      ],
      t.context({ stdout }),
    );
    expect(code, stdout.text()).toBe(0);
    const result = JSON.parse(stdout.text()) as {
      file: string;
      sha256: string;
      manifest: { title: string; native_session_id: string };
    };
    expect(result).toMatchObject({
      file: out,
      manifest: { title: 'Explain the failing test', native_session_id: s.id },
    });
    const verified = await verifyBundle(out, { profiles: await loadProfiles(t.ctx.paths.profilesDir) });
    expect(verified.sha256).toBe(result.sha256);
  });

  it('finds the profile from the installed version when none is given', async () => {
    const bin = path.join(t.root, 'bin');
    await mkdir(bin, { recursive: true });
    await writeFile(path.join(bin, 'claude'), "#!/bin/sh\necho '2.1.197 (Claude Code)'\n", { mode: 0o755 });
    const s = await session('create-0002');
    const out = path.join(t.root, 'out2.bundle');
    const result = await runCli(
      ['bundle', 'create', '--harness', 'claude', '--session', s.id, '--transcript', s.transcript, '--out', out],
      {
        env: { ...t.env, PATH: `${bin}:${t.env.PATH}` },
      },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`wrote ${out}`);
    expect(result.stdout).toContain(`(${CLAUDE_PROFILE})`);
  });

  it('refuses a hard-linked transcript, naming it, and writes no bundle', async () => {
    const s = await session('create-0003');
    await link(s.transcript, path.join(t.root, 'second-name.jsonl'));
    const out = path.join(t.root, 'linked.bundle');
    const result = await runCli(
      [
        'bundle',
        'create',
        '--harness',
        'claude',
        '--session',
        s.id,
        '--transcript',
        s.transcript,
        '--out',
        out,
        '--profile',
        CLAUDE_PROFILE,
        '--json',
      ],
      { env: t.env },
    );
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toMatchObject({
      ok: false,
      error: {
        code: 'ARTIFACT_INVALID',
        file: s.transcript,
        message: `${s.transcript}: has 2 hard links (only a file with one name is read)`,
      },
    });
    await expect(stat(out)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('refuses a bad session id as a usage error', async () => {
    const result = await runCli(
      [
        'bundle',
        'create',
        '--harness',
        'claude',
        '--session',
        '../x',
        '--out',
        path.join(t.root, 'x.bundle'),
        '--profile',
        CLAUDE_PROFILE,
      ],
      { env: t.env },
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--session may only hold');
  });
});

describe('repository remote', () => {
  it.each([
    ['https://user:ghp_secret@github.com/acme/shop.git', 'https://github.com/acme/shop.git'],
    ['https://ghp_secret@github.com/acme/shop.git?x=1#frag', 'https://github.com/acme/shop.git'],
    ['ssh://git:pw@host.example/acme/shop.git', 'ssh://git@host.example/acme/shop.git'],
    ['git@github.com:acme/shop.git', 'git@github.com:acme/shop.git'],
    ['oauth2:glpat-secret@gitlab.com:acme/shop.git', 'gitlab.com:acme/shop.git'],
    ['/srv/git/shop.git', '/srv/git/shop.git'],
  ])('%s is recorded as %s', (url, expected) => {
    expect(stripCredentials(url)).toBe(expected);
  });

  it('prefers origin, else the first remote', () => {
    expect(pickRemote('remote.upstream.url https://a.example/x.git\nremote.origin.url https://b.example/y.git\n')).toBe(
      'https://b.example/y.git',
    );
    expect(pickRemote('remote.upstream.url https://a.example/x.git\n')).toBe('https://a.example/x.git');
    expect(pickRemote('')).toBeUndefined();
  });

  it('is absent when git is missing', async () => {
    const record = await enqueue(await session('no-git-0001'));
    execFileSync('git', ['init', '-q', cwd]);
    await drain(t.context({ env: { PATH: '/nonexistent' } }));
    const verified = await verifyBundle(path.join(stateDir, 'spool', 'bundles', `${record.id}.bundle`), {
      profiles: await loadProfiles(ctx.paths.profilesDir),
    });
    expect(verified.manifest.repository).toBeUndefined();
  });
});

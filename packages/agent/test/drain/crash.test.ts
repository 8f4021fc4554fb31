/**
 * Crash safety of the spool with real processes: many captures are queued, then the drain process (`blue-agent drain`)
 * is killed with SIGKILL at random moments — while starting, recovering, claiming, building, committing — and started
 * again, many times over. After a last, uninterrupted drain every capture must have completed exactly once, with a
 * bundle that verifies, and nothing half-done may be left anywhere in the spool.
 */
import { readdirSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { verifyBundle } from '@blue-agent/contract/bundle/index.js';
import { loadProfiles } from '@blue-agent/contract/profiles/index.js';
import { Spool, type SpoolRecord } from '../../src/spool/index.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';
import {
  captureLog,
  claudeSession,
  CLAUDE_PROFILE,
  readJson,
  runCli,
  spoolFiles,
} from '../../../../test/support/cli-process.js';
import { stateLayout } from '../../src/context.js';

const CAPTURES = 100;
const MAX_KILLS = 25;
/** Only a bound: the loop ends after MAX_KILLS kills, which take longer on a slow machine. */
const KILL_WINDOW_MS = 150_000;

let t: TestHome;
let stateDir: string;

beforeEach(async () => {
  t = await makeTestHome();
  stateDir = t.env.BLUE_AGENT_HOME!;
});
afterEach(async () => {
  await t.cleanup();
});

/** A small seeded generator, so a failing run can be replayed with the seed it prints. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** Every file under the spool, relative to it. */
function allFiles(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? allFiles(path.join(dir, e.name), `${prefix}${e.name}/`) : [`${prefix}${e.name}`],
  );
}

it('every capture completes exactly once although the worker is killed at random points again and again', async () => {
  const seed = Number(process.env.BLUE_AGENT_CRASH_SEED ?? Date.now() % 1_000_000);
  const rand = random(seed);
  const why = `(replay with BLUE_AGENT_CRASH_SEED=${seed})`;

  const cwd = path.join(t.home, 'project');
  await mkdir(cwd, { recursive: true });
  const spool = await Spool.open(stateLayout(stateDir));
  const queued = new Map<string, string>();
  const created = Date.now() - 60_000;
  for (let i = 0; i < CAPTURES; i++) {
    // Large enough that building takes a while, so kills land inside builds and commits, not only in start-up.
    const s = await claudeSession(path.join(t.home, '.claude'), {
      id: `crash-${String(i).padStart(4, '0')}`,
      cwd,
      prompt: `Task ${i}`,
      padBytes: 512 * 1024,
    });
    const record = await spool.enqueueIntake({
      harness: 'claude',
      profile: CLAUDE_PROFILE,
      payload: s.payload,
      createdAtUnixMs: created + i,
    });
    queued.set(record.id, s.id);
  }

  let kills = 0;
  let runs = 0;
  const deadline = Date.now() + KILL_WINDOW_MS;
  while (
    kills < MAX_KILLS &&
    Date.now() < deadline &&
    spoolFiles(stateDir).intake.length + spoolFiles(stateDir).building.length > 0
  ) {
    const run = runCli(['drain', '--quiet'], { env: t.env, timeoutMs: 60_000 });
    runs++;
    let finished: boolean;
    if (rand() < 0.5) {
      // Anywhere from start-up on (around 150 ms on a fast machine): start-up, recovery, claims, builds, commits.
      const delay = 30 + Math.floor(rand() * 320);
      finished = await Promise.race([run.then(() => true), sleep(delay).then(() => false)]);
    } else {
      // Inside a build of this worker's, however long start-up takes here; now or a little into it.
      const claimed = `.${run.child.pid}.json`;
      const ended = run.then(() => true);
      let building = false;
      for (let i = 0; i < 20_000 && !building && !(await Promise.race([ended, sleep(5).then(() => false)])); i++) {
        building = spoolFiles(stateDir).building.some((name) => name.endsWith(claimed));
      }
      if (building && rand() < 0.5) await sleep(Math.floor(rand() * 50));
      finished = await Promise.race([ended, sleep(0).then(() => false)]);
    }
    if (!finished) {
      run.child.kill('SIGKILL');
      const result = await run;
      if (result.signal === 'SIGKILL') kills++;
    }
  }

  const last = await runCli(['drain', '--json'], { env: t.env, timeoutMs: 60_000 });
  expect(last.code, `${last.stdout}${last.stderr} ${why}`).toBe(0);
  const report = JSON.parse(last.stdout) as { failed: unknown[]; left: number };
  const retries = captureLog(stateDir).filter((l) => l.event !== 'built');
  expect(report, `${JSON.stringify(retries, null, 1)} ${why}`).toMatchObject({ failed: [], left: 0 });

  // Enough kills happened, and some of them cut builds short: otherwise this tested nothing.
  expect(kills, `${runs} runs ${why}`).toBeGreaterThanOrEqual(Math.min(MAX_KILLS, 15));
  const files = spoolFiles(stateDir);
  const ready = files.ready.map((name) => readJson<SpoolRecord>(path.join(stateDir, 'spool', 'ready', name)));
  expect(
    ready.reduce((n, r) => n + r.interruptions, 0),
    `no build was ever interrupted ${why}`,
  ).toBeGreaterThan(0);

  // Exactly once: one ready record per capture, no other state, one bundle each.
  expect(files.intake, why).toEqual([]);
  expect(files.building, why).toEqual([]);
  expect(files.failed, why).toEqual([]);
  expect(files.tmp, why).toEqual([]);
  expect(files.ready.sort(), why).toEqual([...queued.keys()].map((id) => `${id}.json`).sort());
  expect(files.bundles.sort(), why).toEqual([...queued.keys()].map((id) => `${id}.bundle`).sort());
  expect(
    allFiles(path.join(stateDir, 'spool')).filter((f) => /\.(tmp|partial)$/.test(f) || /(^|\/)\./.test(f)),
    why,
  ).toEqual([]);
  // No commit happened twice: the worker logs one `built` line per commit (none if killed right after it).
  const builtLines = captureLog(stateDir).filter((l) => l.event === 'built');
  for (const id of queued.keys())
    expect(builtLines.filter((l) => l.record === id).length, `${id} ${why}`).toBeLessThanOrEqual(1);

  const profiles = await loadProfiles(t.ctx.paths.profilesDir);
  for (const record of ready) {
    const verified = await verifyBundle(path.join(stateDir, 'spool', 'bundles', `${record.id}.bundle`), { profiles });
    expect(record.bundle, `${record.id} ${why}`).toMatchObject({ size: verified.size, sha256: verified.sha256 });
    expect(verified.manifest.native_session_id).toBe(queued.get(record.id));
    expect(verified.manifest.captured_at_unix_ms).toBe(record.created_at_unix_ms);
  }
}, 300_000);

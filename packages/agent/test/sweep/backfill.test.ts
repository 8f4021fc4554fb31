/**
 * `blue-agent backfill` against a real Control API on loopback and a HOME holding Claude Code sessions of several
 * ages (a fake `claude` on PATH prints a supported version): what it finds, oldest first; --since; sessions written
 * by a version older than the capture profile uploaded as not resumable; a second run and another machine's state
 * (the server asked) capture nothing again; status and doctor warn about sessions Claude Code will delete first.
 */
import { readFile, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { agentHome, uploadPolicy, type AgentHome } from '../../../../test/support/agent-home.js';
import { claudeSession, runCli } from '../../../../test/support/cli-process.js';
import { startUploadStack, type UploadStack } from '../../../../test/support/fault-proxy.js';

const DAY = 86_400_000;
const ids = {
  old: '11111111-1111-4111-8111-111111111111',
  middle: '22222222-2222-4222-8222-222222222222',
  recent: '33333333-3333-4333-8333-333333333333',
};

let t: AgentHome;
let stack: UploadStack;
let env: Record<string, string>;

beforeEach(async () => {
  stack = await startUploadStack();
  stack.server.store.publishPolicy(uploadPolicy(stack.proxy.url), Date.now());
  t = await agentHome();
  env = { ...t.env, BLUE_AGENT_CONTROL_URL: stack.proxy.url, BLUE_AGENT_TOKEN: stack.token };
  const claude = path.join(t.home, '.claude');
  const cwd = path.join(t.root, 'work');
  const now = Date.now();
  for (const [name, id, age] of [
    ['old', ids.old, 40],
    ['middle', ids.middle, 10],
    ['recent', ids.recent, 0],
  ] as const) {
    const s = await claudeSession(claude, { id, cwd, prompt: `the ${name} session`, companions: false });
    if (name === 'old') {
      // Written by Claude Code 1.0.90, older than the capture profile (claude-v2_0_12): not resumable.
      await writeFile(
        s.transcript,
        (await readFile(s.transcript, 'utf8')).replaceAll('"version":"2.1.197"', '"version":"1.0.90"'),
      );
    }
    const at = new Date(now - age * DAY - 60_000);
    await utimes(s.transcript, at, at);
  }
});

afterEach(async () => {
  await stack.close();
  await t.cleanup();
});

async function json(args: string[], state = env): Promise<{ code: number | null; body: any; stderr: string }> {
  const result = await runCli(args, { env: state, timeoutMs: 60_000 });
  let body: unknown;
  try {
    body = JSON.parse(result.stdout);
  } catch {
    throw new Error(`not JSON (exit ${result.code}):\n${result.stdout}\n${result.stderr}`);
  }
  return { code: result.code, body, stderr: result.stderr };
}

it('finds every session never uploaded, oldest first, captures them once, and is told by the server what another ' +
  'machine sent', async () => {
  // The agent's reconcile fetched the policy (status reads it offline, from the last-known-good copy).
  expect((await runCli(['reconcile'], { env, timeoutMs: 30_000 })).code).toBe(0);
  // Before: Claude Code deletes sessions after 30 days by default; the 40-day-old one is at risk.
  const before = await json(['status', '--json']);
  expect(before.body.sessions.harnesses).toEqual([
    expect.objectContaining({
      harness: 'claude',
      on_disk: 3,
      captured: 0,
      at_risk: expect.objectContaining({ count: 1, days: 30 }),
    }),
  ]);
  const doctor = await json(['doctor', '--json']);
  const risk = doctor.body.checks.find((c: { id: string }) => c.id === 'sessions-at-risk');
  expect(risk).toMatchObject({ status: 'warn', fix: expect.stringContaining('blue-agent backfill --harness claude') });

  const dry = await json(['backfill', '--dry-run', '--json']);
  expect(dry.code).toBe(0);
  expect(dry.body.candidates.map((c: { session_id: string }) => c.session_id)).toEqual([
    ids.old,
    ids.middle,
    ids.recent,
  ]);
  expect(dry.body.candidates[0]).toMatchObject({ version: '1.0.90', resumable: false, profile: 'claude-v2_0_12' });
  expect(dry.body.candidates[1]).toMatchObject({ version: '2.1.197', resumable: true });
  expect(await stack.listUploads()).toEqual([]);

  const since = await json(['backfill', '--dry-run', '--since', '20d', '--json']);
  expect(since.body.candidates.map((c: { session_id: string }) => c.session_id)).toEqual([ids.middle, ids.recent]);
  expect(since.body.skipped.before_since).toBe(1);

  const run = await json(['backfill', '--json']);
  expect(run.code, run.stderr).toBe(0);
  expect(run.body).toMatchObject({ uploaded: 3, built: 3, failed: [] });
  const uploads = await stack.listUploads();
  expect(uploads).toHaveLength(3);
  expect(uploads.find((u) => u.native_session_id === ids.old)).toMatchObject({ resumable: false });
  expect(uploads.find((u) => u.native_session_id === ids.middle)).toMatchObject({ resumable: true });

  // Again: nothing new.
  const again = await json(['backfill', '--json']);
  expect(again.body.candidates.length, JSON.stringify(again.body.skipped)).toBe(0);
  expect(again.body.skipped.captured).toBe(3);

  // Another state directory on the same sessions (a reinstall): the Control API says it holds them.
  const fresh = { ...env, BLUE_AGENT_HOME: path.join(t.root, 'state-after-reinstall') };
  const reinstall = await json(['backfill', '--dry-run', '--json'], fresh);
  expect(reinstall.body.candidates.length, JSON.stringify(reinstall.body)).toBe(0);
  expect(reinstall.body.skipped.on_server).toBe(3);

  const after = await json(['status', '--json']);
  expect(after.body.sessions.harnesses[0]).toMatchObject({
    captured: 3,
    backfill_captures: 3,
    at_risk: expect.objectContaining({ count: 0 }),
  });
  expect(after.body.sessions.backfill_finished_at_unix_ms).toEqual(expect.any(Number));
}, 120_000);

it('refuses while the policy disables capture, and names a bad --since or --rate', async () => {
  stack.server.store.publishPolicy({ ttl_seconds: 1 }, Date.now());
  const off = await runCli(['backfill'], { env, timeoutMs: 30_000 });
  expect(off.code).toBe(1);
  expect(off.stderr).toContain('disables session capture');
  const bad = await runCli(['backfill', '--since', 'yesterday'], { env, timeoutMs: 30_000 });
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain('--since "yesterday" is not a date');
  const rate = await runCli(['backfill', '--rate', '0'], { env, timeoutMs: 30_000 });
  expect(rate.code).toBe(2);
  expect(rate.stderr).toContain('--rate "0" is not a whole number of sessions per minute');
});

/**
 * The agent's idle sweep, in-process against a real Control API on loopback, with a fake `claude` on PATH: a session
 * that appears after the agent began following Claude Code and is then left alone is captured once the idle time has
 * passed — found through the session folder's watch, since the periodic sweep is an hour away — and uploaded; a
 * session from before the agent started is left to backfill. Its step and drain run as child processes, as always.
 */
import { existsSync } from 'node:fs';
import { mkdir, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { bufferOutput } from '../../src/context.js';
import { Daemon } from '../../src/daemon/index.js';
import { readRunState } from '../../src/daemon/state.js';
import { sweepTask } from '../../src/daemon/tasks.js';
import { drain } from '../../src/drain/index.js';
import { agentHome, uploadPolicy, waitFor, type AgentHome } from '../../../../test/support/agent-home.js';
import { captureLog, claudeSession } from '../../../../test/support/cli-process.js';
import { startUploadStack, type UploadStack } from '../../../../test/support/fault-proxy.js';

let t: AgentHome;
let stack: UploadStack;
let daemon: Daemon | undefined;

beforeEach(async () => {
  stack = await startUploadStack();
  stack.server.store.publishPolicy(uploadPolicy(stack.proxy.url), Date.now());
  t = await agentHome();
});
afterEach(async () => {
  await daemon?.stop('test-end');
  daemon = undefined;
  await stack.close();
  await t.cleanup();
});

it('captures a session left idle, found by the watch of its folder, and leaves older ones to backfill', async () => {
  const claude = path.join(t.home, '.claude');
  const cwd = path.join(t.root, 'work');
  // A session from before the agent: history, never captured unasked.
  const old = await claudeSession(claude, {
    id: '44444444-4444-4444-8444-444444444444',
    cwd,
    prompt: 'from before the agent',
    companions: false,
  });
  const before = new Date(Date.now() - 3_600_000);
  await utimes(old.transcript, before, before);
  await mkdir(path.join(claude, 'projects'), { recursive: true });

  const out = bufferOutput();
  const ctx = t.context({
    env: { BLUE_AGENT_CONTROL_URL: stack.proxy.url, BLUE_AGENT_TOKEN: stack.token },
    stdout: out,
  });
  daemon = await Daemon.start(ctx, {
    idleCaptureMs: 1_500,
    sweepMs: 3_600_000,
    intakeDelayMs: 100,
    drainSchedule: '0 0 1 1 *',
    logTarget: { kind: 'stdout' },
    policyPush: false,
  });
  await waitFor('the first sweep', async () => (await readRunState(ctx))?.last_sweep);
  expect(existsSync(path.join(t.stateDir, 'cursors', 'claude.json'))).toBe(true);

  const fresh = await claudeSession(claude, {
    id: '55555555-5555-4555-8555-555555555555',
    cwd,
    prompt: 'killed before its end hook',
    companions: false,
  });
  const uploaded = await waitFor(
    'the idle session uploaded',
    async () => (await stack.listUploads()).find((u) => u.native_session_id === fresh.id),
    30_000,
  );
  expect(uploaded).toMatchObject({ harness: 'claude', status: 'complete' });
  expect(captureLog(t.stateDir).filter((e) => e.event === 'spooled')).toEqual([
    expect.objectContaining({ session_id: fresh.id, capture_reason: 'idle' }),
  ]);
  expect((await stack.listUploads()).map((u) => u.native_session_id)).toEqual([fresh.id]);
  const state = await readRunState(ctx);
  expect(state?.last_sweep).toMatchObject({ ok: true, idle_ms: 1_500 });
  expect(out.text()).toContain('sessions captured without their end hook');
}, 60_000);

it("the agent's one backfill after install (policy backfill: true): history in slices the drains upload, then " +
  'never again', async () => {
  const claude = path.join(t.home, '.claude');
  const cwd = path.join(t.root, 'work');
  const ids = [
    '88888888-8888-4888-8888-888888888881',
    '88888888-8888-4888-8888-888888888882',
    '88888888-8888-4888-8888-888888888883',
  ];
  for (const [i, id] of ids.entries()) {
    const s = await claudeSession(claude, { id, cwd, prompt: `old session ${i}`, companions: false });
    const at = new Date(Date.now() - (10 - i) * 86_400_000);
    await utimes(s.transcript, at, at);
  }
  const snapshot = path.join(t.root, 'policy.json');
  await writeFile(
    snapshot,
    JSON.stringify({
      revision: 1,
      session_upload: { presign_url: `${stack.proxy.url}/session-uploads/presign`, backfill: true },
    }),
  );
  const ctx = t.context({ env: { BLUE_AGENT_CONTROL_URL: stack.proxy.url, BLUE_AGENT_TOKEN: stack.token } });
  const first = await sweepTask(ctx, snapshot);
  expect(first).toMatchObject({ ok: true, enqueued: 0, backfill: { enqueued: 3, remaining: 0 } });
  expect(
    captureLog(t.stateDir)
      .filter((e) => e.event === 'spooled')
      .map((e) => [e.session_id, e.capture_reason]),
  ).toEqual(ids.map((id) => [id, 'backfill']));
  expect(existsSync(path.join(t.stateDir, 'backfill.json'))).toBe(true);
  // Done once: a later sweep backfills nothing, even with the policy still asking.
  const second = await sweepTask(ctx, snapshot);
  expect(second.backfill).toBeUndefined();
  await drain(ctx);
  expect((await stack.listUploads()).map((u) => u.native_session_id).sort()).toEqual(ids);
}, 60_000);

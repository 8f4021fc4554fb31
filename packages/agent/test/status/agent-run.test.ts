/**
 * Status verdicts on the long-running agent: a clean stop, and an interrupted drain.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeLastDrain, writeRunState } from '../../src/daemon/state.js';
import { agentStatus } from '../../src/status/collect.js';
import { setup, type Setup } from '../../../../test/support/status-home.js';

let s: Setup;
beforeEach(async () => {
  s = await setup();
});
afterEach(async () => {
  await s.cleanup();
});

describe('agent status', () => {
  it('a cleanly stopped agent is stopped, even when its pid runs and its report is fresh', () => {
    const now = Date.now();
    // process.pid: a pid that certainly runs (a reused pid, or a new agent that has not reported yet).
    const a = agentStatus(
      {
        pid: process.pid,
        started_at_unix_ms: now - 60_000,
        updated_at_unix_ms: now - 1_000,
        stopped_at_unix_ms: now - 1_000,
      },
      now,
    );
    expect(a.state).toBe('stopped');
    expect(a.detail).toContain('stopped cleanly');
    // Without stopped_at_unix_ms the same file is a running agent.
    expect(
      agentStatus({ pid: process.pid, started_at_unix_ms: now - 60_000, updated_at_unix_ms: now - 1_000 }, now).state,
    ).toBe('running');
  });

  it('an interrupted drain shows as interrupted, not as a failure', async () => {
    const now = Date.now();
    await writeLastDrain(s.ctx, {
      finished_at_unix_ms: now - 60_000,
      ok: false,
      built: 0,
      uploaded: 0,
      failed: 0,
      retried: 0,
      left: 0,
      left_ready: 1,
      stopped: { code: 'INTERRUPTED', reason: 'the drain process ended on SIGTERM' },
      notes: [],
    });
    await writeRunState(s.ctx, {
      pid: 999_999_999,
      started_at_unix_ms: now - 120_000,
      updated_at_unix_ms: now - 60_000,
      stopped_at_unix_ms: now - 60_000,
    });
    const human = await s.cli(['status']);
    expect(human.code).toBe(0);
    const line = human.stdout.split('\n').find((l) => l.includes('ago:') && l.includes('built'))!;
    expect(line).toContain('interrupted: the drain process ended on SIGTERM');
    expect(line).not.toContain('stopped:');
    const json = JSON.parse((await s.cli(['status', '--json'])).stdout);
    expect(json.last_drain.stopped.code).toBe('INTERRUPTED');
    expect(json.agent).toMatchObject({ state: 'stopped' });
  });
});

/**
 * The run loop's life cycle with its steps faked (no Control API, no child processes): a stop is bounded whatever a
 * step does, a stopping agent starts nothing, a crashing policy check does not end the polling, a reload racing a
 * stop leaves nothing behind; and the drift watcher's view of the agent's own writes.
 */
import { writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bufferOutput } from '../../src/context.js';
import { CorrectionBackoff } from '../../src/daemon/backoff.js';
import { Daemon, type DaemonOptions } from '../../src/daemon/index.js';
import type { TaskRequest } from '../../src/daemon/tasks.js';
import { ConfigWatcher, fingerprints } from '../../src/daemon/watcher.js';
import type { TaskRunner } from '../../src/daemon/task-process.js';
import type { Logger } from '../../src/logger.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';
import { parseLog, waitFor } from '../../../../test/support/agent-home.js';

let t: TestHome;
let daemon: Daemon | undefined;
let out: ReturnType<typeof bufferOutput>;
beforeEach(async () => {
  t = await makeTestHome();
  out = bufferOutput();
});
afterEach(async () => {
  await daemon?.stop('test-end');
  daemon = undefined;
  await t.cleanup();
});

const RESOLVED = {
  revision: 1,
  source: 'fetched',
  stale: false,
  ttlSeconds: 3600,
  key: 'k1',
  warnings: [] as string[],
};

interface Fake {
  requests: TaskRequest[];
  stopCalls: number;
  reconcile: () => Promise<unknown>;
  policy: () => Promise<unknown>;
}

function fakeTasks(fake: Fake): () => TaskRunner {
  return () => {
    const runner: TaskRunner = async (request) => {
      fake.requests.push(request);
      if (request.task === 'policy') return fake.policy();
      if (request.task === 'reconcile') return fake.reconcile();
      return { ok: true };
    };
    runner.stop = async () => {
      fake.stopCalls++;
      return 1;
    };
    return runner;
  };
}

const okReconcile = async () => ({ ok: true, harnesses: [], watch: [] });

async function start(fake: Fake, options: DaemonOptions = {}): Promise<Daemon> {
  const ctx = t.context({
    env: { BLUE_AGENT_CONTROL_URL: 'http://127.0.0.1:9', BLUE_AGENT_TOKEN: 'tok_unused_0123456789' },
    stdout: out,
  });
  daemon = await Daemon.start(ctx, {
    drainSchedule: '0 0 1 1 *',
    logTarget: { kind: 'stdout' },
    policySchedule: { backoffBaseMs: 100, backoffCapMs: 400, minIntervalMs: 50 },
    tasks: fakeTasks(fake),
    ...options,
  });
  return daemon;
}

const tasksOf = (fake: Fake, task: string) => fake.requests.filter((r) => r.task === task).length;

describe('run loop life cycle', () => {
  // The reconcile never settles: a stop that waited for it would never return, and this test's timeout would fail it.
  it('a stop is bounded even when a reconcile step hangs, and ends the steps still running', {
    timeout: 15_000,
  }, async () => {
    let entered = false;
    const fake: Fake = {
      requests: [],
      stopCalls: 0,
      policy: async () => ({ resolved: RESOLVED }),
      reconcile: () => ((entered = true), new Promise(() => undefined)),
    };
    const d = await start(fake, { reconcileStopMs: 300, taskKillMs: 100 });
    await waitFor('the reconcile to hang', () => entered);
    expect(await d.stop('test')).toBe(0);
    expect(fake.stopCalls).toBe(1);
    expect(parseLog(out.text()).map((l) => l.msg)).toContain('stopped');
    daemon = undefined;
  });

  it('a stopping agent starts no new step: no client status after a reconcile that ends during the stop', async () => {
    let release!: () => void;
    const fake: Fake = {
      requests: [],
      stopCalls: 0,
      policy: async () => ({ resolved: RESOLVED }),
      reconcile: () => new Promise((resolve) => (release = () => resolve({ ok: true, harnesses: [], watch: [] }))),
    };
    const d = await start(fake);
    await waitFor('the reconcile', () => release !== undefined);
    const stopped = d.stop('test');
    release();
    await stopped;
    daemon = undefined;
    await sleep(100);
    expect(tasksOf(fake, 'status')).toBe(0);
  });

  it('a policy check that throws does not end the polling: the next one is scheduled (with backoff)', async () => {
    // No `warnings` array: handling the answer throws inside the check.
    const fake: Fake = {
      requests: [],
      stopCalls: 0,
      policy: async () => ({ resolved: { ...RESOLVED, warnings: undefined } }),
      reconcile: okReconcile,
    };
    await start(fake);
    await waitFor('a second policy check', () => tasksOf(fake, 'policy') >= 2, 5_000);
    expect(parseLog(out.text()).find((l) => l.msg.startsWith('policy check crashed'))).toMatchObject({
      level: 'error',
    });
  });

  it('a step that cannot even start (out of processes) is logged with its typed code, not as a bug', async () => {
    const fake: Fake = {
      requests: [],
      stopCalls: 0,
      policy: async () => ({ resolved: RESOLVED }),
      reconcile: async () => {
        throw Object.assign(new Error('spawn EAGAIN'), { code: 'EAGAIN', errno: -11, syscall: 'spawn' });
      },
    };
    await start(fake);
    await waitFor('the failed reconcile', () => parseLog(out.text()).some((l) => l.msg === 'reconcile failed'), 5_000);
    expect(parseLog(out.text()).find((l) => l.msg === 'reconcile failed')).toMatchObject({
      level: 'error',
      code: 'RESOURCE_LIMIT',
    });
  });

  it(
    'a revision this blue-agent may not apply (another major pinned, a newer contract) stops drift repairs until ' +
      'it changes',
    async () => {
      const file = path.join(t.root, 'settings.json');
      await writeFile(file, '{"managed":true}\n');
      let refuse = false;
      const fake: Fake = {
        requests: [],
        stopCalls: 0,
        policy: async () =>
          refuse
            ? { error: { code: 'CLIENT_VERSION_MISMATCH', message: 'the organisation requires blue-agent 9.0.0' } }
            : { resolved: { ...RESOLVED, ttlSeconds: 0.1 } },
        reconcile: async () => ({ ok: true, harnesses: [], watch: [file], fingerprints: await fingerprints([file]) }),
      };
      await start(fake);
      await waitFor('the first reconcile', () => tasksOf(fake, 'reconcile') >= 1, 5_000);
      refuse = true;
      await waitFor(
        'the refusal',
        () => parseLog(out.text()).some((l) => l.msg === 'policy check failed' && l.code === 'CLIENT_VERSION_MISMATCH'),
        5_000,
      );
      const reconciles = tasksOf(fake, 'reconcile');
      await writeFile(file, '{"edited":true}\n');
      await waitFor(
        'the drift to be seen and left alone',
        () =>
          parseLog(out.text()).some((l) => l.msg === 'reconcile skipped: no policy to apply' && l.trigger === 'drift'),
        5_000,
      );
      expect(tasksOf(fake, 'reconcile')).toBe(reconciles);
    },
  );

  it('SIGHUP then SIGTERM: the reload finishing after the stop starts no schedule and no check', async () => {
    const fake: Fake = {
      requests: [],
      stopCalls: 0,
      policy: async () => ({ resolved: RESOLVED }),
      reconcile: okReconcile,
    };
    const d = await start(fake, { drainSchedule: undefined });
    await waitFor('the first check', () => tasksOf(fake, 'policy') >= 1);
    await mkdir(path.dirname(t.env.BLUE_AGENT_CONFIG!), { recursive: true });
    await writeFile(t.env.BLUE_AGENT_CONFIG!, 'drain_schedule: "*/7 * * * *"\n');
    const checks = tasksOf(fake, 'policy');
    const reloading = d.reload();
    const stopping = d.stop('SIGTERM');
    await reloading;
    await stopping;
    daemon = undefined;
    expect((d as unknown as { drains: { nextRunAt(): number | undefined } }).drains.nextRunAt()).toBeUndefined();
    expect(tasksOf(fake, 'policy')).toBe(checks);
    expect(parseLog(out.text()).map((l) => l.msg)).not.toContain('config reloaded');
  });
});

describe('drift watcher', () => {
  const quiet: Logger = {
    debug: () => undefined,
    info: () => undefined,
    warn: () => undefined,
    error: () => undefined,
  };

  it("ignores the agent's own write even when its event fires before the step answered; sees later ones", async () => {
    const file = path.join(t.root, 'settings.json');
    await writeFile(file, '{"a":1}\n');
    const changes: string[][] = [];
    const w = new ConfigWatcher({ debounceMs: 50, log: quiet, onChange: (files) => void changes.push(files) });
    try {
      await w.setFiles([file]);
      await w.remember();
      // A reconcile: the step writes the file; its event and the debounce come and go before its answer arrives.
      w.hold();
      await writeFile(file, '{"a":1,"managed":true}\n');
      const after = await fingerprints([file]);
      await sleep(300);
      await w.remember(after);
      await sleep(300);
      expect(changes).toEqual([]);
      // Somebody else changes it: that is drift.
      await writeFile(file, '{"a":2}\n');
      await waitFor('the change', () => changes.length === 1, 5_000);
      expect(changes[0]).toEqual([file]);
    } finally {
      await w.close();
    }
  });

  it('spaces out repeated corrections of one file (doubling), and forgets after a quiet while', () => {
    const b = new CorrectionBackoff({ baseMs: 1_000, capMs: 5_000, resetMs: 60_000 });
    const f = '/home/u/.claude/settings.json';
    expect(b.delayFor([f], 0).delayMs).toBe(0);
    b.corrected([f], 0);
    expect(b.delayFor([f], 100)).toEqual({ delayMs: 900, file: f, corrections: 1 });
    b.corrected([f], 1_000);
    expect(b.delayFor([f], 1_000).delayMs).toBe(2_000);
    b.corrected([f], 3_000);
    expect(b.delayFor([f], 3_000).delayMs).toBe(4_000);
    b.corrected([f], 7_000);
    expect(b.delayFor([f], 7_000).delayMs).toBe(5_000); // capped
    expect(b.delayFor(['/other'], 7_000).delayMs).toBe(0);
    expect(b.delayFor([f], 7_000 + 60_000).delayMs).toBe(0);
  });
});

/**
 * The run loop in-process, against a real Control API on loopback (behind the fault proxy, to take it away and
 * bring it back), a temporary HOME and a fake `claude` on PATH. Intervals are shortened through DaemonOptions; the
 * code paths are the real ones (native file watches, the cron timer, the drain CLI as a child process).
 */
import { copyFile, mkdir, readFile, rm, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bufferOutput, stateLayout } from '../../src/context.js';
import { Daemon, type DaemonOptions } from '../../src/daemon/index.js';
import { readRunState } from '../../src/daemon/state.js';
import { nativeWatch, type WatchFactory } from '../../src/daemon/watcher.js';
import { processTasks, type TaskRunner } from '../../src/daemon/task-process.js';
import { Spool } from '../../src/spool/index.js';
import { startUploadStack, type UploadStack } from '../../../../test/support/fault-proxy.js';
import { CLAUDE_PROFILE, claudeSession, spoolFiles } from '../../../../test/support/cli-process.js';
import {
  agentHome,
  parseLog,
  uploadPolicy,
  waitFor,
  type AgentHome,
  type LogLine,
} from '../../../../test/support/agent-home.js';

let t: AgentHome;
let stack: UploadStack;
let daemon: Daemon | undefined;
let out: ReturnType<typeof bufferOutput>;

const FAST: DaemonOptions = {
  debounceMs: 100,
  intakeDelayMs: 100,
  policySchedule: { backoffBaseMs: 200, backoffCapMs: 1_600, minIntervalMs: 50 },
  // Far away: drains in these tests come from new captures, not from the schedule.
  drainSchedule: '0 0 1 1 *',
  logTarget: { kind: 'stdout' },
  statusTimeoutMs: 2_000,
};

beforeEach(async () => {
  stack = await startUploadStack();
  t = await agentHome();
  out = bufferOutput();
  stack.server.store.publishPolicy(uploadPolicy(stack.proxy.url), Date.now());
});
afterEach(async () => {
  await daemon?.stop('test-end');
  daemon = undefined;
  await stack.close();
  await t.cleanup();
});

async function start(options: DaemonOptions = {}): Promise<Daemon> {
  const ctx = t.context({
    env: { BLUE_AGENT_CONTROL_URL: stack.proxy.url, BLUE_AGENT_TOKEN: stack.token },
    stdout: out,
  });
  daemon = await Daemon.start(ctx, { ...FAST, ...options });
  return daemon;
}

const log = (): LogLine[] => parseLog(out.text());
const lines = (msg: string, match: (l: LogLine) => boolean = () => true) =>
  log().filter((l) => l.msg === msg && match(l));
const settingsText = () => readFile(t.settings, 'utf8').catch(() => '');
const MANAGED = 'capture --harness claude';

/** A user's own hook in Claude's settings, next to whatever the agent manages. */
async function writeUserHook(command: string): Promise<void> {
  const current = JSON.parse((await settingsText()) || '{}') as Record<string, any>;
  current.hooks ??= {};
  current.hooks.PreToolUse = [{ matcher: 'Bash', hooks: [{ type: 'command', command }] }];
  await writeFile(t.settings, `${JSON.stringify(current, null, 2)}\n`);
}

async function fileIdentity(file: string) {
  const info = await stat(file);
  return { ino: info.ino, mtimeMs: info.mtimeMs, ctimeMs: info.ctimeMs, bytes: await readFile(file, 'utf8') };
}

describe('blue-agent run (in-process)', () => {
  it('puts the hook in place for a new revision, takes it out when session_upload goes, keeps user hooks', async () => {
    await mkdir(path.dirname(t.settings), { recursive: true });
    await writeUserHook('echo user-hook');
    await start();
    await waitFor('the managed hook', async () => (await settingsText()).includes(MANAGED));
    expect(await settingsText()).toContain('echo user-hook');

    // A new revision without session_upload: picked up by the next check, due after the ttl (1 s ± 10%), and
    // reconciled at once.
    const off = await stack.server.store.publishPolicy({ ttl_seconds: 1 }, Date.now());
    await waitFor('the managed hook to go', async () => !(await settingsText()).includes(MANAGED));
    const checks = lines('policy checked');
    expect(checks.length).toBeGreaterThanOrEqual(2);
    for (const check of checks) {
      expect(check).toMatchObject({ ok: true, basis: 'ttl' });
      expect(check.next_check_in_ms).toBeGreaterThanOrEqual(900);
      expect(check.next_check_in_ms).toBeLessThanOrEqual(1_100);
    }
    expect(await settingsText()).toContain('echo user-hook');
    await waitFor('the removal in the log', () => lines('hooks updated', (l) => l.action === 'remove')[0]);
    // Revisions are the Control API's ids (UUID strings, as Blue's).
    const inForce = lines('policy revision in force').map((l) => l.revision);
    expect(inForce).toHaveLength(2);
    expect(inForce[0]).toEqual(expect.any(String));
    expect(inForce[1]).toBe(off.revision);
    expect(lines('hooks updated', (l) => l.harness === 'claude').map((l) => l.action)).toEqual(['create', 'remove']);

    // And back on again with the next revision.
    const on = await stack.server.store.publishPolicy(uploadPolicy(stack.proxy.url), Date.now());
    await waitFor('the managed hook again', async () => (await settingsText()).includes(MANAGED));

    const state = await readRunState(t.ctx);
    expect(state).toMatchObject({
      pid: process.pid,
      policy: { revision: on.revision, source: 'fetched', failures: 0 },
      last_reconcile: { ok: true },
    });
    // The next check is due a ttl (1 s ± 10%) after the last one, by the agent's own clock.
    expect(state!.policy!.next_check_at_unix_ms - state!.policy!.checked_at_unix_ms!).toBeGreaterThanOrEqual(900);
    // ETag revalidation: the agent asks with If-None-Match, and an unchanged policy is answered 304.
    await waitFor('a 304', () =>
      stack.proxy.seen.some((r) => r.path.includes('governance-config') && r.status === 304),
    );
  });

  it('applies a fetched revision that carries fields this blue-agent does not know, and says so', async () => {
    // A newer Control API's revision: fields at the top level, under a harness and under session_upload.
    const policy = uploadPolicy(stack.proxy.url);
    await stack.server.store.publishPolicy(
      {
        ...policy,
        added_later: { x: 1 },
        harnesses: { claude: { new_rule: true } },
        session_upload: { ...(policy.session_upload as object), new_option: 1 },
      },
      Date.now(),
    );
    await start();
    await waitFor('the managed hook', async () => (await settingsText()).includes(MANAGED), 10_000);
    expect(
      log().filter(
        (l) =>
          l.level === 'warn' &&
          String(l.msg).includes(
            'has fields this blue-agent does not know: added_later, harnesses.claude.new_rule, ' +
              'session_upload.new_option',
          ),
      ),
    ).not.toHaveLength(0);
    await waitFor(
      'the reconcile in agent-run.json',
      async () => (await readRunState(t.ctx))?.last_reconcile?.ok === true,
      10_000,
    );
  });

  it('restores a managed hook removed by hand, reports the correction, does not loop on its own write', async () => {
    await start();
    await waitFor('the managed hook', async () => (await settingsText()).includes(MANAGED));
    await waitFor(
      'the first client status',
      async () => (await stack.server.store.clientStatuses({ limit: 1, offset: 0 })).total > 0,
    );
    await sleep(400);
    const reconciledBefore = lines('reconciled').length;
    const statusPosts = () => stack.proxy.seen.filter((r) => r.path.includes('client-status')).length;
    const statusesBefore = statusPosts();

    // A person deletes the managed hook (here: the whole file, as `rm` would).
    await unlink(t.settings);
    await waitFor('the hook restored', async () => (await settingsText()).includes(MANAGED));
    const corrected = await waitFor(
      'a drift correction in the log',
      () => lines('drift corrected', (l) => l.harness === 'claude')[0],
    );
    expect(corrected).toMatchObject({ level: 'warn', trigger: 'drift', action: 'create' });
    await waitFor('the correction in client-status', async () =>
      (await stack.server.store.clientStatuses({ limit: 10, offset: 0 })).items.some((r) =>
        JSON.stringify(r.report).includes('"drift_corrected":true'),
      ),
    );
    // Blue's ClientStatusReport: the revision applied, the managed files as written, one inventory entry per harness
    // (`drift_corrected` is the agent's extension on the entry).
    const report = (await stack.server.store.clientStatuses({ limit: 1, offset: 0 })).items[0]!.report as any;
    expect(report).toMatchObject({
      client_version: expect.any(String),
      platform: 'linux',
      architecture: expect.any(String),
      config_revision: expect.any(String),
      applied: true,
      files_ok: true,
    });
    expect(report).not.toHaveProperty('policy_revision');
    expect(report.instance_id).toBe((await readFile(path.join(t.stateDir, 'instance-id'), 'utf8')).trim());
    expect(report.harnesses.find((h: { name: string }) => h.name === 'claude')).toMatchObject({
      installed: true,
      version: '2.1.332',
      reconciled: true,
      api_allowed: true,
      client_supported: true,
      drift_corrected: true,
    });
    expect((await readRunState(t.ctx))!.last_reconcile).toMatchObject({ corrected: ['claude'], trigger: 'drift' });

    // The agent's own write must not start reconcile after reconcile.
    await sleep(600);
    const settled = lines('reconciled').length;
    await sleep(1_000);
    expect(lines('reconciled').length).toBe(settled);
    // Exactly one drift reconcile (the correction) and one client status for it: no second round from its own write.
    expect(lines('reconciled', (l) => l.trigger === 'drift').length).toBe(1);
    expect(lines('reconciled').length).toBe(reconciledBefore + 1);
    expect(lines('managed config changed').length).toBe(1);
    expect(statusPosts()).toBe(statusesBefore + 1);
  });

  it('does not write the file when only a user entry changed', async () => {
    await start();
    await waitFor('the managed hook', async () => (await settingsText()).includes(MANAGED));
    await waitFor('the first reconcile to settle', () => lines('reconciled').length > 0);
    await sleep(300);
    await writeUserHook('echo edited-by-the-user');
    const before = await fileIdentity(t.settings);
    const drifts = lines('reconciled', (l) => l.trigger === 'drift').length;
    await waitFor(
      'a reconcile after the edit',
      () => lines('reconciled', (l) => l.trigger === 'drift').length > drifts,
    );
    await sleep(300);
    expect(await fileIdentity(t.settings)).toEqual(before);
    expect(lines('drift corrected')).toEqual([]);
    expect(lines('reconciled', (l) => l.trigger === 'drift').at(-1)!.harnesses.claude).toEqual({
      state: 'active',
      action: 'unchanged',
    });
  });

  it('uses the last-known-good policy, backs off while the server is away, honours Retry-After, recovers', async () => {
    await start();
    await waitFor('the managed hook', async () => (await settingsText()).includes(MANAGED));
    await stack.proxy.stop();
    const retries = await waitFor('four failed checks', () => {
      const l = lines('policy check will be retried');
      return l.length >= 4 ? l : undefined;
    });
    const delays = retries.slice(0, 4).map((l) => l.next_check_in_ms as number);
    for (let i = 1; i < delays.length; i++) expect(delays[i]).toBeGreaterThan(delays[i - 1]!);
    expect(Math.max(...delays)).toBeLessThanOrEqual(1_600);
    expect(retries.map((l) => l.failures).slice(0, 4)).toEqual([1, 2, 3, 4]);
    const cached = lines('policy revision in force')[0]!.revision;
    expect(lines('Control API unavailable: using the last-known-good policy')[0]).toMatchObject({ revision: cached });
    const away = await waitFor('agent-run.json to count the failures', async () => {
      const state = await readRunState(t.ctx);
      return (state?.policy?.failures ?? 0) >= 4 ? state : undefined;
    });
    expect(away!.policy).toMatchObject({
      revision: cached,
      source: 'cached',
      last_error: { code: 'POLICY_UNREACHABLE' },
    });
    expect(away!.policy!.failures).toBeGreaterThanOrEqual(4);
    // The hooks stay as the last-known-good policy wants them.
    expect(await settingsText()).toContain(MANAGED);

    // Back, but first saying "come back in 2 s".
    stack.proxy.rules.push({
      method: 'GET',
      path: /governance-config$/,
      times: 1,
      action: { kind: 'answer', status: 503, headers: { 'retry-after': '2' } },
    });
    await stack.proxy.start();
    const honoured = await waitFor(
      'a Retry-After',
      () => lines('policy check will be retried', (l) => l.basis === 'retry-after')[0],
    );
    expect(honoured).toMatchObject({ retry_after_ms: 2_000, next_check_in_ms: 2_000 });
    const saidAt = Date.parse(honoured.time);
    const recovered = await waitFor(
      'a successful check',
      () => lines('policy checked', (l) => Date.parse(l.time) > saidAt)[0],
    );
    expect(Date.parse(recovered.time) - saidAt).toBeGreaterThanOrEqual(1_900);
    expect(recovered).toMatchObject({ ok: true, failures: 0, basis: 'ttl' });
    await waitFor(
      'agent-run.json to show the recovery',
      async () =>
        (await readRunState(t.ctx))?.policy?.failures === 0 &&
        (await readRunState(t.ctx))?.policy?.source === 'fetched',
    );
  });

  it('checks a policy without ttl_seconds again after 300 s, and says when in agent-run.json', async () => {
    stack.server.store.publishPolicy(
      { session_upload: { presign_url: `${stack.proxy.url}/session-uploads/presign` } },
      Date.now(),
    );
    // No jitter: the delay is the ttl itself.
    await start({ random: () => 0.5 });
    const checked = await waitFor('a policy check', () => lines('policy checked')[0]);
    expect(checked).toMatchObject({ ok: true, basis: 'ttl', next_check_in_ms: 300_000 });
    const state = await waitFor('agent-run.json with the policy', async () => (await readRunState(t.ctx))?.policy);
    expect(state.next_check_at_unix_ms - state.checked_at_unix_ms!).toBeGreaterThanOrEqual(300_000);
  });

  it('drains a new intake record at once, without waiting for the schedule', async () => {
    await start();
    await waitFor('the managed hook', async () => (await settingsText()).includes(MANAGED));
    const session = await claudeSession(path.join(t.home, '.claude'), {
      id: 'sess-daemon-1',
      cwd: t.home,
      prompt: 'hello',
    });
    const spool = await Spool.open(stateLayout(t.stateDir));
    await spool.enqueueIntake({
      harness: 'claude',
      profile: CLAUDE_PROFILE,
      payload: session.payload,
      createdAtUnixMs: Date.now(),
    });
    const uploads = await waitFor('the upload', async () => {
      if (process.env.DEBUG_DAEMON) console.log(out.text());
      const items = await stack.listUploads();
      return items.some((u) => u.status === 'complete') ? items : undefined;
    });
    expect(uploads).toHaveLength(1);
    const finished = await waitFor('the drain in the log', () => lines('drain finished')[0]);
    expect(finished).toMatchObject({ trigger: 'intake', ok: true, uploaded: 1 });
    const files = spoolFiles(t.stateDir);
    expect([...files.intake, ...files.building, ...files.ready]).toEqual([]);
    await waitFor('agent-run.json last_drain', async () => (await readRunState(t.ctx))?.last_drain?.uploaded === 1);
    const lastDrain = JSON.parse(await readFile(path.join(t.stateDir, 'last-drain.json'), 'utf8'));
    expect(lastDrain).toMatchObject({ ok: true, uploaded: 1 });
  });

  it('notices a harness installed later in the periodic full reconcile', async () => {
    const claude = path.join(t.bin, 'claude');
    await copyFile(claude, path.join(t.root, 'claude.saved'));
    await rm(claude);
    await start({ fullReconcileMs: 300 });
    await waitFor('a first reconcile', () => lines('reconciled')[0]);
    expect(lines('reconciled')[0]!.harnesses.claude).toEqual({ state: 'not_installed', action: 'unchanged' });
    await copyFile(path.join(t.root, 'claude.saved'), claude);
    await waitFor('the hook for the new harness', async () => (await settingsText()).includes(MANAGED));
    const updated = await waitFor(
      'the update in the log',
      () => lines('hooks updated', (l) => l.harness === 'claude')[0],
    );
    expect(updated).toMatchObject({ trigger: 'periodic', action: 'create', state: 'active' });
    expect(lines('drift corrected')).toEqual([]);
  });

  it('reloads the config: a new drain_schedule, and a bad file keeps the config in force', async () => {
    await mkdir(path.dirname(t.env.BLUE_AGENT_CONFIG!), { recursive: true });
    const d = await start({ drainSchedule: undefined });
    await waitFor('the first state', async () => (await readRunState(t.ctx))?.policy !== undefined);
    expect((await readRunState(t.ctx))!.drain_schedule).toBe('*/5 * * * *');
    await writeFile(t.env.BLUE_AGENT_CONFIG!, 'drain_schedule: "*/7 * * * *"\n');
    await d.reload();
    expect(lines('config reloaded')[0]).toMatchObject({ drain_schedule: '*/7 * * * *' });
    await writeFile(t.env.BLUE_AGENT_CONFIG!, 'drain_schedule: "every tuesday-ish"\n');
    await d.reload();
    expect(lines('config reload failed; keeping the config in force')[0]).toMatchObject({ level: 'error' });
    await waitFor(
      'state to keep the schedule',
      async () => (await readRunState(t.ctx))?.drain_schedule === '*/7 * * * *',
    );
    const next = (await readRunState(t.ctx))!.next_drain_at_unix_ms!;
    expect(new Date(next).getMinutes() % 7).toBe(0);
  });
});

describe('blue-agent run: policy push', () => {
  const PUSH: DaemonOptions = { policyPush: { backoffBaseMs: 100, backoffCapMs: 400 } };
  const HOUR = 3_600;

  it('reconciles a published revision at once, long before its ttl, through the event stream', async () => {
    stack.server.store.publishPolicy(uploadPolicy(stack.proxy.url, { ttl_seconds: HOUR }), Date.now());
    await start(PUSH);
    await waitFor('the managed hook', async () => (await settingsText()).includes(MANAGED));
    await waitFor('the stream', () => lines('policy event stream open')[0]);
    // The start is over once no check has been logged for a while (the stream's first event may have asked for one).
    let last = -1;
    let still = 0;
    await waitFor('the start to settle', async () => {
      const now = lines('policy checked').length;
      still = now === last ? still + 1 : 0;
      last = now;
      await sleep(200);
      return still >= 4;
    });
    const checksBefore = lines('policy checked').length;
    // The next ttl check is an hour away: only the stream can bring this revision in.
    const publishedAt = Date.now();
    const off = await stack.server.store.publishPolicy({ ttl_seconds: HOUR }, publishedAt);
    await waitFor('the managed hook to go', async () => !(await settingsText()).includes(MANAGED));
    await waitFor(
      'the reconcile',
      () => lines('reconciled', (l) => l.trigger === 'policy' && l.revision === off.revision)[0],
    );
    expect(lines('policy revision published', (l) => l.revision === off.revision)).toHaveLength(1);
    expect(lines('policy checked').length).toBe(checksBefore + 1);
    expect(lines('policy checked').at(-1)).toMatchObject({
      ok: true,
      revision: off.revision,
      basis: 'ttl',
      next_check_in_ms: expect.any(Number),
    });
    expect(lines('policy checked').at(-1)!.next_check_in_ms).toBeGreaterThan(3_000_000);
    // The stream asked for events with the agent's token, through the same Control API URL.
    expect(stack.proxy.seen.some((r) => r.path === '/governance-config/events' && r.fault === 'pass')).toBe(true);
  });

  it('opens the stream again after the server was away, and picks up what was published meanwhile', async () => {
    stack.server.store.publishPolicy(uploadPolicy(stack.proxy.url, { ttl_seconds: HOUR }), Date.now());
    await start(PUSH);
    await waitFor('the managed hook', async () => (await settingsText()).includes(MANAGED));
    await waitFor('the stream', () => lines('policy event stream open')[0]);
    // A revision the stream named while the first check ran makes one check more: let it finish, or it could be the
    // one that finds the next revision, not the stream.
    await waitFor(
      'the checks under way to finish',
      () => lines('policy checked').length >= 1 + lines('policy revision published').length,
    );
    await stack.proxy.stop();
    await waitFor(
      'the stream to be missed',
      () => lines('policy event stream unavailable; retrying (the ttl check goes on)')[0],
    );
    const off = await stack.server.store.publishPolicy({ ttl_seconds: HOUR }, Date.now());
    await sleep(500);
    // Said once, not once per retry.
    expect(lines('policy event stream unavailable; retrying (the ttl check goes on)')).toHaveLength(1);
    await stack.proxy.start();
    await waitFor('the managed hook to go', async () => !(await settingsText()).includes(MANAGED));
    expect(lines('policy event stream open').length).toBeGreaterThanOrEqual(2);
    expect(lines('policy revision published', (l) => l.revision === off.revision)).toHaveLength(1);
    // Retried on the short backoff these tests set (its cap), the first retry said at warn and the rest at debug.
    const retries = lines('policy event stream unavailable; retrying (the ttl check goes on)');
    expect(retries).toHaveLength(1);
    expect(retries[0]!.next_try_in_ms).toBeLessThanOrEqual(400);
    expect(stack.proxy.count('GET', /\/governance-config\/events$/)).toBeGreaterThanOrEqual(2);
  });

  it('falls back to the ttl check against a Control API without the stream', async () => {
    stack.proxy.rules.push({
      method: 'GET',
      path: /\/governance-config\/events$/,
      times: 1_000,
      action: { kind: 'answer', status: 404 },
    });
    await start(PUSH);
    await waitFor('the managed hook', async () => (await settingsText()).includes(MANAGED));
    const said = await waitFor(
      'the fallback',
      () => lines('the Control API has no policy event stream; checking on the ttl only')[0],
    );
    expect(said).toMatchObject({ status: 404, next_try_in_ms: 3_600_000 });
    // Polling (ttl 1 s) still brings a new revision in.
    await stack.server.store.publishPolicy({ ttl_seconds: 1 }, Date.now());
    await waitFor('the managed hook to go', async () => !(await settingsText()).includes(MANAGED));
    expect(lines('policy revision published')).toEqual([]);
    expect(stack.proxy.count('GET', /\/governance-config\/events$/)).toBe(1);
  });

  it('does not subscribe with push turned off', async () => {
    await start({ policyPush: false });
    await waitFor('the managed hook', async () => (await settingsText()).includes(MANAGED));
    await sleep(300);
    expect(stack.proxy.count('GET', /\/governance-config\/events$/)).toBe(0);
  });
});

describe('blue-agent run: changes no watch event reports', () => {
  /** The real step runner, counting the reconcile steps it starts. */
  function countingTasks(count: { reconciles: number }): DaemonOptions['tasks'] {
    return (ctx) => {
      const run = processTasks(ctx);
      const counted: TaskRunner = (request) => {
        if (request.task === 'reconcile') count.reconciles++;
        return run(request);
      };
      counted.stop = run.stop;
      return counted;
    };
  }

  it('repairs a rewrite made right after its write, before the watch was in place', async () => {
    let rewritten = false;
    // The watch is set up after the first reconcile's write; the harness rewrites its config in between.
    const watch: WatchFactory = async (files, onEvent, onError) => {
      if (!rewritten && (await settingsText()).includes(MANAGED)) {
        await writeFile(t.settings, '{\n  "theme": "dark"\n}\n');
        rewritten = true;
      }
      return nativeWatch(files, onEvent, onError);
    };
    await start({ watch });
    await waitFor('the rewrite', () => rewritten);
    await waitFor('the hook restored', async () => (await settingsText()).includes(MANAGED));
    expect(await settingsText()).toContain('"theme": "dark"');
    const corrected = await waitFor(
      'a drift correction in the log',
      () => lines('drift corrected', (l) => l.harness === 'claude')[0],
    );
    expect(corrected).toMatchObject({ trigger: 'drift', level: 'warn' });
  });

  it('the periodic check repairs a change whose event never came', async () => {
    const silent: WatchFactory = async () => ({ close: async () => undefined });
    await start({ watch: silent, driftCheckMs: 100 });
    await waitFor('the managed hook', async () => (await settingsText()).includes(MANAGED));
    await waitFor('the first reconcile', () => lines('reconciled')[0]);
    await unlink(t.settings);
    await waitFor('the hook restored', async () => (await settingsText()).includes(MANAGED));
    expect(lines('drift check found changed files')[0]).toMatchObject({ files: [path.resolve(t.settings)] });
    await waitFor(
      'a drift correction in the log',
      () => lines('drift corrected', (l) => l.harness === 'claude' && l.action === 'create')[0],
    );
  });

  it('the check only stats: nothing is started while every file is as the agent left it', async () => {
    const count = { reconciles: 0 };
    const silent: WatchFactory = async () => ({ close: async () => undefined });
    const d = await start({ watch: silent, driftCheckMs: 60 * 60_000, tasks: countingTasks(count) });
    await waitFor('the managed hook', async () => (await settingsText()).includes(MANAGED));
    await waitFor('the first reconcile', () => lines('reconciled')[0]);
    const before = count.reconciles;
    expect(await d.checkDrift()).toEqual([]);
    expect(await d.checkDrift()).toEqual([]);
    expect(count.reconciles).toBe(before);

    await writeUserHook('echo changed-behind-its-back');
    expect(await d.checkDrift()).toEqual([path.resolve(t.settings)]);
    // Handed on once: the next check does not report the same change again.
    expect(await d.checkDrift()).toEqual([]);
    await waitFor('a drift reconcile', () => lines('reconciled', (l) => l.trigger === 'drift')[0]);
    expect(count.reconciles).toBe(before + 1);
    expect(await d.checkDrift()).toEqual([]);
  });
});

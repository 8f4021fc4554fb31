import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { opencode } from '../../../src/harnesses/opencode/index.js';
import { isOurPlugin } from '../../../src/harnesses/opencode/plan.js';
import { PLUGIN_HEADER, renderPlugin, type PluginTimings } from '../../../src/harnesses/opencode/plugin.js';
import { buildManagedHook } from '../../../src/harness-kit/signature.js';
import type { ManagedHook } from '../../../src/harnesses/types.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';
import { makeTestHome, repoRoot, type TestHome } from '../../../../../test/support/context.js';
import { thrown } from '../../../../../test/support/errors.js';

const FILE = '/home/me/.config/opencode/plugin/blue-agent-session-upload.js';
const desired = buildManagedHook(
  { node: '/usr/local/bin/node', entry: '/opt/blue-agent/bin/blue-agent.js' },
  'opencode',
  'opencode-v1_2_0',
  'session.idle',
  10,
);

const interval: Interval = {
  profile: 'opencode-v1_2_0',
  introduced: '1.2.0',
  verified_before: '1.18.34-0',
  lifecycle: 'supported',
  operations: ['session_capture', 'session_resume'],
  capture: {
    event: 'session.idle',
    hook: { file: 'plugin/blue-agent-session-upload.js', format: 'opencode-plugin', timeout_seconds: 10 },
  },
};

function fixture(name: string): string {
  return readFileSync(path.join(repoRoot, 'fixtures', 'opencode', name), 'utf8');
}

describe('opencode adapter: locations', () => {
  let home: TestHome | undefined;
  afterEach(async () => {
    await home?.cleanup();
    home = undefined;
  });

  it('follows XDG_CONFIG_HOME when absolute, else ~/.config', async () => {
    home = await makeTestHome();
    const root = path.join(home.home, '.config', 'opencode');
    expect(opencode.configRoot(home.ctx)).toBe(root);
    const custom = path.join(home.root, 'xdg');
    expect(opencode.configRoot(home.context({ env: { XDG_CONFIG_HOME: custom } }))).toBe(path.join(custom, 'opencode'));
    expect(opencode.configRoot(home.context({ env: { XDG_CONFIG_HOME: 'relative' } }))).toBe(root);
    expect(opencode.configRoot(home.context({ env: { XDG_CONFIG_HOME: '' } }))).toBe(root);
  });

  it('puts the plugin where the profile says and knows both plugin folders', async () => {
    home = await makeTestHome();
    const root = opencode.configRoot(home.ctx);
    expect(await opencode.hookFile(home.ctx, interval)).toBe(path.join(root, 'plugin', 'blue-agent-session-upload.js'));
    expect(opencode.knownHookFiles(home.ctx)).toEqual([
      path.join(root, 'plugin', 'blue-agent-session-upload.js'),
      path.join(root, 'plugins', 'blue-agent-session-upload.js'),
    ]);
  });
});

describe('opencode planHook', () => {
  it('renders the plugin for a missing file, deterministically', () => {
    const result = opencode.planHook({ text: null, file: FILE, desired, owned: undefined });
    expect(result.text).toBe(renderPlugin(desired));
    expect(renderPlugin(desired)).toBe(renderPlugin({ ...desired, argv: [...desired.argv] }));
    expect(result.owned).toEqual({ whole_file: true });
    expect(result.managedFound).toBe(0);
    expect(result.text!.split('\n')[0]).toBe(PLUGIN_HEADER);
    expect(result.text).toContain(`const CAPTURE_ARGV = ${JSON.stringify(desired.argv)};`);
    expect(result.text).toContain('const CAPTURE_TIMEOUT_MS = 10000;');
    expect(isOurPlugin(result.text!)).toBe(true);
  });

  it('returns the same string when the plugin is already current', () => {
    const current = renderPlugin(desired);
    const result = opencode.planHook({ text: current, file: FILE, desired, owned: { whole_file: true } });
    expect(result.text).toBe(current);
    expect(result.managedFound).toBe(1);
  });

  it('rewrites a stale plugin of its own', () => {
    const stale = fixture('stale-plugin.js');
    expect(isOurPlugin(stale)).toBe(true);
    const result = opencode.planHook({ text: stale, file: FILE, desired, owned: undefined });
    expect(result.text).toBe(renderPlugin(desired));
    expect(result.managedFound).toBe(1);
    expect(result.owned).toEqual({ whole_file: true });
  });

  it('deletes its own plugin and leaves a missing one missing', () => {
    expect(
      opencode.planHook({ text: renderPlugin(desired), file: FILE, desired: null, owned: { whole_file: true } }),
    ).toEqual({
      text: null,
      owned: undefined,
      managedFound: 1,
    });
    expect(
      opencode.planHook({ text: fixture('stale-plugin.js'), file: FILE, desired: null, owned: undefined }).text,
    ).toBeNull();
    expect(opencode.planHook({ text: null, file: FILE, desired: null, owned: undefined })).toEqual({
      text: null,
      owned: undefined,
      managedFound: 0,
    });
  });

  for (const name of ['user-plugin.js', 'foreign-header.js']) {
    it(`never overwrites or deletes someone else's file (${name})`, () => {
      const theirs = fixture(name);
      expect(isOurPlugin(theirs)).toBe(false);
      const error = thrown(() => opencode.planHook({ text: theirs, file: FILE, desired, owned: { whole_file: true } }));
      expect(error.code).toBe('NATIVE_CONFIG_CONFLICT');
      expect(error.file).toBe(FILE);
      expect(error.hint).toBeTruthy();
      expect(opencode.planHook({ text: theirs, file: FILE, desired: null, owned: { whole_file: true } })).toEqual({
        text: theirs,
        owned: undefined,
        managedFound: 0,
      });
    });
  }

  it("says what sits in the way, and that the file stays the user's", () => {
    const error = thrown(() =>
      opencode.planHook({ text: fixture('user-plugin.js'), file: FILE, desired, owned: undefined }),
    );
    expect(error.message).toBe(
      'an OpenCode plugin that blue-agent did not write already sits where its capture plugin goes',
    );
    expect(error.hint).toMatch(/never overwrites it/);
  });

  it('needs both its header and its capture command to call a file its own', () => {
    const ours = renderPlugin(desired);
    const headless = ours.split('\n').slice(1).join('\n');
    expect(headless).toContain('const CAPTURE_ARGV = ');
    expect(isOurPlugin(headless)).toBe(false);
    expect(isOurPlugin(`// mine\n${ours}`)).toBe(false);
    expect(isOurPlugin(ours.replace(/^const CAPTURE_ARGV = .*$/m, ''))).toBe(false);
    const otherHarness = buildManagedHook(
      { node: '/usr/local/bin/node', entry: '/opt/blue-agent/bin/blue-agent.js' },
      'claude',
      'claude-v2_0_12',
      'SessionEnd',
      10,
    );
    expect(
      isOurPlugin(
        ours.replace(/^const CAPTURE_ARGV = .*$/m, `const CAPTURE_ARGV = ${JSON.stringify(otherHarness.argv)};`),
      ),
    ).toBe(false);
  });

  it('recognises its plugin with CRLF line breaks', () => {
    expect(isOurPlugin(renderPlugin(desired).replace(/\n/g, '\r\n'))).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The rendered plugin, run for real in Node against a recorder standing in for the agent.

const RECORDER = `import { appendFileSync, fstatSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
const here = path.dirname(fileURLToPath(import.meta.url));
const chunks = [];
process.stdin.on("data", (chunk) => chunks.push(chunk));
process.stdin.on("end", () => {
  const record = {
    argv: process.argv.slice(2),
    stdin: Buffer.concat(chunks).toString("utf8"),
    stdinIsFile: fstatSync(0).isFile(),
    cwd: process.cwd(),
    pid: process.pid,
  };
  appendFileSync(path.join(here, "records.jsonl"), JSON.stringify(record) + "\\n");
  if (process.argv.includes("--hang")) setInterval(() => {}, 1000);
});
`;

interface CaptureRecord {
  argv: string[];
  stdin: string;
  /** The payload came through a file, not a pipe whose last write can be lost when OpenCode exits. */
  stdinIsFile: boolean;
  cwd: string;
  pid: number;
}

interface Sandbox {
  root: string;
  project: string;
  fallback: string;
  hook: ManagedHook;
  records(): Promise<CaptureRecord[]>;
  load(hook: ManagedHook, timings: PluginTimings): Promise<{ module: Record<string, unknown>; file: string }>;
}

const sandboxes: string[] = [];
let loads = 0;

async function makeSandbox(): Promise<Sandbox> {
  const root = await mkdtemp(path.join(tmpdir(), 'blue-agent-opencode-'));
  sandboxes.push(root);
  const bin = path.join(root, 'bin');
  const project = path.join(root, 'project');
  const fallback = path.join(root, 'instance-dir');
  await Promise.all([mkdir(bin), mkdir(project), mkdir(fallback), mkdir(path.join(root, 'plugin'))]);
  await writeFile(path.join(root, 'package.json'), '{"type":"module"}\n');
  const recorder = path.join(bin, 'blue-agent.js');
  await writeFile(recorder, RECORDER, { mode: 0o755 });
  const hook = buildManagedHook(
    { node: process.execPath, entry: recorder },
    'opencode',
    'opencode-v1_2_0',
    'session.idle',
    10,
  );
  return {
    root,
    project,
    fallback,
    hook,
    async records() {
      const text = await readFile(path.join(bin, 'records.jsonl'), 'utf8').catch(() => '');
      return text
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as CaptureRecord);
    },
    async load(h, timings) {
      const file = path.join(root, 'plugin', `blue-agent-session-upload-${++loads}.js`);
      await writeFile(file, renderPlugin(h, timings));
      return { module: (await import(pathToFileURL(file).href)) as Record<string, unknown>, file };
    },
  };
}

afterEach(async () => {
  await Promise.all(sandboxes.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

type Hooks = { event(arg: unknown): Promise<unknown>; dispose(): Promise<unknown> };

async function start(
  sandbox: Sandbox,
  hook: ManagedHook,
  timings: PluginTimings,
  client: unknown = {},
): Promise<Hooks> {
  const { module } = await sandbox.load(hook, timings);
  const plugin = module.BlueAgentSessionUpload as (input: unknown) => Promise<Hooks>;
  return plugin({ directory: sandbox.fallback, worktree: sandbox.fallback, project: {}, client, $: undefined });
}

/**
 * True when `promise` settles before the event loop's next turn: it waited for no timer, no I/O and no child process
 * (OpenCode waits for its plugins' handlers). The same on any machine, however loaded.
 */
async function settlesAtOnce(promise: Promise<unknown>): Promise<boolean> {
  const nextTurn = new Promise<false>((resolve) => setImmediate(() => resolve(false)));
  return Promise.race([promise.then(() => true), nextTurn]);
}

/** Sends one event and checks the handler resolves at once and with nothing. */
async function send(hooks: Hooks, type: string, properties: unknown): Promise<void> {
  const handled = hooks.event({ event: { type, properties } });
  expect(await settlesAtOnce(handled)).toBe(true);
  await expect(handled).resolves.toBeUndefined();
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor<T>(probe: () => Promise<T | undefined>, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`nothing after ${ms} ms`);
    await sleep(25);
  }
}

const atLeast = (sandbox: Sandbox, n: number) => async () => {
  const records = await sandbox.records();
  return records.length >= n ? records : undefined;
};

function payload(sessionID: string, cwd: string): string {
  return JSON.stringify({ session_id: sessionID, cwd, hook_event_name: 'session.idle', reason: 'idle' }) + '\n';
}

describe('opencode plugin, executed', () => {
  it('exports exactly one plugin function, as OpenCode calls every export', async () => {
    const sandbox = await makeSandbox();
    const { module } = await sandbox.load(sandbox.hook, { debounceMs: 100, lookupTimeoutMs: 100 });
    expect(Object.keys(module)).toEqual(['BlueAgentSessionUpload']);
    expect(typeof module.BlueAgentSessionUpload).toBe('function');
  });

  it('captures an idle top-level session once, after the debounce, and skips child sessions', async () => {
    const sandbox = await makeSandbox();
    const childDir = path.join(sandbox.root, 'child');
    const lookups: unknown[] = [];
    const client = { session: { get: async (arg: unknown) => void lookups.push(arg) } };
    const hooks = await start(sandbox, sandbox.hook, { debounceMs: 400, lookupTimeoutMs: 200 }, client);

    await send(hooks, 'session.created', {
      sessionID: 'ses_child',
      info: { id: 'ses_child', parentID: 'ses_parent', directory: childDir },
    });
    await send(hooks, 'session.created', {
      sessionID: 'ses_parent',
      info: { id: 'ses_parent', directory: sandbox.project },
    });
    await send(hooks, 'session.idle', { sessionID: 'ses_parent' });
    await send(hooks, 'session.idle', { sessionID: 'ses_parent' });
    await send(hooks, 'session.idle', { sessionID: 'ses_child' });

    await sleep(100);
    expect(await sandbox.records()).toEqual([]);

    const [record] = await waitFor(atLeast(sandbox, 1), 10_000);
    await sleep(900);
    expect(await sandbox.records()).toHaveLength(1);
    expect(record!.argv).toEqual(sandbox.hook.argv.slice(2));
    expect(record!.stdin).toBe(payload('ses_parent', sandbox.project));
    expect(record!.stdinIsFile).toBe(true);
    expect(record!.cwd).toBe(await realpath(sandbox.project));
    expect(lookups).toEqual([]);
    await hooks.dispose();
  });

  it('restarts the debounce on a newer idle of the same session', async () => {
    const sandbox = await makeSandbox();
    // The debounce's end is seen as the lookup it starts for a session the plugin has not seen created. The answer
    // makes it a child session, so nothing is spawned. The plugin's timers are the test's: no wall clock involved.
    const fired: string[] = [];
    const client = {
      session: {
        get: async ({ path: { id } }: { path: { id: string } }) => (
          fired.push(id), { data: { id, parentID: 'ses_p' } }
        ),
      },
    };
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const hooks = await start(sandbox, sandbox.hook, { debounceMs: 500, lookupTimeoutMs: 100 }, client);
      await send(hooks, 'session.idle', { sessionID: 'ses_a' });
      await vi.advanceTimersByTimeAsync(300);
      expect(fired).toEqual([]);
      await send(hooks, 'session.idle', { sessionID: 'ses_a' });
      // 799 ms after the first idle: the first debounce would have ended at 500.
      await vi.advanceTimersByTimeAsync(499);
      expect(fired).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      expect(fired).toEqual(['ses_a']);
      // Once: the first idle's timer is gone, not merely late.
      await vi.advanceTimersByTimeAsync(60_000);
      expect(fired).toEqual(['ses_a']);
      await hooks.dispose();
    } finally {
      vi.useRealTimers();
    }
    expect(await sandbox.records()).toEqual([]);
  });

  it('asks OpenCode about sessions it has not seen, and captures when the answer does not come', async () => {
    const sandbox = await makeSandbox();
    const topDir = path.join(sandbox.root, 'top');
    await mkdir(topDir);
    const asked: string[] = [];
    const client = {
      session: {
        get(arg: { path: { id: string } }) {
          const id = arg.path.id;
          asked.push(id);
          if (id === 'ses_sub') return Promise.resolve({ data: { id, parentID: 'ses_top', directory: topDir } });
          if (id === 'ses_top') return Promise.resolve({ data: { id, directory: topDir }, error: undefined });
          if (id === 'ses_hang') return new Promise(() => {});
          throw new Error('server gone');
        },
      },
    };
    const hooks = await start(sandbox, sandbox.hook, { debounceMs: 100, lookupTimeoutMs: 300 }, client);
    for (const id of ['ses_sub', 'ses_top', 'ses_hang', 'ses_throw'])
      await send(hooks, 'session.idle', { sessionID: id });

    await waitFor(atLeast(sandbox, 3), 10_000);
    await sleep(600);
    const records = await sandbox.records();
    expect(records.map((r) => r.stdin).sort()).toEqual(
      [
        payload('ses_top', topDir),
        payload('ses_hang', sandbox.fallback),
        payload('ses_throw', sandbox.fallback),
      ].sort(),
    );
    expect(asked.sort()).toEqual(['ses_hang', 'ses_sub', 'ses_throw', 'ses_top']);
    await hooks.dispose();
  });

  it('forgets deleted sessions and their pending capture', async () => {
    const sandbox = await makeSandbox();
    const hooks = await start(sandbox, sandbox.hook, { debounceMs: 200, lookupTimeoutMs: 100 });
    await send(hooks, 'session.idle', { sessionID: 'ses_gone' });
    await send(hooks, 'session.deleted', { sessionID: 'ses_gone', info: { id: 'ses_gone' } });
    await sleep(800);
    expect(await sandbox.records()).toEqual([]);
    await hooks.dispose();
  });

  it('starts pending captures at once when OpenCode disposes the plugin', async () => {
    const sandbox = await makeSandbox();
    const hooks = await start(sandbox, sandbox.hook, { debounceMs: 60_000, lookupTimeoutMs: 100 });
    await send(hooks, 'session.created', { sessionID: 'ses_d', info: { id: 'ses_d', directory: sandbox.project } });
    await send(hooks, 'session.idle', { sessionID: 'ses_d' });
    // At once: the captures start without waiting for a timer, and the handler does not wait for them.
    expect(await settlesAtOnce(hooks.dispose())).toBe(true);
    const [record] = await waitFor(atLeast(sandbox, 1), 10_000);
    expect(record!.stdin).toBe(payload('ses_d', sandbox.project));
  });

  it('starts pending captures when the OpenCode process exits', async () => {
    const sandbox = await makeSandbox();
    const { file } = await sandbox.load(sandbox.hook, { debounceMs: 60_000, lookupTimeoutMs: 100 });
    const driver = path.join(sandbox.root, 'driver.js');
    await writeFile(
      driver,
      `import { BlueAgentSessionUpload } from ${JSON.stringify(pathToFileURL(file).href)};
const hooks = await BlueAgentSessionUpload({ directory: ${JSON.stringify(sandbox.project)}, client: {} });
await hooks.event({ event: { type: "session.idle", properties: { sessionID: "ses_exit" } } });
process.exit(0);
`,
    );
    // A driver that hung at exit would be killed by the timer below and fail the test.
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(process.execPath, [driver], { stdio: 'ignore' });
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error('driver did not exit'));
      }, 10_000);
      child.on('error', reject);
      child.on('exit', (exitCode) => {
        clearTimeout(timer);
        resolve(exitCode);
      });
    });
    expect(code).toBe(0);
    const [record] = await waitFor(atLeast(sandbox, 1), 10_000);
    expect(record!.stdin).toBe(payload('ses_exit', sandbox.project));
  });

  it('kills a capture that outlives the hook timeout', async () => {
    const sandbox = await makeSandbox();
    const hook: ManagedHook = { ...sandbox.hook, argv: [...sandbox.hook.argv, '--hang'], timeoutSeconds: 1 };
    const hooks = await start(sandbox, hook, { debounceMs: 60_000, lookupTimeoutMs: 100 });
    await send(hooks, 'session.idle', { sessionID: 'ses_slow' });
    await hooks.dispose();
    const [record] = await waitFor(atLeast(sandbox, 1), 10_000);
    const alive = () => {
      try {
        process.kill(record!.pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    expect(alive()).toBe(true);
    await waitFor(async () => (alive() ? undefined : true), 5_000);
  });

  it('never throws into OpenCode, whatever it is given', async () => {
    const sandbox = await makeSandbox();
    const missing: ManagedHook = {
      ...sandbox.hook,
      argv: [path.join(sandbox.root, 'no-such-node'), ...sandbox.hook.argv.slice(1)],
    };
    const { module } = await sandbox.load(missing, { debounceMs: 50, lookupTimeoutMs: 50 });
    const plugin = module.BlueAgentSessionUpload as (input: unknown) => Promise<Hooks>;
    const hooks = await plugin(undefined);
    for (const arg of [
      undefined,
      null,
      {},
      { event: null },
      { event: { type: 'session.idle' } },
      { event: { type: 'session.idle', properties: { sessionID: 42 } } },
    ]) {
      await expect(hooks.event(arg)).resolves.toBeUndefined();
    }
    await send(hooks, 'session.created', { info: null });
    await send(hooks, 'session.idle', { sessionID: 'ses_x' });
    await send(hooks, 'session.idle', { sessionID: 'ses_y' });
    await hooks.dispose();
    await sleep(300);
    expect(await sandbox.records()).toEqual([]);
  });
});

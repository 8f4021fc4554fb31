/**
 * The sh capture hook (bin/blue-agent-hook) as harnesses run it, and the drain's admission of what it hands over
 * (src/capture/inbox.ts). The hook: the payload's bytes unchanged in a private inbox file, the drain started detached,
 * its own refusals on stderr and in capture.log, a stdin that never closes, a machine without `timeout`, no absolute
 * HOME, SIGKILL at any point. The admission: what `capture` accepts becomes the same intake record, what it refuses is
 * refused with a log line, and a drain that dies while admitting loses nothing and doubles nothing.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import {
  chmod,
  link,
  lstat,
  mkdir,
  readdir,
  readFile,
  rename,
  stat,
  symlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { admitHookCaptures, HOOK_FORMAT } from '../../src/capture/inbox.js';
import { MAX_PAYLOAD_BYTES } from '../../src/capture/payload.js';
import { Spool, type SpoolRecord } from '../../src/spool/index.js';
import { agentRoot, makeTestHome, type TestHome } from '../../../../test/support/context.js';
import { captureLog, CLAUDE_PROFILE, ENTRY, readJson, spoolFiles } from '../../../../test/support/cli-process.js';

const HOOK = path.join(agentRoot, 'bin', 'blue-agent-hook');
const SESSION = 'a1b2c3d4-0000-4000-8000-000000000001';

let t: TestHome;
let stateDir: string;
let inbox: string;
/** Stands in for Node in the hook's command: records how the hook started it (argv, stdin), and starts nothing. */
let fakeNode: string;
let fakeNodeLog: string;

beforeEach(async () => {
  t = await makeTestHome();
  stateDir = t.env.BLUE_AGENT_HOME!;
  inbox = path.join(stateDir, 'spool', 'inbox');
  fakeNode = path.join(t.root, 'node');
  fakeNodeLog = path.join(t.root, 'node.log');
  await writeFile(
    fakeNode,
    `#!/bin/sh\nprintf '%s\\n' "$*" >>'${fakeNodeLog}'\nif [ "$2" = capture ]; then cat >>'${fakeNodeLog}'; fi\n`,
    { mode: 0o755 },
  );
});
afterEach(async () => {
  await t.cleanup();
});

interface HookRun {
  code: number | null;
  stderr: string;
}

interface HookOptions {
  args?: string[];
  env?: Record<string, string | undefined>;
  keepOpen?: boolean;
  node?: string;
  /** Writes the input in pieces of this many bytes, each once the one before is in the pipe (reads come back short). */
  pieceBytes?: number;
  /** Keeps writing `text` every `everyMs` until the hook exits (a writer that never ends). */
  trickle?: { text: string; everyMs: number };
}

function runHook(input: string | Buffer | undefined, options: HookOptions = {}): Promise<HookRun> & { pid: number } {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries({ ...t.env, ...options.env })) if (value !== undefined) env[key] = value;
  const args = options.args ?? ['capture', '--harness', 'claude', '--profile', CLAUDE_PROFILE];
  const child = spawn('/bin/sh', [HOOK, options.node ?? fakeNode, ENTRY, ...args], {
    env,
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  let stderr = '';
  let exited = false;
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  child.stdin.on('error', () => undefined);
  const write = async (): Promise<void> => {
    const bytes = input === undefined ? Buffer.alloc(0) : Buffer.from(input);
    const piece = options.pieceBytes ?? Math.max(1, bytes.length);
    for (let at = 0; at < bytes.length && !exited; at += piece) {
      await new Promise<void>((resolve) => child.stdin.write(bytes.subarray(at, at + piece), () => resolve()));
    }
    // Ends with the hook, which stops reading within seconds; bounded all the same.
    const trickle = options.trickle;
    for (let round = 0; trickle !== undefined && !exited && round < 1000; round++) {
      child.stdin.write(trickle.text);
      await new Promise((r) => setTimeout(r, trickle.everyMs));
    }
    if (options.keepOpen !== true) child.stdin.end();
  };
  const done = new Promise<HookRun>((resolve) =>
    child.on('close', (code) => {
      exited = true;
      resolve({ code, stderr });
    }),
  );
  void write();
  return Object.assign(done, { pid: child.pid! });
}

async function inboxFiles(): Promise<string[]> {
  return existsSync(inbox) ? (await readdir(inbox)).sort() : [];
}

/** The hook started `NODE ENTRY drain --quiet --linger` once (the fake node records it; it may take a moment). */
async function expectDrainStarted(times = 1): Promise<void> {
  const deadline = Date.now() + 10_000;
  let lines: string[] = [];
  while (Date.now() < deadline) {
    lines = existsSync(fakeNodeLog) ? (await readFile(fakeNodeLog, 'utf8')).split('\n').filter((l) => l !== '') : [];
    if (lines.length >= times) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  expect(lines).toEqual(Array.from({ length: times }, () => `${ENTRY} drain --quiet --linger`));
}

/** What a drain does first: admit the inbox, remove temp files of writers that are gone. */
async function admit() {
  const spool = await Spool.open(t.ctx.paths);
  const admitted = await admitHookCaptures(t.ctx, spool);
  await spool.removeOrphanTemps();
  return admitted;
}

function intakeRecords(): SpoolRecord[] {
  return spoolFiles(stateDir).intake.map((name) => readJson<SpoolRecord>(path.join(stateDir, 'spool', 'intake', name)));
}

describe('the hook hands the payload over', () => {
  it('keeps the payload byte for byte in a 0600 file of a 0700 inbox, prints nothing, exits 0, drains', async () => {
    // Braces and quotes inside strings, multi-byte characters, no final newline: nothing is re-encoded.
    const payload =
      `{"session_id":"${SESSION}","cwd":"/w/é {x}","hook_event_name":"SessionEnd","reason":"say ` + `\\"}\\" ✓"}`;
    const result = await runHook(payload);
    expect(result).toEqual({ code: 0, stderr: '' });
    const files = await inboxFiles();
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^\d+-0\.hook$/);
    const file = path.join(inbox, files[0]!);
    const bytes = await readFile(file);
    const end = bytes.indexOf('\n\n') + 2;
    expect(bytes.subarray(0, end).toString('utf8')).toMatch(
      new RegExp(
        `^${HOOK_FORMAT}\\nharness=claude\\nprofile=${CLAUDE_PROFILE}\\nparent=\\d+\\n(wait=\\d+ \\d+\\n)?\\n$`,
      ),
    );
    expect(bytes.subarray(end).toString('utf8')).toBe(payload);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    for (const dir of [stateDir, path.join(stateDir, 'spool'), inbox])
      expect((await stat(dir)).mode & 0o777).toBe(0o700);
    await expectDrainStarted();
  });

  it('a payload of exactly 1 MiB, written in small pieces, is handed over byte for byte', async () => {
    // A pattern whose period divides no block size: a block lost, doubled or out of order would show.
    const payload = Buffer.alloc(MAX_PAYLOAD_BYTES);
    for (let i = 0; i < payload.length; i++) payload[i] = 0x61 + (i % 26);
    payload.write(`{"session_id":"${SESSION}","reason":"`);
    payload.write('"}', MAX_PAYLOAD_BYTES - 2);
    expect(await runHook(payload, { pieceBytes: 1000 })).toEqual({ code: 0, stderr: '' });
    const files = await inboxFiles();
    expect(files).toHaveLength(1);
    const bytes = await readFile(path.join(inbox, files[0]!));
    const kept = bytes.subarray(bytes.indexOf('\n\n') + 2);
    expect(kept.length).toBe(MAX_PAYLOAD_BYTES);
    expect(Buffer.compare(kept, payload)).toBe(0);
  });

  it('is admitted by the drain as the same intake record `capture` writes, and logged as spooled', async () => {
    const transcript = path.join(t.home, '.claude', 'projects', 'x', `${SESSION}.jsonl`);
    const payload = {
      session_id: SESSION,
      transcript_path: transcript,
      cwd: t.home,
      hook_event_name: 'SessionEnd',
      reason: 'other',
      prompt: 'never kept',
    };
    expect(await runHook(`${JSON.stringify(payload)}\n`)).toEqual({ code: 0, stderr: '' });
    const admitted = await admit();
    expect(admitted).toMatchObject({ refused: 0 });
    expect(admitted.admitted).toHaveLength(1);
    const [record] = intakeRecords();
    expect(record).toMatchObject({
      id: admitted.admitted[0],
      harness: 'claude',
      profile: CLAUDE_PROFILE,
      payload: {
        session_id: SESSION,
        transcript_path: transcript,
        cwd: t.home,
        hook_event_name: 'SessionEnd',
        reason: 'other',
      },
      attempts: 0,
    });
    expect(JSON.stringify(record)).not.toContain('never kept');
    expect(await inboxFiles()).toEqual([]);
    expect(captureLog(stateDir)).toEqual([
      expect.objectContaining({
        event: 'spooled',
        harness: 'claude',
        profile: CLAUDE_PROFILE,
        session_id: SESSION,
        record: record!.id,
        worker_pid: process.pid,
        hook_pid: expect.any(Number),
      }),
    ]);
  });

  it('with the real entry, the drain it starts admits and builds the capture by itself', async () => {
    const result = await runHook(JSON.stringify({ session_id: SESSION, cwd: t.home, hook_event_name: 'SessionEnd' }), {
      node: process.execPath,
    });
    expect(result).toEqual({ code: 0, stderr: '' });
    const deadline = Date.now() + 20_000;
    while (
      !captureLog(stateDir).some((l) => ['built', 'build_failed', 'retry', 'unchanged'].includes(String(l.event))) &&
      Date.now() < deadline
    ) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const events = captureLog(stateDir).map((l) => l.event);
    expect(events[0]).toBe('spooled');
    expect(events.length).toBeGreaterThan(1);
    expect(await inboxFiles()).toEqual([]);
  });

  it("the drain outlives a harness that ends the hook's process group the moment the hook exits", async () => {
    const env: Record<string, string> = { ...t.env };
    const child = spawn(
      '/bin/sh',
      [HOOK, process.execPath, ENTRY, 'capture', '--harness', 'claude', '--profile', CLAUDE_PROFILE],
      { env, stdio: ['pipe', 'ignore', 'ignore'], detached: true },
    );
    const exited = new Promise<number | null>((resolve) =>
      child.on('exit', (code) => {
        // What a process runner that cleans up after its child does: everything left in the child's group goes.
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // The group is empty.
        }
        resolve(code);
      }),
    );
    child.stdin.end(JSON.stringify({ session_id: SESSION, cwd: t.home, hook_event_name: 'SessionEnd' }));
    expect(await exited).toBe(0);
    const deadline = Date.now() + 20_000;
    while (!captureLog(stateDir).some((l) => l.event === 'spooled') && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    expect(captureLog(stateDir)).toContainEqual(expect.objectContaining({ event: 'spooled', session_id: SESSION }));
  });

  it("the drain it starts holds none of the harness's descriptors: a pipe left open on fd 3 is not kept", async () => {
    // A stand-in for Node that records which descriptors it was started with.
    const fdsNode = path.join(t.root, 'fds-node');
    const fdsLog = path.join(t.root, 'fds.log');
    await writeFile(fdsNode, `#!/bin/sh\nls /proc/$$/fd >'${fdsLog}.tmp' && mv '${fdsLog}.tmp' '${fdsLog}'\n`, {
      mode: 0o755,
    });
    const env: Record<string, string> = { ...t.env };
    const child = spawn(
      '/bin/sh',
      [HOOK, fdsNode, ENTRY, 'capture', '--harness', 'claude', '--profile', CLAUDE_PROFILE],
      { env, stdio: ['pipe', 'ignore', 'ignore', 'pipe'] },
    );
    child.stdin!.end(JSON.stringify({ session_id: SESSION }));
    expect(await new Promise((resolve) => child.on('exit', resolve))).toBe(0);
    const deadline = Date.now() + 10_000;
    while (!existsSync(fdsLog) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const fds = (await readFile(fdsLog, 'utf8')).split('\n').filter((l) => l !== '');
    expect(fds).not.toContain('3');
    expect(fds).toEqual(expect.arrayContaining(['0', '1', '2']));
  });

  it('returns when the payload is in, even while the writer keeps stdin open; the drain judges what came', async () => {
    const result = runHook(JSON.stringify({ session_id: SESSION }), { keepOpen: true });
    expect(await result).toEqual({ code: 0, stderr: '' });
    expect(await admit()).toMatchObject({ refused: 0, admitted: [expect.any(String)] });
    expect(intakeRecords()[0]!.payload).toEqual({ session_id: SESSION });
  });

  it('a payload still incomplete when the hook stops reading is refused by the drain, naming why', async () => {
    expect(await runHook('{"session_id": "abc', { keepOpen: true })).toEqual({ code: 0, stderr: '' });
    expect(await admit()).toMatchObject({ refused: 1, admitted: [] });
    expect(captureLog(stateDir)).toEqual([
      expect.objectContaining({
        event: 'refused',
        code: 'CAPTURE_REFUSED',
        harness: 'claude',
        reason: expect.stringContaining('not complete when the hook stopped reading'),
      }),
    ]);
    expect(await inboxFiles()).toEqual([]);
  });

  it('works the same where `timeout` is missing (its own deadline instead)', async () => {
    const bin = path.join(t.root, 'bin-no-timeout');
    await mkdir(bin);
    for (const tool of ['dd', 'wc', 'mv', 'rm', 'mkdir', 'sleep', 'kill', 'date', 'setsid', 'uname']) {
      const found = ['/usr/bin', '/bin'].map((d) => path.join(d, tool)).find((f) => existsSync(f));
      if (found !== undefined) await symlink(found, path.join(bin, tool));
    }
    const env = { PATH: bin };
    expect(await runHook(JSON.stringify({ session_id: SESSION }), { env })).toEqual({ code: 0, stderr: '' });
    expect(await runHook('{"session_id":"x"', { env, keepOpen: true })).toEqual({ code: 0, stderr: '' });
    expect(await runHook(Buffer.alloc(MAX_PAYLOAD_BYTES + 1, 0x20), { env, pieceBytes: 1000 })).toEqual({
      code: 1,
      stderr: expect.stringMatching(/larger than 1048576 bytes/),
    });
    expect(
      await runHook('{"session_id":"x","reason":"', { env, trickle: { text: 'x'.repeat(64), everyMs: 100 } }),
    ).toEqual({ code: 1, stderr: expect.stringMatching(/still coming/) });
    expect(await admit()).toMatchObject({ refused: 1, admitted: [expect.any(String)] });
    await expectDrainStarted(2);
  });

  it('without BLUE_AGENT_HOME or an absolute HOME, runs `NODE ENTRY capture ...`, payload on stdin', async () => {
    const payload = JSON.stringify({ session_id: SESSION });
    expect(await runHook(payload, { env: { BLUE_AGENT_HOME: undefined, HOME: 'relative/home' } })).toEqual({
      code: 0,
      stderr: '',
    });
    expect(await readFile(fakeNodeLog, 'utf8')).toBe(
      `${ENTRY} capture --harness claude --profile ${CLAUDE_PROFILE}\n${payload}`,
    );
    expect(await inboxFiles()).toEqual([]);
  });

  it("takes a state folder that is a link to a folder of the user's, as blue-agent does", async () => {
    const real = path.join(t.root, 'real-state');
    await mkdir(real, { mode: 0o700 });
    const linked = path.join(t.root, 'linked-state');
    await symlink(real, linked);
    expect(await runHook(JSON.stringify({ session_id: SESSION }), { env: { BLUE_AGENT_HOME: linked } })).toEqual({
      code: 0,
      stderr: '',
    });
    expect(await readdir(path.join(real, 'spool', 'inbox'))).toHaveLength(1);
  });

  it('finds the state folder as blue-agent does: XDG_STATE_HOME, else ~/.local/state', async () => {
    const xdg = path.join(t.root, 'xdg-state');
    expect(
      await runHook(JSON.stringify({ session_id: SESSION }), {
        env: { BLUE_AGENT_HOME: undefined, XDG_STATE_HOME: xdg },
      }),
    ).toEqual({ code: 0, stderr: '' });
    expect(await readdir(path.join(xdg, 'blue-agent', 'spool', 'inbox'))).toHaveLength(1);
    expect(
      await runHook(JSON.stringify({ session_id: SESSION }), {
        env: { BLUE_AGENT_HOME: undefined, XDG_STATE_HOME: 'relative' },
      }),
    ).toEqual({ code: 0, stderr: '' });
    expect(await readdir(path.join(t.home, '.local', 'state', 'blue-agent', 'spool', 'inbox'))).toHaveLength(1);
  });
});

describe('what the hook refuses itself: one line on stderr, one in capture.log, exit 1, nothing handed over', () => {
  const cases: {
    name: string;
    input: string | Buffer;
    args?: string[];
    writer?: Pick<HookOptions, 'pieceBytes' | 'trickle'>;
    reason: RegExp;
  }[] = [
    { name: 'an empty payload', input: '', reason: /the payload on stdin is empty/ },
    {
      name: 'a payload over 1 MiB',
      input: Buffer.alloc(MAX_PAYLOAD_BYTES + 1, 0x20),
      reason: /larger than 1048576 bytes/,
    },
    // Each read returns what the pipe holds: however short, the reading goes on to the end or past the bound.
    {
      name: 'a payload over 1 MiB written in small pieces',
      input: Buffer.alloc(MAX_PAYLOAD_BYTES + 1, 0x20),
      writer: { pieceBytes: 1000 },
      reason: /larger than 1048576 bytes/,
    },
    // A writer still sending is refused whatever it had sent by then: so is any payload over 1 MiB, however slow.
    {
      name: 'a payload still coming when the hook stops reading (a piece every few milliseconds)',
      input: `{"session_id":"${SESSION}","reason":"`,
      writer: { trickle: { text: 'x'.repeat(64), everyMs: 5 } },
      reason: /still coming when the hook stopped reading/,
    },
    {
      name: 'a payload still coming when the hook stops reading (a piece every tenth of a second)',
      input: `{"session_id":"${SESSION}","reason":"`,
      writer: { trickle: { text: 'x'.repeat(64), everyMs: 100 } },
      reason: /still coming when the hook stopped reading/,
    },
    {
      name: 'no --profile',
      input: '{}',
      args: ['capture', '--harness', 'claude'],
      reason: /--harness and --profile are required/,
    },
    {
      name: 'an unknown flag',
      input: '{}',
      args: ['capture', '--harness', 'claude', '--profile', 'p', '--x'],
      reason: /usage: sh blue-agent-hook/,
    },
    {
      name: 'a harness that is not a name',
      input: '{}',
      args: ['capture', '--harness', '../x', '--profile', 'p'],
      reason: /the harness name must be letters/,
    },
    {
      name: 'a profile that is not a name',
      input: '{}',
      args: ['capture', '--harness', 'claude', '--profile', 'p"}{'],
      reason: /the profile name must be letters/,
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const result = await runHook(c.input, { ...c.writer, ...(c.args === undefined ? {} : { args: c.args }) });
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^blue-agent capture: refused: .*\n$/);
      expect(result.stderr).toMatch(c.reason);
      const log = captureLog(stateDir);
      expect(log).toEqual([
        expect.objectContaining({
          event: 'refused',
          code: 'CAPTURE_REFUSED',
          reason: expect.stringMatching(c.reason),
          pid: expect.any(Number),
        }),
      ]);
      // A name that is not one never reaches the log as it was given.
      expect(JSON.stringify(log)).not.toMatch(/\.\.\/x|p"\}\{/);
      expect(await inboxFiles()).toEqual([]);
      expect(existsSync(fakeNodeLog)).toBe(false);
    });
  }

  it(
    "takes nothing of the caller's environment for its own: a file named by `tmp` is not removed, a process named " +
      'by `clock` not stopped',
    async () => {
      const kept = path.join(t.root, 'kept');
      await writeFile(kept, 'kept');
      const bystander = spawn('sleep', ['60'], { stdio: 'ignore' });
      try {
        const result = await runHook('{}', {
          args: ['capture', '--harness', 'claude', '--profile', 'p', '--x'],
          env: { tmp: kept, clock: String(bystander.pid) },
        });
        expect(result.code).toBe(1);
        // A signal the hook sent would have been reaped with the hook's own exit.
        await new Promise((r) => setImmediate(r));
        expect(bystander.signalCode).toBeNull();
        expect(await readFile(kept, 'utf8')).toBe('kept');
      } finally {
        bystander.kill();
      }
    },
  );

  it('an inbox that is a symbolic link', async () => {
    const elsewhere = path.join(t.root, 'elsewhere');
    await mkdir(elsewhere, { mode: 0o700 });
    await mkdir(path.join(stateDir, 'spool'), { recursive: true, mode: 0o700 });
    await symlink(elsewhere, inbox);
    const result = await runHook(JSON.stringify({ session_id: SESSION }));
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/refused: a spool folder is not yours or is a link.*\(.*inbox\)\n$/);
    expect(await readdir(elsewhere)).toEqual([]);
  });

  it('a state folder it cannot write (the temp file cannot be made)', async () => {
    if (process.getuid?.() === 0) return; // root writes anywhere: nothing to refuse
    await mkdir(inbox, { recursive: true, mode: 0o700 });
    await chmod(inbox, 0o500);
    const result = await runHook(JSON.stringify({ session_id: SESSION }));
    await chmod(inbox, 0o700);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/could not be written/);
  });
});

describe('what the drain refuses when it admits', () => {
  const cases: { name: string; payload: string; args?: string[]; reason: RegExp }[] = [
    { name: 'not JSON', payload: 'session_id=x', reason: /not a JSON object/ },
    { name: 'no session_id', payload: '{"cwd":"/x"}', reason: /no session_id string/ },
    { name: 'a session id with a path in it', payload: '{"session_id":"../../etc"}', reason: /session_id/ },
    {
      name: 'a relative transcript_path',
      payload: `{"session_id":"${SESSION}","transcript_path":"x.jsonl"}`,
      reason: /transcript_path must be an absolute path/,
    },
    {
      name: 'an unknown harness',
      payload: `{"session_id":"${SESSION}"}`,
      args: ['capture', '--harness', 'emacs', '--profile', CLAUDE_PROFILE],
      reason: /unknown harness "emacs"/,
    },
    {
      name: 'an unknown profile',
      payload: `{"session_id":"${SESSION}"}`,
      args: ['capture', '--harness', 'claude', '--profile', 'claude-v0'],
      reason: /unknown compatibility profile "claude-v0"/,
    },
    {
      name: "another harness's profile",
      payload: `{"session_id":"${SESSION}"}`,
      args: ['capture', '--harness', 'codex', '--profile', CLAUDE_PROFILE],
      reason: /belongs to claude, not to codex/,
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      expect(await runHook(c.payload, c.args === undefined ? {} : { args: c.args })).toEqual({ code: 0, stderr: '' });
      expect(await admit()).toEqual({ admitted: [], refused: 1 });
      expect(captureLog(stateDir)).toEqual([
        expect.objectContaining({
          event: 'refused',
          code: 'CAPTURE_REFUSED',
          reason: expect.stringMatching(c.reason),
          hook_pid: expect.any(Number),
        }),
      ]);
      expect(await inboxFiles()).toEqual([]);
      expect(intakeRecords()).toEqual([]);
    });
  }

  it(
    'a file not written by the hook, a FIFO, a link and a folder under hook file names: each refused and removed, ' +
      'the rest admitted',
    async () => {
      await mkdir(inbox, { recursive: true, mode: 0o700 });
      await writeFile(path.join(inbox, '1-0.hook'), `something else\n\n{"session_id":"${SESSION}"}`);
      await mkfifo(path.join(inbox, '2-0.hook'));
      const target = path.join(t.root, 'elsewhere.json');
      await writeFile(target, 'kept');
      await symlink(target, path.join(inbox, '3-0.hook'));
      await mkdir(path.join(inbox, '4-0.hook', 'inside'), { recursive: true });
      expect(await runHook(JSON.stringify({ session_id: SESSION }))).toEqual({ code: 0, stderr: '' });
      expect(await admit()).toMatchObject({ admitted: [expect.any(String)], refused: 4 });
      expect(captureLog(stateDir).map((l) => l.reason)).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/does not start with blue-agent-hook-v1/),
          expect.stringMatching(/not a file/),
          expect.stringMatching(/ELOOP/),
        ]),
      );
      expect(await inboxFiles()).toEqual([]);
      expect(await readFile(target, 'utf8')).toBe('kept');
    },
  );

  it(
    'a transient failure (profiles that cannot be read) gives the file back for the next drain, and stops nothing ' +
      'else',
    async () => {
      expect(await runHook(JSON.stringify({ session_id: SESSION }))).toEqual({ code: 0, stderr: '' });
      const [name] = await inboxFiles();
      const broken = t.context({ env: { BLUE_AGENT_PROFILES_DIR: path.join(t.root, 'no-profiles') } });
      expect(await admitHookCaptures(broken, await Spool.open(broken.paths))).toEqual({ admitted: [], refused: 0 });
      expect(await inboxFiles()).toEqual([name]);
      expect(captureLog(stateDir)).toEqual([
        expect.objectContaining({ event: 'failed', reason: expect.stringContaining('not admitted yet') }),
      ]);
      expect(await admit()).toMatchObject({ admitted: [expect.any(String)], refused: 0 });
    },
  );
});

// mkfifo is not in node:fs; a small shim through the mkfifo(1) program.
async function mkfifo(file: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const child = spawn('mkfifo', [file]);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`mkfifo exited ${code}`))));
  });
}

describe('crashes', () => {
  it('a hook killed at any point hands over a whole payload or nothing; the next drain removes its temp', async () => {
    const payload = JSON.stringify({
      session_id: SESSION,
      cwd: t.home,
      hook_event_name: 'SessionEnd',
      reason: 'x'.repeat(100),
    });
    let completed = 0;
    for (let round = 0; round < 30; round++) {
      // The hook takes a few milliseconds: kills land before, during and after its writes.
      const run = runHook(payload);
      await new Promise((r) => setTimeout(r, round % 10));
      try {
        process.kill(run.pid, 'SIGKILL');
      } catch {
        // It had finished.
      }
      if ((await run).code === 0) completed++;
    }
    const handedOver = (await inboxFiles()).filter((n) => n.endsWith('.hook'));
    expect(handedOver.length).toBeGreaterThanOrEqual(completed);
    // Every file in place is whole: each one is admitted, none refused as cut short.
    const report = await admit();
    expect(report).toMatchObject({ refused: 0 });
    expect(report.admitted).toHaveLength(handedOver.length);
    for (const record of intakeRecords()) expect(record.payload.session_id).toBe(SESSION);
    // The killed hooks' temp files are gone with them.
    expect(await inboxFiles()).toEqual([]);
  });

  it('a drain that died while admitting: its claim is taken over; a record it wrote is not written again', async () => {
    expect(await runHook(JSON.stringify({ session_id: SESSION }))).toEqual({ code: 0, stderr: '' });
    const [name] = await inboxFiles();
    const base = name!.replace(/\.hook$/, '');
    // A dead drain's claim (pid 2^22 + 1 is above Linux's pid_max default range used by tests; it does not run).
    const dead = 4_194_305;
    const keep = path.join(t.root, 'kept');
    await link(path.join(inbox, name!), keep);
    const { mtimeMs } = await lstat(keep);
    await rename(path.join(inbox, name!), path.join(inbox, `${base}.${dead}.admit`));
    const first = await admit();
    expect(first.admitted).toHaveLength(1);
    expect(intakeRecords()).toHaveLength(1);

    // The same file again, as if that drain had died after writing the record but before removing its claim.
    await rename(keep, path.join(inbox, `${base}.${dead}.admit`));
    await utimes(path.join(inbox, `${base}.${dead}.admit`), mtimeMs / 1000, mtimeMs / 1000);
    expect(await admit()).toEqual({ admitted: [], refused: 0 });
    expect(intakeRecords()).toHaveLength(1);
    expect(await inboxFiles()).toEqual([]);
  });

  it(
    "a dead drain's claim and a new hand-over under the same name (the hook's pid reused) are both admitted, " +
      'neither lost',
    async () => {
      expect(await runHook(JSON.stringify({ session_id: SESSION }))).toEqual({ code: 0, stderr: '' });
      const [name] = await inboxFiles();
      const base = name!.replace(/\.hook$/, '');
      await rename(path.join(inbox, name!), path.join(inbox, `${base}.4194305.admit`));
      const other = 'b1b2c3d4-0000-4000-8000-000000000002';
      await writeFile(
        path.join(inbox, name!),
        `${HOOK_FORMAT}\nharness=claude\nprofile=${CLAUDE_PROFILE}\nparent=1\n\n` +
          `${JSON.stringify({ session_id: other })}`,
      );
      expect((await admit()).admitted).toHaveLength(1);
      expect((await admit()).admitted).toHaveLength(1);
      expect(
        intakeRecords()
          .map((r) => r.payload.session_id)
          .sort(),
      ).toEqual([SESSION, other].sort());
      expect(await inboxFiles()).toEqual([]);
    },
  );

  it("a claim older than any admission takes is a dead drain's, even when its pid runs again", async () => {
    expect(await runHook(JSON.stringify({ session_id: SESSION }))).toEqual({ code: 0, stderr: '' });
    const [name] = await inboxFiles();
    await rename(path.join(inbox, name!), path.join(inbox, name!.replace(/\.hook$/, `.${process.ppid}.admit`)));
    const later = await Spool.open(t.ctx.paths, { now: () => Date.now() + 11 * 60_000 });
    expect((await admitHookCaptures(t.ctx, later)).admitted).toHaveLength(1);
  });

  it("a live drain's claim is left to it", async () => {
    expect(await runHook(JSON.stringify({ session_id: SESSION }))).toEqual({ code: 0, stderr: '' });
    const [name] = await inboxFiles();
    // This test process plays the live drain on another admission: its pid runs, but it is not this Spool's own claim.
    const live = process.ppid;
    await rename(path.join(inbox, name!), path.join(inbox, name!.replace(/\.hook$/, `.${live}.admit`)));
    expect(await admit()).toEqual({ admitted: [], refused: 0 });
    expect(await inboxFiles()).toHaveLength(1);
  });
});

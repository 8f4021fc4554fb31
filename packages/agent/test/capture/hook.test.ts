/**
 * The capture hook as harnesses run it: the built CLI as a real process, the payload on stdin. What it accepts from
 * each harness, what it refuses (one line on stderr, exit 1, logged without secrets), that it returns whatever the
 * transcript or the behaviour of stdin (never opening the one, never waiting for the other's end), and what it leaves
 * in the spool. How fast it returns is measured against bare Node start-up in bench/capture.mjs.
 */
import { execFileSync } from 'node:child_process';
import { chmod, cp, lstat, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MIN_READ_WINDOW_MS, PAYLOAD_DEADLINE_MS } from '../../src/capture/payload.js';
import { captureCommand } from '../../src/cli/capture.js';
import type { SpoolRecord } from '../../src/spool/index.js';
import { agentRoot, makeTestHome, type TestHome } from '../../../../test/support/context.js';
import {
  canMountTmpfs,
  capture,
  captureLog,
  claudeSession,
  CLAUDE_PROFILE,
  mountTmpfs,
  readJson,
  spoolFiles,
  waitForWorkers,
} from '../../../../test/support/cli-process.js';

let t: TestHome;
let stateDir: string;

beforeEach(async () => {
  t = await makeTestHome();
  t.env.CLAUDE_CONFIG_DIR = path.join(t.home, '.claude');
  stateDir = t.env.BLUE_AGENT_HOME!;
});
afterEach(async () => {
  await waitForWorkers(stateDir).catch(() => undefined);
  await t.cleanup();
});

/** The one record the hook wrote, wherever the worker has taken it since. */
function theRecord(): { state: string; file: string; record: SpoolRecord } {
  const files = spoolFiles(stateDir);
  const found = (['intake', 'building', 'ready', 'failed'] as const).flatMap((state) =>
    files[state]
      .filter((n) => n.endsWith('.json'))
      .map((name) => ({ state, file: path.join(stateDir, 'spool', state, name) })),
  );
  expect(found, JSON.stringify(files)).toHaveLength(1);
  return { ...found[0]!, record: readJson<SpoolRecord>(found[0]!.file) };
}

function expectNoRecord(): void {
  const files = spoolFiles(stateDir);
  expect([...files.intake, ...files.building, ...files.ready, ...files.failed, ...files.tmp]).toEqual([]);
}

describe('accepted payloads', () => {
  it('Claude: spools a 0600 record in a 0700 spool, prints nothing, exits 0', async () => {
    const cwd = path.join(t.home, 'project');
    const payload = {
      session_id: 'a1b2c3d4-0000-4000-8000-000000000001',
      transcript_path: path.join(t.home, '.claude/projects/x/a.jsonl'),
      cwd,
      prompt_id: 'p1',
      hook_event_name: 'SessionEnd',
      reason: 'prompt_input_exit',
    };
    const result = await capture(t.env, payload);
    expect(result).toMatchObject({ code: 0, stdout: '', stderr: '' });
    const { file, record } = theRecord();
    expect(record).toMatchObject({
      harness: 'claude',
      profile: CLAUDE_PROFILE,
      attempts: 0,
      payload: {
        session_id: payload.session_id,
        transcript_path: payload.transcript_path,
        cwd,
        hook_event_name: 'SessionEnd',
        reason: 'prompt_input_exit',
      },
    });
    // Only what the worker needs is kept from the payload.
    expect(record.payload).not.toHaveProperty('prompt_id');
    expect(((await stat(file)).mode & 0o777).toString(8)).toBe('600');
    for (const dir of ['spool', 'spool/intake', 'spool/tmp'])
      expect(((await stat(path.join(stateDir, dir))).mode & 0o777).toString(8)).toBe('700');
    expect(captureLog(stateDir)[0]).toMatchObject({
      event: 'spooled',
      harness: 'claude',
      session_id: payload.session_id,
      record: record.id,
    });
    expect(((await stat(path.join(stateDir, 'capture.log'))).mode & 0o777).toString(8)).toBe('600');
  });

  it('Codex: transcript_path null counts as absent', async () => {
    const payload = {
      session_id: '019a0000-0000-7000-8000-000000000002',
      transcript_path: null,
      cwd: '/work/p',
      hook_event_name: 'SessionEnd',
      reason: 'exit',
    };
    expect((await capture(t.env, payload, 'codex', 'codex-v0_145_0')).code).toBe(0);
    const { record } = theRecord();
    expect(record).toMatchObject({
      harness: 'codex',
      profile: 'codex-v0_145_0',
      payload: { session_id: payload.session_id, cwd: '/work/p' },
    });
    expect(record.payload).not.toHaveProperty('transcript_path');
  });

  it('Kimi: no transcript path, session found by cwd later', async () => {
    const payload = {
      hook_event_name: 'SessionEnd',
      session_id: '3f1c2b8e-aaaa-bbbb-cccc-123456789abc',
      cwd: '/home/me/code',
      reason: 'exit',
    };
    expect((await capture(t.env, payload, 'kimi', 'kimi-v1_28_0')).code).toBe(0);
    expect(theRecord().record.payload).toEqual(payload);
  });

  it('OpenCode: the plugin payload (session.idle, ses_ id, no final newline)', async () => {
    const payload = {
      session_id: 'ses_5d2f0a1b2ffeXk3JqP0aBcDeFg',
      cwd: '/home/me/app',
      hook_event_name: 'session.idle',
      reason: 'idle',
    };
    expect((await capture(t.env, JSON.stringify(payload), 'opencode', 'opencode-v1_2_0')).code).toBe(0);
    expect(theRecord().record.payload).toEqual(payload);
  });

  it('stops reading as soon as the object is complete, even when stdin stays open', async () => {
    const payload = { session_id: 'still-open', cwd: '/w', hook_event_name: 'SessionEnd', reason: 'other' };
    const result = await capture(t.env, `  \n${JSON.stringify(payload)}`, 'claude', CLAUDE_PROFILE, {
      keepStdinOpen: true,
    });
    // Accepted although stdin was still open when the hook exited: it never waited for the end of input (a hook
    // that did would have run into its read deadline and refused the payload as incomplete).
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    expect(theRecord().record.payload.session_id).toBe('still-open');
  });

  it('keeps a payload whose strings hold braces and escaped quotes intact', async () => {
    const payload = { session_id: 'braces', cwd: '/w/{not}/"end"', reason: 'other' };
    expect((await capture(t.env, payload)).code).toBe(0);
    expect(theRecord().record.payload.cwd).toBe('/w/{not}/"end"');
  });
});

describe('refusals: one line on stderr, exit 1, logged, nothing spooled', () => {
  const good = { session_id: 'ok-1', cwd: '/w', transcript_path: '/w/t.jsonl' };
  const cases: [string, { payload?: unknown; harness?: string; profile?: string }, RegExp][] = [
    ['unknown harness', { harness: 'emacs' }, /unknown harness "emacs"/],
    ['unknown profile', { profile: 'claude-v9_9_9' }, /unknown compatibility profile "claude-v9_9_9"/],
    ['a profile of another harness', { harness: 'codex' }, /profile claude-v2_0_12 belongs to claude, not to codex/],
    ['a session id with ../', { payload: { ...good, session_id: '../../etc/passwd' } }, /session_id may only hold/],
    [
      'a session id of dots',
      { payload: { ...good, session_id: '..' } },
      /session_id must start with a letter or digit/,
    ],
    [
      'a session id of one dot',
      { payload: { ...good, session_id: '.' } },
      /session_id must start with a letter or digit/,
    ],
    [
      'a session id read as an option',
      { payload: { ...good, session_id: '-rf' } },
      /session_id must start with a letter or digit/,
    ],
    [
      'a session id naming restore temp files',
      { payload: { ...good, session_id: 'a.blue-agent-restore-x' } },
      /must not contain "\.blue-agent-restore"/,
    ],
    ['a session id with a backslash', { payload: { ...good, session_id: 'a\\b' } }, /session_id may only hold/],
    ['a session id with NUL', { payload: { ...good, session_id: 'a\u0000b' } }, /session_id may only hold/],
    [
      'a session id of 513 characters',
      { payload: { ...good, session_id: 'a'.repeat(513) } },
      /1 to 512 characters long \(it has 513\)/,
    ],
    ['an empty session id', { payload: { ...good, session_id: '' } }, /1 to 512 characters long \(it has 0\)/],
    ['no session id', { payload: { cwd: '/w' } }, /no session_id string/],
    ['a numeric session id', { payload: { session_id: 42 } }, /no session_id string/],
    ['a relative cwd', { payload: { ...good, cwd: 'relative/dir' } }, /cwd must be an absolute path/],
    [
      'a transcript path with NUL',
      { payload: { ...good, transcript_path: '/w/a\u0000.jsonl' } },
      /transcript_path contains a NUL/,
    ],
    ['an over-long cwd', { payload: { ...good, cwd: `/${'d'.repeat(5000)}` } }, /cwd must be at most 4096 characters/],
    ['a non-string cwd', { payload: { ...good, cwd: ['/w'] } }, /cwd must be a string/],
    ['an empty payload', { payload: '' }, /payload on stdin is empty/],
    ['white space only', { payload: '  \n\n' }, /payload on stdin is empty/],
    ['non-JSON', { payload: 'session_id=ok-1\n' }, /not a JSON object/],
    ['a JSON array', { payload: '[{"session_id":"x"}]' }, /not a JSON object/],
    ['a JSON string', { payload: '"ok-1"' }, /not a JSON object/],
    ['broken JSON', { payload: '{"session_id": "x",}' }, /not valid JSON/],
    ['a truncated object', { payload: '{"session_id": "x"' }, /ended before its JSON object was complete/],
  ];

  it.each(cases)('%s', async (_name, input, reason) => {
    const payload = input.payload ?? good;
    const result = await capture(t.env, payload, input.harness ?? 'claude', input.profile ?? CLAUDE_PROFILE);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^blue-agent capture: refused: .+\n$/);
    expect(result.stderr.split('\n')).toHaveLength(2);
    expect(result.stderr).toMatch(reason);
    expectNoRecord();
    const log = captureLog(stateDir);
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ event: 'refused', code: 'CAPTURE_REFUSED' });
    expect(String(log[0]!.reason)).toMatch(reason);
  });

  it('a profile that does not support capture', async () => {
    const profiles = path.join(t.root, 'profiles');
    await cp(path.join(agentRoot, 'profiles'), profiles, { recursive: true });
    const file = path.join(profiles, 'claude.yaml');
    const text = await readFile(file, 'utf8');
    // The deprecated interval keeps only resume: a hook installed for it must not capture.
    await writeFile(file, text.replace('operations: [session_capture]\n', 'operations: [session_resume]\n'));
    const env = { ...t.env, BLUE_AGENT_PROFILES_DIR: profiles };
    const result = await capture(env, good, 'claude', 'claude-v1_0_85');
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'blue-agent capture: refused: profile claude-v1_0_85 does not support session capture\n',
    );
    expectNoRecord();
  });

  it('a payload of 10 MiB is refused after reading 1 MiB, without reading the rest', async () => {
    // In-process, with a stdin that counts what is taken from it and a deadline out of the way: the refusal can only
    // come from the size cap, on any machine. Stdin never ends, so a hook that read on to the end would never return.
    const chunk = Buffer.alloc(64 * 1024, 'x');
    let pulled = 0;
    const stdin = new Readable({
      highWaterMark: 0,
      read() {
        if (pulled === 0) this.push('{"session_id":"big","cwd":"/w","pad":"');
        else if (pulled < 10 * 1024 * 1024) this.push(chunk);
        pulled += chunk.length;
      },
    });
    const stderr: string[] = [];
    const ctx = t.context({ stderr: { write: (s) => void stderr.push(s), isTTY: false } });
    const code = await captureCommand(ctx, { harness: 'claude', profile: CLAUDE_PROFILE }, stdin, {
      deadlineMs: 600_000,
      startDrain: () => {
        throw new Error('must not start a worker');
      },
    });
    expect(code).toBe(1);
    expect(stderr.join('')).toBe('blue-agent capture: refused: the payload on stdin is larger than 1048576 bytes\n');
    // Read up to the cap and a chunk or two past it, then let go of the stream.
    expect(pulled).toBeLessThanOrEqual(1024 * 1024 + 3 * chunk.length);
    expect(stdin.destroyed).toBe(true);
    expectNoRecord();
  });

  it('a stdin that never closes and never completes returns within the deadline', async () => {
    for (const partial of ['', '{"session_id": "slow", "cwd": "/w"']) {
      const result = await capture(t.env, partial, 'claude', CLAUDE_PROFILE, { keepStdinOpen: true });
      expect(result.code, partial).toBe(1);
      const waited = /(?:within|after) (\d+) ms/.exec(result.stderr);
      expect(result.stderr).toMatch(
        partial === '' ? /no payload arrived on stdin within \d+ ms/ : /was not complete after \d+ ms/,
      );
      // The deadline it gave the writer ends within PAYLOAD_DEADLINE_MS of the process start (inside the harness's
      // budget), however late the hook got to run, with at least the minimal window to deliver.
      expect(Number(waited![1])).toBeLessThanOrEqual(PAYLOAD_DEADLINE_MS);
      expect(Number(waited![1])).toBeGreaterThanOrEqual(MIN_READ_WINDOW_MS);
    }
    expectNoRecord();
  });

  it("logs refusals without the payload's secrets or free text", async () => {
    const secret = 'sk-ant-api03-SECRETSECRETSECRET';
    await capture(t.env, { session_id: `bad/${secret}`, cwd: '/w', prompt: `my token is ${secret}` });
    await capture(t.env, { session_id: 'fine', cwd: `relative-${secret}`, prompt: secret });
    await capture(t.env, `{"session_id": "x", "token": "${secret}"`);
    await capture(t.env, { session_id: 'fine', cwd: '/w', transcript_path: `/w/${secret}\u0000` });
    const text = await readFile(path.join(stateDir, 'capture.log'), 'utf8');
    expect(text.trim().split('\n')).toHaveLength(4);
    expect(text).not.toContain('SECRETSECRET');
    expect(text).not.toContain('my token');
    for (const entry of captureLog(stateDir)) expect(entry.event).toBe('refused');
  });
});

describe('an unsafe spool', () => {
  it('is refused when others may write to it, with the fix in the same line', async () => {
    await mkdir(path.join(stateDir, 'spool'), { recursive: true, mode: 0o700 });
    await chmod(path.join(stateDir, 'spool'), 0o777);
    const result = await capture(t.env, { session_id: 'x', cwd: '/w' });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      new RegExp(
        String.raw`^blue-agent capture: failed \[SPOOL_UNSAFE\]: the spool directory .* is writable by group ` +
          String.raw`and others \(mode 0777\)\. .*chmod 700 .*\n$`,
      ),
    );
    expect(captureLog(stateDir)[0]).toMatchObject({ event: 'failed', code: 'SPOOL_UNSAFE', session_id: 'x' });
    expect(spoolFiles(stateDir).intake).toEqual([]);
  });

  it('is refused when another user owns it', async () => {
    await mkdir(path.join(stateDir, 'spool', 'intake'), { recursive: true, mode: 0o700 });
    const mine = (await stat(path.join(stateDir, 'spool', 'intake'))).uid;
    // The hook run as if by another user (uid mine + 1) on this user's spool: no chown, so it works for any user.
    const someoneElse = mine + 1;
    const stderr: string[] = [];
    const ctx = t.context({ stderr: { write: (s) => void stderr.push(s), isTTY: false } });
    const code = await captureCommand(
      ctx,
      { harness: 'claude', profile: CLAUDE_PROFILE },
      Readable.from(['{"session_id":"x","cwd":"/w"}']),
      {
        ownerUid: someoneElse,
        startDrain: () => {
          throw new Error('must not start a worker');
        },
      },
    );
    expect(code).toBe(1);
    expect(stderr.join('')).toMatch(
      new RegExp(
        `^blue-agent capture: failed \\[SPOOL_UNSAFE\\]: .* is owned by uid ${mine}, not by you \\(uid ` +
          `${someoneElse}\\)\\. .*chown.*\n$`,
      ),
    );
    expect(captureLog(stateDir)[0]).toMatchObject({ event: 'failed', code: 'SPOOL_UNSAFE', session_id: 'x' });
    expect(spoolFiles(stateDir).intake).toEqual([]);
  });
});

describe('promptness', () => {
  it('never opens the transcript: a FIFO nobody writes to, which blocks a reader, does not hold it up', async () => {
    const claudeDir = t.env.CLAUDE_CONFIG_DIR!;
    const cwd = path.join(t.home, 'project');
    const session = await claudeSession(claudeDir, { id: 'fifo-0001', cwd, prompt: 'hello' });
    // The transcript's size does not matter to the hook (bench/capture.mjs times 1 KiB against 100 MiB); what makes
    // that true is that the hook only names the file. Opening a FIFO without a writer blocks until the hook is killed.
    await rm(session.transcript);
    execFileSync('mkfifo', [session.transcript]);
    expect((await lstat(session.transcript)).isFIFO()).toBe(true);
    const result = await capture(t.env, session.payload);
    expect(result).toMatchObject({ code: 0, signal: null, stderr: '' });
    expect(theRecord().record.payload).toMatchObject({ session_id: 'fifo-0001', transcript_path: session.transcript });
    // The worker refuses the FIFO without opening it either (it takes regular files only).
    await waitForWorkers(stateDir, 60_000);
  });
});

describe('a full disk', () => {
  it('leaves no partial file, reports SPOOL_FULL in one line and exits 1', async () => {
    const stderr: string[] = [];
    const ctx = t.context({ stderr: { write: (s) => void stderr.push(s), isTTY: false } });
    const code = await captureCommand(
      ctx,
      { harness: 'claude', profile: CLAUDE_PROFILE },
      Readable.from(['{"session_id":"full","cwd":"/w"}']),
      {
        startDrain: () => {
          throw new Error('must not start a worker');
        },
        io: {
          async write(handle, data) {
            await handle.write(data.subarray(0, 8));
            throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
          },
        },
      },
    );
    expect(code).toBe(1);
    expect(stderr.join('')).toMatch(/^blue-agent capture: failed \[SPOOL_FULL\]: no space left on the disk .*\n$/);
    expect(spoolFiles(stateDir)).toMatchObject({ intake: [], tmp: [] });
    expect(captureLog(stateDir)[0]).toMatchObject({ event: 'failed', code: 'SPOOL_FULL', session_id: 'full' });
  });

  describe('on a real full filesystem', () => {
    let mounted = false;
    let unmount: (() => void) | undefined;
    beforeAll(async () => {
      const probe = await makeTestHome();
      mounted = await canMountTmpfs(probe.root);
      await probe.cleanup();
    });
    afterAll(() => unmount?.());

    it('refuses with SPOOL_FULL and leaves nothing behind', async (test) => {
      if (!mounted) test.skip('mounting a tmpfs needs root on Linux');
      const disk = path.join(t.root, 'disk');
      unmount = await mountTmpfs(disk, '128k');
      try {
        const env = { ...t.env, BLUE_AGENT_HOME: path.join(disk, 'state') };
        // First capture creates the spool folders while there is room.
        expect((await capture(env, { session_id: 'room', cwd: '/w' })).code).toBe(0);
        await waitForWorkers(env.BLUE_AGENT_HOME);
        await writeFile(path.join(disk, 'filler'), Buffer.alloc(1024 * 1024)).catch(() => undefined);
        const result = await capture(env, { session_id: 'no-room', cwd: '/w' });
        expect(result.code).toBe(1);
        expect(result.stderr).toMatch(/failed \[SPOOL_FULL\]: no space left/);
        const files = spoolFiles(env.BLUE_AGENT_HOME);
        expect(files.tmp).toEqual([]);
        const sessions = (['intake', 'building', 'ready', 'failed'] as const).flatMap((state) =>
          files[state].map(
            (n) => readJson<SpoolRecord>(path.join(env.BLUE_AGENT_HOME, 'spool', state, n)).payload.session_id,
          ),
        );
        expect(sessions).toEqual(['room']);
        await rm(path.join(disk, 'filler'));
      } finally {
        unmount();
        unmount = undefined;
      }
    });
  });
});

describe('capture.log', () => {
  it('rotates to one older generation when it would grow past its bound, staying 0600', async () => {
    const { appendCaptureLog } = await import('../../src/capture/log.js');
    for (let i = 0; i < 40; i++)
      await appendCaptureLog(
        path.join(stateDir, 'capture.log'),
        { event: 'refused', reason: `entry ${i} ${'x'.repeat(60)}` },
        { maxBytes: 1024 },
      );
    const current = path.join(stateDir, 'capture.log');
    for (const file of [current, `${current}.1`]) {
      const info = await stat(file);
      expect(info.size).toBeLessThanOrEqual(1024);
      expect((info.mode & 0o777).toString(8)).toBe('600');
    }
    const lines = (await readFile(current, 'utf8')).trim().split('\n');
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ event: 'refused', reason: expect.stringContaining('entry 39') });
  });

  it('a log rotated or removed by another process gets the next line: the writer keeps no old file open', async () => {
    const { appendCaptureLog } = await import('../../src/capture/log.js');
    const current = path.join(stateDir, 'capture.log');
    await appendCaptureLog(current, { event: 'refused', reason: 'first' });
    await rename(current, `${current}.1`);
    await appendCaptureLog(current, { event: 'refused', reason: 'after the rotation' });
    expect(await readFile(current, 'utf8')).toContain('after the rotation');
    expect(await readFile(`${current}.1`, 'utf8')).not.toContain('after the rotation');
    await rm(stateDir, { recursive: true, force: true });
    await appendCaptureLog(current, { event: 'refused', reason: 'after the removal' });
    expect(await readFile(current, 'utf8')).toContain('after the removal');
    expect(((await stat(stateDir)).mode & 0o777).toString(8)).toBe('700');
  });

  it('masks secrets and cuts long fields', async () => {
    const { appendCaptureLog } = await import('../../src/capture/log.js');
    await appendCaptureLog(path.join(stateDir, 'capture.log'), {
      event: 'failed',
      reason: `Authorization: Bearer abcdefghijklmnop token=hunter2 ${'y'.repeat(2000)}`,
    });
    const [entry] = captureLog(stateDir);
    expect(String(entry!.reason)).not.toMatch(/abcdefghijklmnop|hunter2/);
    expect(String(entry!.reason).length).toBeLessThan(600);
  });
});

/**
 * `blue-agent demo` as a person runs it: the built CLI as a process, with a HOME that looks lived in (a Claude Code
 * settings.json, an agent config, harness variables and a token pointing elsewhere). The demo must leave that HOME
 * exactly as it was, run every step, and remove its temporary directories unless --keep.
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { STEPS } from '../../src/demo/index.js';
import { snapshot } from '../../../../test/support/restore-homes.js';
import { runCli } from '../../../../test/support/cli-process.js';

const SENTINEL =
  '{\n  // the user\'s own settings\n  "hooks": {"SessionEnd": [{"matcher": "", "hooks": [{"type": "command", ' +
  '"command": "echo mine"}]}]}\n}\n';
const DEMO_TIMEOUT_MS = 150_000;

let root: string;
let home: string;
let tmp: string;
let env: Record<string, string>;

beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'blue-agent-demo-test-'));
  home = path.join(root, 'home');
  tmp = path.join(root, 'tmp');
  await mkdir(path.join(home, '.claude'), { recursive: true });
  await mkdir(path.join(home, '.config', 'blue-agent'), { recursive: true });
  await mkdir(tmp);
  await writeFile(path.join(home, '.claude', 'settings.json'), SENTINEL);
  await writeFile(path.join(home, '.config', 'blue-agent', 'config.yaml'), 'control_url: http://127.0.0.1:9\n');
  // Everything a leaked variable could point the demo at is the user's: if any reached a child, HOME would change.
  env = {
    HOME: home,
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    TMPDIR: tmp,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local', 'share'),
    XDG_STATE_HOME: path.join(home, '.local', 'state'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    CLAUDE_CONFIG_DIR: path.join(home, '.claude'),
    CODEX_HOME: path.join(home, '.codex'),
    KIMI_SHARE_DIR: path.join(home, '.kimi'),
    BLUE_AGENT_HOME: path.join(home, 'agent-state'),
    BLUE_AGENT_CONFIG: path.join(home, '.config', 'blue-agent', 'config.yaml'),
    BLUE_AGENT_CONTROL_URL: 'http://127.0.0.1:9',
    BLUE_AGENT_TOKEN: 'the-users-own-token',
  };
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
});

/** The demo's temporary roots left in its TMPDIR. */
function demoRoots(): string[] {
  return readdirSync(tmp).filter((name) => name.startsWith('blue-agent-demo-'));
}

describe('blue-agent demo', () => {
  it(
    'prints every step, exits 0, leaves HOME byte for byte as it was and removes its temporary directories',
    async () => {
      const before = await snapshot(home, []);
      const result = await runCli(['demo'], { env, cwd: home, timeoutMs: DEMO_TIMEOUT_MS });
      expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
      const lines = result.stdout.split('\n');
      STEPS.forEach((id, i) => {
        expect(
          lines.some((l) => l.startsWith(`${String(i + 1).padStart(2)}. ${id} `) && / \(\d+ ms\)$/.test(l)),
          `step ${i + 1} ${id}:\n${result.stdout}`,
        ).toBe(true);
      });
      const order = STEPS.map((id, i) => lines.findIndex((l) => l.startsWith(`${String(i + 1).padStart(2)}. ${id} `)));
      expect([...order].sort((x, y) => x - y)).toEqual(order);
      // Honest about what is recorded.
      expect(result.stdout).toMatch(/recorded: a Claude Code \d+\.\d+\.\d+ session recorded offline/);
      expect(result.stdout).toMatch(/stand-in/);
      expect(result.stdout).toMatch(/native resume command: cd \$DEMO\/b\/work\/proj && claude --resume [0-9a-f-]{36}/);

      expect(await readFile(path.join(home, '.claude', 'settings.json'), 'utf8')).toBe(SENTINEL);
      expect(await snapshot(home, [])).toEqual(before);
      expect(demoRoots()).toEqual([]);
    },
    DEMO_TIMEOUT_MS,
  );

  it(
    '--keep --json: one JSON document, the session restored in HOME B, the temporary directories kept',
    async () => {
      const before = await snapshot(home, []);
      const result = await runCli(['demo', '--keep', '--json'], { env, cwd: home, timeoutMs: DEMO_TIMEOUT_MS });
      expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
      const report = JSON.parse(result.stdout);
      expect(report.ok).toBe(true);
      expect(report.kept).toBe(true);
      expect(report.steps.map((s: { id: string; ok: boolean }) => [s.id, s.ok])).toEqual(STEPS.map((id) => [id, true]));
      expect(
        report.steps.every(
          (s: { ms: unknown; summary: unknown }) => typeof s.ms === 'number' && typeof s.summary === 'string',
        ),
      ).toBe(true);

      expect(path.dirname(report.root)).toBe(tmp);
      expect(demoRoots()).toEqual([path.basename(report.root)]);
      const homeB = path.join(report.root, 'b', 'home');
      expect(report.session.home_b).toBe(homeB);
      const id = report.recorded.session_id as string;
      expect(report.session.session_id).toBe(id);
      expect(report.session.command).toEqual(['claude', '--resume', id]);
      expect(report.session.restored.length).toBeGreaterThan(0);
      for (const file of report.session.restored as string[]) {
        expect(file.startsWith(path.join(homeB, '.claude', 'projects') + path.sep), file).toBe(true);
        expect(existsSync(file), file).toBe(true);
      }
      const transcript = (report.session.restored as string[]).find((f) => path.basename(f) === `${id}.jsonl`)!;
      expect(await readFile(transcript, 'utf8')).toContain(report.recorded.prompt);
      expect(report.steps.find((s: { id: string }) => s.id === 'restore').details.transcript_identical).toBe(true);
      // The hook that ran is the one reconcile wrote into machine A's settings.json.
      const capture = report.steps.find((s: { id: string }) => s.id === 'capture').details;
      const settingsA = JSON.parse(
        await readFile(path.join(report.root, 'a', 'home', '.claude', 'settings.json'), 'utf8'),
      );
      expect(settingsA.hooks.SessionEnd[0].hooks[0].command).toBe(capture.command);

      expect(await readFile(path.join(home, '.claude', 'settings.json'), 'utf8')).toBe(SENTINEL);
      expect(await snapshot(home, [])).toEqual(before);
    },
    DEMO_TIMEOUT_MS,
  );

  it(
    'a step that fails is named, with a typed error, and the temporary directories are removed',
    async () => {
      // The port the demo is told to use is taken.
      const blocker = net.createServer();
      await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
      const port = (blocker.address() as net.AddressInfo).port;
      try {
        const json = await runCli(['demo', '--port', String(port), '--json'], { env, cwd: home, timeoutMs: 60_000 });
        expect(json.code, json.stdout).toBe(1);
        const report = JSON.parse(json.stdout);
        expect(report.ok).toBe(false);
        expect(report.error).toMatchObject({
          code: 'DEMO_STEP_FAILED',
          step: { n: 1, id: 'control-api' },
          cause: { code: 'ADDRESS_IN_USE', message: `127.0.0.1:${port} is in use` },
        });
        expect(report.error.message).toBe(`step 1 (control-api) failed: [ADDRESS_IN_USE] 127.0.0.1:${port} is in use`);
        expect(report.error.hint).toMatch(/--port/);
        expect(report.steps).toEqual([expect.objectContaining({ n: 1, id: 'control-api', ok: false })]);

        const human = await runCli(['demo', '--port', String(port)], { env, cwd: home, timeoutMs: 60_000 });
        expect(human.code).toBe(1);
        expect(human.stdout).toMatch(/ 1\. control-api {2}FAILED \[ADDRESS_IN_USE\] 127\.0\.0\.1:\d+ is in use/);
        expect(human.stderr).toContain(
          `blue-agent: error [DEMO_STEP_FAILED]: step 1 (control-api) failed: [ADDRESS_IN_USE] 127.0.0.1:${port} ` +
            `is in use`,
        );
        expect(demoRoots()).toEqual([]);
      } finally {
        await new Promise((resolve) => blocker.close(resolve));
      }
    },
    DEMO_TIMEOUT_MS,
  );

  it('--help explains what is real and what is recorded, and the options', async () => {
    const result = await runCli(['demo', '--help'], { env, cwd: home });
    expect(result.code).toBe(0);
    for (const text of [
      'Real:',
      'Recorded:',
      'stand-in',
      '--keep',
      '--json',
      '--port',
      'DEMO_STEP_FAILED',
      'CLAUDE_CONFIG_DIR',
    ])
      expect(result.stdout).toContain(text);
    expect(demoRoots()).toEqual([]);
  });

  it('a bad --port is a usage error', async () => {
    const result = await runCli(['demo', '--port', '70000'], { env, cwd: home });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/error \[USAGE\]: .*not a port/);
    expect(demoRoots()).toEqual([]);
  });

  it(
    'Ctrl-C stops the running step, removes the temporary directories and exits 130',
    async () => {
      const run = runCli(['demo'], { env, cwd: home, timeoutMs: DEMO_TIMEOUT_MS });
      let seen = '';
      await new Promise<void>((resolve) => {
        run.child.stdout!.on('data', (chunk: Buffer) => {
          seen += chunk.toString('utf8');
          if (/^ 1\. control-api /m.test(seen)) resolve();
        });
      });
      run.child.kill('SIGINT');
      const result = await run;
      expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(130);
      expect(result.stderr).toMatch(
        /error \[DEMO_STEP_FAILED\]: step \d \([a-z-]+\) failed: \[INTERRUPTED\] interrupted by SIGINT/,
      );
      expect(demoRoots()).toEqual([]);
      expect(await readFile(path.join(home, '.claude', 'settings.json'), 'utf8')).toBe(SENTINEL);
    },
    DEMO_TIMEOUT_MS,
  );
});

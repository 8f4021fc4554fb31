/**
 * Records the session fixtures under fixtures/sessions/ from the real CLIs, offline. Not part of `npm test` (it
 * rewrites the fixtures); run it on purpose (see fixtures/sessions/README.md):
 *
 *   npm run record-fixtures
 *
 * Each harness runs one headless session in a temporary HOME against a loopback model; its native files are copied
 * with the temporary root replaced by `{{ROOT}}` (`{{ROOT_REL}}` without its leading `/`; Claude's project key by
 * `{{PROJECT}}`, its per-user temporary folder by `{{CLAUDE_TMP}}`, the kernel release by `{{OS_RELEASE}}`), so tests
 * can lay them out under their own HOME. Claude Code's run is scripted to start one
 * subagent and to run one command with a large output, which produces the companion files
 * (`subagents/agent-*.jsonl` + `.meta.json`, `tool-results/*.txt`). Claude Code's API request logs
 * (`api-request-shape`, `api-request-blob` lines over 8 KiB, which no other record points to) are left out to keep
 * the fixtures small; nothing else is edited.
 */
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { release, tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { claudeProjectKey } from '../../src/harnesses/claude/session.js';
import { makeTestHome } from '../support/context.js';
import { harnessBin, harnessInstall } from '../support/harness-bins.js';
import { startModelStub } from '../support/model-stub.js';
import { describeRun, harnessDirs, harnessEnv, runClaude, runCodex, runOpencode, runProcess } from '../support/run-harness.js';
import { FIXTURES, workDir } from '../support/recorded-sessions.js';
import { startScriptedAnthropicStub } from '../support/scripted-anthropic-stub.js';

export const CLAUDE_PROMPT = 'Explain the build steps of this project';
export const CODEX_PROMPT = 'Fix the flaky test in the parser module';
export const OPENCODE_PROMPT = 'Add a README for the CLI';
const REPLY = 'Recorded reply from the stub model.';
const TIMEOUT_MS = 90_000;
/** Lines longer than this without a `uuid` (request logs, not conversation records) are not kept. */
const MAX_UNLINKED_LINE = 8 * 1024;


interface Placeholders {
  root: string;
  project?: string;
}

function scrub(text: string, p: Placeholders): string {
  let out = text;
  if (p.project !== undefined) out = out.split(p.project).join('{{PROJECT}}');
  out = out.split(p.root).join('{{ROOT}}');
  // OpenCode also records the directory relative to `/`.
  out = out.split(p.root.replace(/^\/+/, '')).join('{{ROOT_REL}}');
  // Claude Code's per-user temporary folder (/tmp/claude-<uid>).
  out = out.split(path.join(tmpdir(), `claude-${process.getuid?.() ?? 0}`)).join('{{CLAUDE_TMP}}');
  return out.split(release()).join('{{OS_RELEASE}}');
}

function dropRequestLogs(text: string): string {
  return text
    .split('\n')
    .filter((line) => {
      if (line.length <= MAX_UNLINKED_LINE) return true;
      try {
        return typeof (JSON.parse(line) as { uuid?: unknown }).uuid === 'string';
      } catch {
        return true;
      }
    })
    .join('\n');
}

async function copyScrubbed(from: string, to: string, p: Placeholders, transform: (text: string) => string = (t) => t): Promise<void> {
  if ((await stat(from)).isDirectory()) {
    await mkdir(to, { recursive: true });
    for (const name of await readdir(from)) await copyScrubbed(path.join(from, name), path.join(to, scrub(name, p)), p, transform);
    return;
  }
  await mkdir(path.dirname(to), { recursive: true });
  await writeFile(to, scrub(transform(await readFile(from, 'utf8')), p));
}

async function freshDir(harness: string, version: string): Promise<string> {
  await rm(path.join(FIXTURES, harness), { recursive: true, force: true });
  const dir = path.join(FIXTURES, harness, version);
  await mkdir(dir, { recursive: true });
  return dir;
}

describe('record session fixtures from the real CLIs', () => {
  it(
    'Claude Code: a session with a subagent and a persisted tool result',
    async () => {
      const t = await makeTestHome();
      const stub = await startScriptedAnthropicStub(CLAUDE_PROMPT, REPLY);
      try {
        const cwd = await workDir(t.root);
        const install = harnessInstall('claude');
        const result = await runClaude({ bin: install.bin, home: t.home, cwd, prompt: CLAUDE_PROMPT, stubUrl: stub.url, timeoutMs: TIMEOUT_MS, args: ['--allowedTools', 'Bash(seq:*)'] });
        expect(result.exitCode, describeRun(result)).toBe(0);
        expect(stub.answers).toEqual(expect.arrayContaining(['agent', 'bash']));
        const project = claudeProjectKey(cwd);
        const projectDir = path.join(harnessDirs(harnessEnv(t.home)).claude, 'projects', project);
        const transcript = (await readdir(projectDir)).find((n) => n.endsWith('.jsonl'))!;
        const id = transcript.slice(0, -'.jsonl'.length);
        const out = await freshDir('claude', install.version);
        const p = { root: t.root, project };
        await copyScrubbed(path.join(projectDir, transcript), path.join(out, 'projects', '{{PROJECT}}', transcript), p, dropRequestLogs);
        await copyScrubbed(path.join(projectDir, id), path.join(out, 'projects', '{{PROJECT}}', id), p, dropRequestLogs);
        await writeFile(
          path.join(out, 'session.json'),
          `${JSON.stringify({ harness: 'claude', version: install.version, session_id: id, prompt: CLAUDE_PROMPT, cwd: scrub(cwd, p), transcript_path: scrub(path.join(projectDir, transcript), p) }, null, 2)}\n`,
        );
      } finally {
        await stub.close();
        await t.cleanup();
      }
    },
    TIMEOUT_MS + 30_000,
  );

  it(
    'Codex: one exec session',
    async () => {
      const t = await makeTestHome();
      const stub = await startModelStub({ reply: REPLY });
      try {
        const cwd = await workDir(t.root);
        const install = harnessInstall('codex');
        const result = await runCodex({ bin: install.bin, home: t.home, cwd, prompt: CODEX_PROMPT, stubUrl: stub.url, timeoutMs: TIMEOUT_MS });
        expect(result.exitCode, describeRun(result)).toBe(0);
        const sessions = path.join(harnessDirs(harnessEnv(t.home)).codex, 'sessions');
        const out = await freshDir('codex', install.version);
        await copyScrubbed(sessions, path.join(out, 'sessions'), { root: t.root });
        const rollout = (await readdir(sessions, { recursive: true })).find((n) => n.endsWith('.jsonl'))!;
        const id = /-([0-9a-f-]{36})\.jsonl$/.exec(rollout)![1]!;
        await writeFile(
          path.join(out, 'session.json'),
          `${JSON.stringify({ harness: 'codex', version: install.version, session_id: id, prompt: CODEX_PROMPT, cwd: scrub(cwd, { root: t.root }), rollout: rollout.split(path.sep).join('/') }, null, 2)}\n`,
        );
      } finally {
        await stub.close();
        await t.cleanup();
      }
    },
    TIMEOUT_MS + 30_000,
  );

  it(
    'OpenCode: one run session, exported',
    async () => {
      const t = await makeTestHome();
      const stub = await startModelStub({ reply: REPLY });
      try {
        const cwd = await workDir(t.root);
        const install = harnessInstall('opencode');
        const result = await runOpencode({ bin: install.bin, home: t.home, cwd, prompt: OPENCODE_PROMPT, stubUrl: stub.url, timeoutMs: TIMEOUT_MS });
        expect(result.exitCode, describeRun(result)).toBe(0);
        const env = harnessEnv(t.home, { OPENCODE_DISABLE_AUTOUPDATE: '1', OPENCODE_DISABLE_MODELS_FETCH: '1' });
        const list = await runProcess(install.bin, ['session', 'list', '--format', 'json'], { env, cwd, timeoutMs: 30_000 });
        const id = (JSON.parse(list.stdout) as { id: string }[])[0]!.id;
        const exported = await runProcess(harnessBin('opencode'), ['export', id], { env, cwd, timeoutMs: 30_000 });
        expect(exported.exitCode, describeRun(exported)).toBe(0);
        const out = await freshDir('opencode', install.version);
        await writeFile(path.join(out, 'export.json'), scrub(exported.stdout, { root: t.root }));
        await writeFile(
          path.join(out, 'session.json'),
          `${JSON.stringify({ harness: 'opencode', version: install.version, session_id: id, prompt: OPENCODE_PROMPT, cwd: scrub(cwd, { root: t.root }), stderr: exported.stderr.trim() }, null, 2)}\n`,
        );
      } finally {
        await stub.close();
        await t.cleanup();
      }
    },
    TIMEOUT_MS + 30_000,
  );
});

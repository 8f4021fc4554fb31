/**
 * Records Claude Code's session fixture under fixtures/sessions/claude/ from the real CLI, offline (see
 * test/support/recorder.ts; not part of `npm test`: `npm run record-fixtures`, see fixtures/sessions/README.md).
 * The run is scripted to start one subagent and to run one command with a large output, which produces the
 * companion files (`subagents/agent-*.jsonl` + `.meta.json`, `tool-results/*.txt`). Its project key becomes
 * `{{PROJECT}}`, its per-user temporary folder `{{CLAUDE_TMP}}`. Claude Code's API request logs (`api-request-shape`,
 * `api-request-blob` lines over 8 KiB, which no other record points to) are left out to keep the fixtures small;
 * nothing else is edited.
 */
import { readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { claudeProjectKey } from '../../../src/harnesses/claude/session.js';
import { makeTestHome } from '../../../../../test/support/context.js';
import { harnessInstall } from '../../../../../test/support/harness-bins.js';
import { workDir } from '../../../../../test/support/recorded-sessions.js';
import { copyScrubbed, freshDir, REPLY, scrub, TIMEOUT_MS } from '../../../../../test/support/recorder.js';
import { describeRun, harnessEnv } from '../../../../../test/support/run-harness.js';
import { startScriptedAnthropicStub } from '../../../../../test/support/scripted-anthropic-stub.js';
import { claudeDir, runClaude } from './rig.js';

export const CLAUDE_PROMPT = 'Explain the build steps of this project';
/** Lines longer than this without a `uuid` (request logs, not conversation records) are not kept. */
const MAX_UNLINKED_LINE = 8 * 1024;

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

describe('record session fixtures from the real CLI', () => {
  it(
    'Claude Code: a session with a subagent and a persisted tool result',
    async () => {
      const t = await makeTestHome();
      const stub = await startScriptedAnthropicStub(CLAUDE_PROMPT, REPLY);
      try {
        const cwd = await workDir(t.root);
        const install = harnessInstall('claude');
        const result = await runClaude({
          bin: install.bin,
          home: t.home,
          cwd,
          prompt: CLAUDE_PROMPT,
          stubUrl: stub.url,
          timeoutMs: TIMEOUT_MS,
          args: ['--allowedTools', 'Bash(seq:*)'],
        });
        expect(result.exitCode, describeRun(result)).toBe(0);
        expect(stub.answers).toEqual(expect.arrayContaining(['agent', 'bash']));
        const project = claudeProjectKey(cwd);
        const projectDir = path.join(claudeDir(harnessEnv(t.home)), 'projects', project);
        const transcript = (await readdir(projectDir)).find((n) => n.endsWith('.jsonl'))!;
        const id = transcript.slice(0, -'.jsonl'.length);
        const out = await freshDir('claude', install.version);
        const p = {
          root: t.root,
          before: [[project, 'PROJECT']],
          after: [[path.join(tmpdir(), `claude-${process.getuid?.() ?? 0}`), 'CLAUDE_TMP']],
        } as const;
        await copyScrubbed(
          path.join(projectDir, transcript),
          path.join(out, 'projects', '{{PROJECT}}', transcript),
          p,
          dropRequestLogs,
        );
        await copyScrubbed(
          path.join(projectDir, id),
          path.join(out, 'projects', '{{PROJECT}}', id),
          p,
          dropRequestLogs,
        );
        await writeFile(
          path.join(out, 'session.json'),
          JSON.stringify(
            {
              harness: 'claude',
              version: install.version,
              session_id: id,
              prompt: CLAUDE_PROMPT,
              cwd: scrub(cwd, p),
              transcript_path: scrub(path.join(projectDir, transcript), p),
            },
            null,
            2,
          ) + '\n',
        );
      } finally {
        await stub.close();
        await t.cleanup();
      }
    },
    TIMEOUT_MS + 30_000,
  );
});

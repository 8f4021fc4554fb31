/**
 * Records Gemini CLI's session fixture under fixtures/sessions/gemini/ from the real CLI, offline (see
 * test/support/recorder.ts; not part of `npm test`: `npm run record-fixtures`, see fixtures/sessions/README.md).
 * The stub makes the session call one tool (`list_directory`) before it answers, so the chat holds a tool call and
 * its result. The project folder becomes `{{GEMINI_PROJECT}}`, the working directory's hash `{{GEMINI_HASH}}`.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectHash, slugify } from '../../../src/harnesses/gemini/projects.js';
import { makeTestHome } from '../../../../../test/support/context.js';
import { harnessInstall } from '../../../../../test/support/harness-bins.js';
import { startModelStub } from '../../../../../test/support/model-stub.js';
import { workDir } from '../../../../../test/support/recorded-sessions.js';
import { copyScrubbed, freshDir, REPLY, scrub, TIMEOUT_MS } from '../../../../../test/support/recorder.js';
import { describeRun, harnessEnv } from '../../../../../test/support/run-harness.js';
import { geminiDir, runGemini } from './rig.js';

export const GEMINI_PROMPT = 'Explain the build steps of this project';

describe('record session fixtures from the real CLI', () => {
  it(
    'Gemini CLI: one headless session with a tool call',
    async () => {
      const t = await makeTestHome();
      const stub = await startModelStub({
        reply: REPLY,
        geminiToolCall: { name: 'list_directory', args: { dir_path: '.' } },
      });
      try {
        const cwd = await workDir(t.root);
        await writeFile(path.join(cwd, 'Makefile'), 'build:\n\tnpm run build\n');
        const install = harnessInstall('gemini');
        const result = await runGemini({
          bin: install.bin,
          home: t.home,
          cwd,
          prompt: GEMINI_PROMPT,
          stubUrl: stub.url,
          timeoutMs: TIMEOUT_MS,
        });
        expect(result.exitCode, describeRun(result)).toBe(0);
        const slug = slugify(path.basename(cwd));
        const project = path.join(geminiDir(harnessEnv(t.home)), 'tmp', slug);
        const chat = (await readdir(path.join(project, 'chats'))).find((n) => n.endsWith('.jsonl'))!;
        const id = (
          JSON.parse((await readFile(path.join(project, 'chats', chat), 'utf8')).split('\n')[0]!) as {
            sessionId: string;
          }
        ).sessionId;
        const out = await freshDir('gemini', install.version);
        const p = { root: t.root, before: [[projectHash(cwd), 'GEMINI_HASH']], after: [] } as const;
        // The session's own files only: its chat and its folders (logs/ is Gemini CLI's log, not the session).
        await copyScrubbed(
          path.join(project, 'chats', chat),
          path.join(out, 'tmp', '{{GEMINI_PROJECT}}', 'chats', chat),
          p,
        );
        for (const inside of [`chats/${id}`, `tool-outputs/session-${id}`, id]) {
          if (
            (await readdir(path.join(project, path.dirname(inside))).catch(() => [] as string[])).includes(
              path.basename(inside),
            )
          ) {
            await copyScrubbed(path.join(project, inside), path.join(out, 'tmp', '{{GEMINI_PROJECT}}', inside), p);
          }
        }
        await writeFile(
          path.join(out, 'session.json'),
          JSON.stringify(
            {
              harness: 'gemini',
              version: install.version,
              session_id: id,
              prompt: GEMINI_PROMPT,
              cwd: scrub(cwd, { root: t.root }),
              chat,
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

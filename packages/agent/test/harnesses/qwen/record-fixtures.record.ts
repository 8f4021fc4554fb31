/**
 * Records Qwen Code's session fixture under fixtures/sessions/qwen/ from the real CLI, offline: one headless session
 * (see test/support/recorder.ts; not part of `npm test`: `npm run record-fixtures`, see fixtures/sessions/README.md).
 * The project folder (the working directory with its punctuation turned into `-`) becomes `{{QWEN_PROJECT}}`.
 */
import { readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { qwenProjectKey } from '../../../src/harnesses/qwen/session.js';
import { makeTestHome } from '../../../../../test/support/context.js';
import { harnessInstall } from '../../../../../test/support/harness-bins.js';
import { startModelStub } from '../../../../../test/support/model-stub.js';
import { workDir } from '../../../../../test/support/recorded-sessions.js';
import { copyScrubbed, freshDir, REPLY, scrub, TIMEOUT_MS } from '../../../../../test/support/recorder.js';
import { describeRun, harnessEnv } from '../../../../../test/support/run-harness.js';
import { qwenHome, runQwenHeadless } from './rig.js';

export const QWEN_PROMPT = 'Explain the build steps of this project';

describe('record session fixtures from the real CLI', () => {
  it(
    'Qwen Code: one headless session',
    async () => {
      const t = await makeTestHome();
      const stub = await startModelStub({ reply: REPLY });
      try {
        const cwd = await workDir(t.root);
        const install = harnessInstall('qwen');
        const result = await runQwenHeadless({
          bin: install.bin,
          home: t.home,
          cwd,
          prompt: QWEN_PROMPT,
          stubUrl: stub.url,
          timeoutMs: TIMEOUT_MS,
        });
        expect(result.exitCode, describeRun(result)).toBe(0);
        const key = qwenProjectKey(cwd);
        const chats = path.join(qwenHome(harnessEnv(t.home)), 'projects', key, 'chats');
        const name = (await readdir(chats)).find((n) => n.endsWith('.jsonl'))!;
        const id = name.replace(/\.jsonl$/, '');
        const out = await freshDir('qwen', install.version);
        await copyScrubbed(path.join(chats, name), path.join(out, 'projects', '{{QWEN_PROJECT}}', 'chats', name), {
          root: t.root,
          before: [[key, 'QWEN_PROJECT']],
        });
        await writeFile(
          path.join(out, 'session.json'),
          JSON.stringify(
            {
              harness: 'qwen',
              version: install.version,
              session_id: id,
              prompt: QWEN_PROMPT,
              cwd: scrub(cwd, { root: t.root }),
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

/**
 * Records Codex's session fixture under fixtures/sessions/codex/ from the real CLI, offline: one exec session (see
 * test/support/recorder.ts; not part of `npm test`: `npm run record-fixtures`, see fixtures/sessions/README.md).
 */
import { readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeTestHome } from '../../../../../test/support/context.js';
import { harnessInstall } from '../../../../../test/support/harness-bins.js';
import { startModelStub } from '../../../../../test/support/model-stub.js';
import { workDir } from '../../../../../test/support/recorded-sessions.js';
import { copyScrubbed, freshDir, REPLY, scrub, TIMEOUT_MS } from '../../../../../test/support/recorder.js';
import { describeRun, harnessEnv } from '../../../../../test/support/run-harness.js';
import { codexHome, runCodex } from './rig.js';

export const CODEX_PROMPT = 'Fix the flaky test in the parser module';

describe('record session fixtures from the real CLI', () => {
  it(
    'Codex: one exec session',
    async () => {
      const t = await makeTestHome();
      const stub = await startModelStub({ reply: REPLY });
      try {
        const cwd = await workDir(t.root);
        const install = harnessInstall('codex');
        const result = await runCodex({
          bin: install.bin,
          home: t.home,
          cwd,
          prompt: CODEX_PROMPT,
          stubUrl: stub.url,
          timeoutMs: TIMEOUT_MS,
        });
        expect(result.exitCode, describeRun(result)).toBe(0);
        const sessions = path.join(codexHome(harnessEnv(t.home)), 'sessions');
        const out = await freshDir('codex', install.version);
        await copyScrubbed(sessions, path.join(out, 'sessions'), { root: t.root });
        const rollout = (await readdir(sessions, { recursive: true })).find((n) => n.endsWith('.jsonl'))!;
        const id = /-([0-9a-f-]{36})\.jsonl$/.exec(rollout)![1]!;
        await writeFile(
          path.join(out, 'session.json'),
          JSON.stringify(
            {
              harness: 'codex',
              version: install.version,
              session_id: id,
              prompt: CODEX_PROMPT,
              cwd: scrub(cwd, { root: t.root }),
              rollout: rollout.split(path.sep).join('/'),
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

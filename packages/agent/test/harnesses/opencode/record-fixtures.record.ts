/**
 * Records OpenCode's session fixture under fixtures/sessions/opencode/ from the real CLI, offline: one run session,
 * exported with `opencode export` (see test/support/recorder.ts; not part of `npm test`: `npm run record-fixtures`,
 * see fixtures/sessions/README.md).
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeTestHome } from '../../../../../test/support/context.js';
import { harnessBin, harnessInstall } from '../../../../../test/support/harness-bins.js';
import { startModelStub } from '../../../../../test/support/model-stub.js';
import { workDir } from '../../../../../test/support/recorded-sessions.js';
import { freshDir, REPLY, scrub, TIMEOUT_MS } from '../../../../../test/support/recorder.js';
import { describeRun, harnessEnv, runProcess } from '../../../../../test/support/run-harness.js';
import { runOpencode } from './rig.js';

export const OPENCODE_PROMPT = 'Add a README for the CLI';

describe('record session fixtures from the real CLI', () => {
  it(
    'OpenCode: one run session, exported',
    async () => {
      const t = await makeTestHome();
      const stub = await startModelStub({ reply: REPLY });
      try {
        const cwd = await workDir(t.root);
        const install = harnessInstall('opencode');
        const result = await runOpencode({
          bin: install.bin,
          home: t.home,
          cwd,
          prompt: OPENCODE_PROMPT,
          stubUrl: stub.url,
          timeoutMs: TIMEOUT_MS,
        });
        expect(result.exitCode, describeRun(result)).toBe(0);
        const env = harnessEnv(t.home, { OPENCODE_DISABLE_AUTOUPDATE: '1', OPENCODE_DISABLE_MODELS_FETCH: '1' });
        const list = await runProcess(install.bin, ['session', 'list', '--format', 'json'], {
          env,
          cwd,
          timeoutMs: 30_000,
        });
        const id = (JSON.parse(list.stdout) as { id: string }[])[0]!.id;
        const exported = await runProcess(harnessBin('opencode'), ['export', id], { env, cwd, timeoutMs: 30_000 });
        expect(exported.exitCode, describeRun(exported)).toBe(0);
        const out = await freshDir('opencode', install.version);
        await writeFile(path.join(out, 'export.json'), scrub(exported.stdout, { root: t.root }));
        await writeFile(
          path.join(out, 'session.json'),
          JSON.stringify(
            {
              harness: 'opencode',
              version: install.version,
              session_id: id,
              prompt: OPENCODE_PROMPT,
              cwd: scrub(cwd, { root: t.root }),
              stderr: exported.stderr.trim(),
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

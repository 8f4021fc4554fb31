/**
 * Records Kimi Code's session fixture under fixtures/sessions/kimi/<version>/ from the real CLI, offline: one
 * interactive session in a pseudo-terminal (see test/support/recorder.ts; not part of `npm test`:
 * `npm run record-fixtures`, see fixtures/sessions/README.md). The work-dir folder (`wd_<slug>_<hash>`) becomes
 * `{{KIMI_WORKDIR}}`. kimi-cli's hand-made fixture (fixtures/sessions/kimi/1.49.0/) is kept.
 */
import { readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { kimiCodeWorkDirKey } from '../../../src/harnesses/kimi/workdir.js';
import { makeTestHome } from '../../../../../test/support/context.js';
import { harnessInstall } from '../../../../../test/support/harness-bins.js';
import { startModelStub } from '../../../../../test/support/model-stub.js';
import { workDir } from '../../../../../test/support/recorded-sessions.js';
import { copyScrubbed, freshDir, REPLY, scrub, TIMEOUT_MS } from '../../../../../test/support/recorder.js';
import { describeRun, harnessEnv } from '../../../../../test/support/run-harness.js';
import { KIMI_CLI_FIXTURE_VERSION, kimiCodeHome, runKimi } from './rig.js';

export const KIMI_PROMPT = 'Explain the build steps of this project';
/** What of a session folder the recording keeps: what capture reads (logs/ and notify/ are this machine's). */
const KEPT = new Set(['state.json', 'agents']);

describe('record session fixtures from the real CLI', () => {
  it(
    'Kimi Code: one interactive session',
    async () => {
      const t = await makeTestHome();
      const stub = await startModelStub({ reply: REPLY });
      try {
        const cwd = await workDir(t.root);
        const install = harnessInstall('kimi');
        const result = await runKimi({
          bin: install.bin,
          home: t.home,
          cwd,
          prompt: KIMI_PROMPT,
          stubUrl: stub.url,
          timeoutMs: TIMEOUT_MS,
        });
        expect(result.exitCode, describeRun(result)).toBe(0);
        const key = kimiCodeWorkDirKey(cwd);
        const folder = path.join(kimiCodeHome(harnessEnv(t.home)), 'sessions', key);
        const [id] = (await readdir(folder)).filter((n) => n.startsWith('session_'));
        const out = await freshDir('kimi', install.version, [KIMI_CLI_FIXTURE_VERSION]);
        const placeholders = { root: t.root, before: [[key, 'KIMI_WORKDIR']] as const };
        for (const name of await readdir(path.join(folder, id!))) {
          if (KEPT.has(name))
            await copyScrubbed(
              path.join(folder, id!, name),
              path.join(out, 'sessions', '{{KIMI_WORKDIR}}', id!, name),
              placeholders,
            );
        }
        await writeFile(
          path.join(out, 'session.json'),
          JSON.stringify(
            {
              harness: 'kimi',
              version: install.version,
              session_id: id,
              prompt: KIMI_PROMPT,
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

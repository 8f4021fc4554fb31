/**
 * Kimi CLI in the round trip through the Control API (test/support/real-cli-round-trips.ts). No Kimi CLI can be
 * installed here: its session is a fixture that follows its source, captured by the real hook and drain, and restored
 * into Kimi's native layout on machine B, where a stand-in CLI reports its version.
 */
import { chmod, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { kimiWorkDirHash } from '../../../../src/harnesses/kimi/legacy/session.js';
import { runCli, waitForWorkers } from '../../../../../../test/support/cli-process.js';
import { useResumeRoundTrip } from '../../../../../../test/support/real-cli-round-trips.js';
import { fixtureBundle } from '../../../../../../test/support/restore-homes.js';
import { KIMI_CLI_FIXTURE } from '../rig.js';

describe('capture on machine A, upload, resume on machine B with the real CLI', () => {
  const w = useResumeRoundTrip();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'Kimi CLI (a fixture session; no CLI to resume with)',
    async () => {
      const { stack, a, b, destination, uploadedFromA, resumeOnB } = w;
      // Machine A: the session's files where Kimi keeps them, captured by the real hook and uploaded by the drain.
      const fixture = await fixtureBundle('kimi', a, path.join(a.root, 'unused.bundle'), KIMI_CLI_FIXTURE);
      const payload = JSON.stringify({
        session_id: fixture.sessionId,
        cwd: fixture.cwd,
        hook_event_name: 'SessionEnd',
      });
      const captured = await runCli(['capture', '--harness', 'kimi', '--profile', 'kimi-v1_28_0'], {
        env: a.env,
        input: payload,
      });
      expect(captured.code, captured.stderr).toBe(0);
      await waitForWorkers(a.env.BLUE_AGENT_HOME!, 60_000);
      const drained = await runCli(['drain', '--json'], { env: a.env, timeoutMs: 60_000 });
      expect(drained.code, drained.stdout).toBe(0);
      const upload = await uploadedFromA('kimi');

      // Machine B: a Kimi CLI (a stand-in that reports its version; the policy also allows unverified ones).
      stack.server.store.publishPolicy(
        {
          session_upload: { presign_url: `${stack.proxy.url}/session-uploads/presign` },
          harnesses: { kimi: { allow_unverified_versions: true } },
        },
        Date.now(),
      );
      const bin = path.join(b.root, 'bin', 'kimi');
      await mkdir(path.dirname(bin), { recursive: true });
      await writeFile(bin, '#!/bin/sh\necho "kimi, version 1.49.0"\n');
      await chmod(bin, 0o755);
      const share = path.join(b.home, '.kimi');
      await mkdir(share, { recursive: true });
      await writeFile(
        path.join(share, 'kimi.json'),
        '{"work_dirs": [{"path": "/srv/other", "kaos": "local", "last_session_id": "keep-me"}]}\n',
      );

      const command = await resumeOnB(upload.id, bin);
      expect(command).toEqual(['kimi', '--session', upload.native_session_id]);
      const folder = path.join(share, 'sessions', kimiWorkDirHash(destination), upload.native_session_id);
      expect(await readdir(folder)).toEqual(expect.arrayContaining(['context.jsonl', 'wire.jsonl']));
      // Kimi finds a session through its work_dirs entry: added, the user's own entry kept.
      const index = JSON.parse(await readFile(path.join(share, 'kimi.json'), 'utf8')) as {
        work_dirs: { path: string; last_session_id?: string }[];
      };
      expect(index.work_dirs).toEqual(
        expect.arrayContaining([
          { path: '/srv/other', kaos: 'local', last_session_id: 'keep-me' },
          expect.objectContaining({ path: destination, kaos: 'local', last_session_id: upload.native_session_id }),
        ]),
      );
    },
    TEST_TIMEOUT_MS,
  );
});

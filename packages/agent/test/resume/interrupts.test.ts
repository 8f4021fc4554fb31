/**
 * `blue-agent resume` cut short: Ctrl-C (SIGINT) or SIGTERM while it downloads, verifies or checks the harness still
 * removes the download folder and exits 130 or 143; and a session whose recorded bundle size is past the bundle limit
 * is refused before any download is asked for.
 */
import { spawn } from 'node:child_process';
import { chmod, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LIMITS } from '@blue-agent/contract/bundle/limits.js';
import { SessionsApi } from '../../src/control-api/sessions.js';
import { ENTRY } from '../../../../test/support/cli-process.js';
import { startWorld, uploadClaudeSession, type World } from '../../../../test/support/resume-world.js';

let world: World;
beforeEach(async () => {
  world = await startWorld();
});
afterEach(async () => {
  await world.close();
});

async function leftovers(): Promise<string[]> {
  return (await readdir(world.env.TMPDIR!)).filter((n) => n.startsWith('blue-agent-resume-'));
}

describe('a signal during the flow', () => {
  for (const [signal, code] of [
    ['SIGTERM', 143],
    ['SIGINT', 130],
  ] as const) {
    it(`${signal} while the harness is checked removes the download and exits ${code}`, async () => {
      const { capturedId } = await uploadClaudeSession(world);
      // A harness whose --version takes its time: the bundle is downloaded and verified by then.
      const claude = path.join(world.bin, 'claude');
      await writeFile(
        claude,
        '#!/bin/sh\nif [ "$1" = "--version" ]; then sleep 5; echo "2.1.197 (Claude Code)"; exit 0; fi\nexit 7\n',
      );
      await chmod(claude, 0o755);
      const child = spawn(
        process.execPath,
        [ENTRY, 'resume', capturedId, '--dest', world.project, '--yes', '--no-launch'],
        { env: world.env, cwd: world.project, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => void (stderr += c.toString()));
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        child.once('exit', (c, s) => resolve({ code: c, signal: s })),
      );
      const deadline = Date.now() + 15_000;
      while (!/Bundle\s+verified/.test(stderr)) {
        if (Date.now() > deadline) throw new Error(`the flow did not get to the harness check: ${stderr}`);
        await sleep(20);
      }
      expect(await leftovers()).toHaveLength(1);
      child.kill(signal);
      const exit = await exited;
      expect(exit, stderr).toEqual({ code, signal: null });
      expect(await leftovers()).toEqual([]);
    });
  }
});

describe('the download', () => {
  it('refuses a recorded size past the bundle limit before asking for a URL', async () => {
    const { capturedId } = await uploadClaudeSession(world);
    const api = await SessionsApi.fromContext(world.home.context({ env: world.env }));
    try {
      const upload = await api.resolveForResume(capturedId);
      const file = path.join(world.home.root, 'big.tar.gz');
      const error = await api.download({ ...upload, size_bytes: LIMITS.bundleBytes + 1 }, file).then(
        () => undefined,
        (e: unknown) => e as { code: string; message: string },
      );
      expect(error?.code).toBe('DOWNLOAD_FAILED');
      expect(error?.message).toMatch(new RegExp(`more than the ${LIMITS.bundleBytes} bytes a bundle may have`));
      expect((await readdir(world.home.root)).includes('big.tar.gz')).toBe(false);
    } finally {
      await api.close();
    }
  });
});

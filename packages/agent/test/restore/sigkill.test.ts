/**
 * SIGKILL during a restore: a separate process restores a bundle and is killed at a random moment; recoverRestores
 * then brings the machine to exactly one of two states — the whole session in place, or exactly what was there
 * before — compared over the whole harness folder (contents, modes, links; staging folders and temp files included).
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileRunner } from '../../../../scripts/compile-runner.mjs';
import { recoverRestores } from '../../src/restore/index.js';
import { agentRoot, repoRoot, type TestHome } from '../../../../test/support/context.js';
import { fixtureBundle, restoreHome, snapshot } from '../../../../test/support/restore-homes.js';
import { rigFor } from '../../../../test/support/rigs.js';

const KILLS = 15;
const STEP_DELAY_MS = 3;

let work: string;
let runner: string;

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'blue-agent-restore-kill-'));
  runner = path.join(work, 'restore-runner.mjs');
  await compileRunner(path.join(repoRoot, 'test', 'support', 'restore-runner.ts'), runner);
}, 60_000);

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

interface Run {
  child: ReturnType<typeof spawn>;
  prepared: Promise<void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

function start(target: TestHome, bundle: string, destination: string): Run {
  const child = spawn(
    process.execPath,
    [runner, bundle, destination, path.join(agentRoot, 'profiles'), String(STEP_DELAY_MS)],
    {
      env: { ...target.env },
      cwd: destination,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  let onPrepared: () => void = () => undefined;
  const prepared = new Promise<void>((resolve) => (onPrepared = resolve));
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    if (stdout.includes('prepared\n')) onPrepared();
  });
  child.stderr!.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>(
    (resolve) =>
      child.once('exit', (code, signal) => {
        onPrepared();
        resolve({ code, signal, stdout, stderr });
      }),
  );
  return { child, prepared, exited };
}

describe('SIGKILL during a restore', () => {
  // A session with an index to merge (Kimi Code), and one of many files (Claude Code).
  for (const harness of ['kimi', 'claude'] as const) {
    it(`${harness}: after recovery the harness folder is exactly the whole session or the original`, async () => {
      const source = await restoreHome();
      const target = await restoreHome();
      try {
        const session = await fixtureBundle(harness, source, path.join(source.root, `${harness}.bundle`));
        await mkdir(path.join(target.root, 'dest'));
        const destination = await realpath(path.join(target.root, 'dest'));
        // The harness's folder: where its sessions folder is.
        const rig = rigFor(harness).fixture;
        const folder = path.dirname(rig.sessionsIn!(target.home));
        const reset = async () => {
          await rm(folder, { recursive: true, force: true });
          await mkdir(folder, { recursive: true });
          // Something of the user's in the folder, and the indexes the restore merges into.
          await writeFile(path.join(folder, 'settings.json'), '{"theme": "dark"}\n');
          await rig.seedIndexes?.(target.home);
        };

        await reset();
        const original = await snapshot(folder);
        const clean = start(target, session.bundle, destination);
        await clean.prepared;
        const applyStarted = Date.now();
        const finished = await clean.exited;
        const applyMs = Date.now() - applyStarted;
        expect(finished.code, finished.stderr).toBe(0);
        const full = await snapshot(folder);
        expect(Object.keys(full).length).toBeGreaterThan(Object.keys(original).length);

        const outcomes = { original: 0, full: 0, interrupted: 0 };
        for (let i = 0; i < KILLS; i++) {
          await reset();
          const run = start(target, session.bundle, destination);
          await run.prepared;
          // Anywhere from right after preparing to a little past the end of the (slowed) restore.
          await sleep(Math.floor(Math.random() * applyMs * 1.2));
          run.child.kill('SIGKILL');
          const exit = await run.exited;
          const report = await recoverRestores(target.ctx);
          if (report.rolledBack.length + report.completed.length > 0) outcomes.interrupted++;
          const after = await snapshot(folder);
          const which =
            JSON.stringify(after) === JSON.stringify(full)
              ? 'full'
              : JSON.stringify(after) === JSON.stringify(original)
                ? 'original'
                : 'neither';
          expect(
            which,
            `kill ${i} (exit ${String(exit.code)} ${String(exit.signal)}; recovery ${JSON.stringify(report)}): ` +
              `${JSON.stringify(after, null, 1)}`,
          ).not.toBe('neither');
          outcomes[which as 'full' | 'original']++;
          // Nothing of the restore is left: no journal, no staging folder.
          expect(await recoverRestores(target.ctx)).toEqual({ rolledBack: [], completed: [] });
        }
        console.log(`${harness}: apply took ${applyMs} ms; ${KILLS} kills -> ${JSON.stringify(outcomes)}`);
        expect(outcomes.interrupted).toBeGreaterThan(0);
      } finally {
        await source.cleanup();
        await target.cleanup();
      }
    }, 120_000);
  }
});

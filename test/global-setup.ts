/**
 * Runs once per `vitest run`: makes sure the locked harness CLIs are in the cache, so the end-to-end suites can run
 * the real binaries. Cached versions cost nothing; a clean machine downloads them from the npm registry.
 * A failed install does not stop the run: suites that need a CLI then fail with the install command to use, and
 * every other suite still runs. BLUE_AGENT_SKIP_HARNESS_INSTALL=1 skips this step.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { installAll } from '../scripts/install-harnesses.mjs';

export default async function setup(): Promise<void> {
  // Suites that run the CLI as a process use the agent's dist/, and its `control-plane` commands the Control API's:
  // build both from the current sources first.
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  for (const pkg of ['agent', 'control-api'])
    execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: path.join(root, 'packages', pkg), stdio: 'inherit' });
  if (process.env.BLUE_AGENT_SKIP_HARNESS_INSTALL === '1') return;
  const log = (line: string) => void process.stderr.write(`[harnesses] ${line}\n`);
  try {
    await installAll({ log });
  } catch (error) {
    log(`could not install the harness CLIs: ${(error as Error).message}`);
    log('end-to-end tests that run a real harness will fail until `node scripts/install-harnesses.mjs` succeeds');
  }
}

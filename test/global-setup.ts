/**
 * Runs once per `vitest run`: builds the packages' dist/ and makes sure the locked harness CLIs are in the cache, so
 * the end-to-end suites can run the real binaries. Cached versions cost nothing; a clean machine downloads them from
 * the npm registry. A failed install does not stop the run: suites that need a CLI then fail with the install
 * command to use, and every other suite still runs. BLUE_AGENT_SKIP_HARNESS_INSTALL=1 skips this step.
 *
 * Every project of a run names this setup (each package's config can run alone), and vitest runs each project's
 * global setups in the one main process: the first project does the work and the others wait for it.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { installAll } from '../scripts/install-harnesses.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DONE = Symbol.for('blue-agent.test.global-setup');

/**
 * Suites that run the CLI as a process use the agent's dist/, and its `control-plane` commands the Control API's.
 * Each build bundles the packages named here (its own sources and the contract's) and what is installed.
 */
const BUILDS = [
  { pkg: 'agent', inputs: ['contract', 'agent'] },
  { pkg: 'control-api', inputs: ['contract', 'control-api'] },
];
/** What a package's build does not read. */
const NOT_READ = new Set(['dist', 'node_modules', 'test']);

export default function setup(): Promise<void> {
  const shared = globalThis as { [DONE]?: Promise<void> };
  shared[DONE] ??= prepare();
  return shared[DONE];
}

async function prepare(): Promise<void> {
  for (const { pkg, inputs } of BUILDS) buildWhenChanged(pkg, inputs);
  if (process.env.BLUE_AGENT_SKIP_HARNESS_INSTALL === '1') return;
  const log = (line: string) => void process.stderr.write(`[harnesses] ${line}\n`);
  try {
    await installAll({ log });
  } catch (error) {
    log(`could not install the harness CLIs: ${(error as Error).message}`);
    log('end-to-end tests that run a real harness will fail until `node scripts/install-harnesses.mjs` succeeds');
  }
}

/**
 * Builds a package from the current sources, unless this setup built its dist/ as it is now from the same bytes: runs
 * after the first (`npm test`, then `npm run test:hermetic` and `npm run certify`) take its dist/ as it is.
 */
function buildWhenChanged(pkg: string, inputs: readonly string[]): void {
  const dir = path.join(root, 'packages', pkg);
  const stamp = path.join(root, 'node_modules', '.cache', 'blue-agent-builds', `${pkg}.sha256`);
  const sources = digest([path.join(root, 'package-lock.json'), ...inputs.map((p) => path.join(root, 'packages', p))]);
  const state = () => `${sources} ${digest([path.join(dir, 'dist')])}`;
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === state()) return;
  execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: dir, stdio: 'inherit' });
  mkdirSync(path.dirname(stamp), { recursive: true });
  writeFileSync(stamp, state());
}

/**
 * SHA-256 over the path and bytes of every file under `paths` (files or folders; one that is missing counts as
 * such), leaving out a package's folders its build does not read.
 */
function digest(paths: readonly string[]): string {
  const hash = createHash('sha256');
  const walk = (file: string, top: boolean): void => {
    hash.update(`${path.relative(root, file)}\0`);
    if (!existsSync(file)) hash.update('missing\0');
    else if (!statSync(file).isDirectory()) hash.update(readFileSync(file)).update('\0');
    else
      for (const name of readdirSync(file).sort()) {
        if (!(top && NOT_READ.has(name))) walk(path.join(file, name), false);
      }
  };
  for (const p of paths) walk(p, path.dirname(p) === path.join(root, 'packages'));
  return hash.digest('hex');
}

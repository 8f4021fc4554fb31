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
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { installAll } from '../scripts/install-harnesses.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DONE = Symbol.for('blue-agent.test.global-setup');

/**
 * Suites that run the CLI as a process use the agent's dist/, and its `control-plane` commands the Control API's.
 * Each build bundles the packages named here (the agent's the contract's sources, the Control API's the agent's
 * transcript readers too) and what is installed.
 */
const BUILDS = [
  { pkg: 'agent', output: 'dist/main.js', inputs: ['contract', 'agent'] },
  { pkg: 'control-api', output: 'dist/server.js', inputs: ['contract', 'agent', 'control-api'] },
];
/** What a package's build does not read. */
const SKIPPED = new Set(['dist', 'node_modules', 'test']);

export default function setup(): Promise<void> {
  const shared = globalThis as { [DONE]?: Promise<void> };
  shared[DONE] ??= prepare();
  return shared[DONE];
}

async function prepare(): Promise<void> {
  for (const { pkg, output, inputs } of BUILDS) buildWhenChanged(pkg, output, inputs);
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
 * Builds a package from the current sources, unless its dist/ was built by this setup from the same bytes: runs
 * after the first (`npm test`, then `npm run test:hermetic` and `npm run certify`) take its dist/ as it is.
 */
function buildWhenChanged(pkg: string, output: string, inputs: readonly string[]): void {
  const dir = path.join(root, 'packages', pkg);
  const stamp = path.join(root, 'node_modules', '.cache', 'blue-agent-builds', `${pkg}.sha256`);
  const digest = inputsDigest(inputs);
  const built = existsSync(path.join(dir, output)) && existsSync(stamp) && readFileSync(stamp, 'utf8') === digest;
  if (built) return;
  execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: dir, stdio: 'inherit' });
  mkdirSync(path.dirname(stamp), { recursive: true });
  writeFileSync(stamp, digest);
}

/** SHA-256 over the path and bytes of every file of the packages (but their tests and outputs) and the lock file. */
function inputsDigest(packages: readonly string[]): string {
  const hash = createHash('sha256');
  const add = (file: string) =>
    hash
      .update(`${path.relative(root, file)}\0`)
      .update(readFileSync(file))
      .update('\0');
  const walk = (dir: string, top: boolean): void => {
    const entries = readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1));
    for (const e of entries) {
      if (top && SKIPPED.has(e.name)) continue;
      if (e.isDirectory()) walk(path.join(dir, e.name), false);
      else if (e.isFile()) add(path.join(dir, e.name));
    }
  };
  add(path.join(root, 'package-lock.json'));
  for (const pkg of packages) walk(path.join(root, 'packages', pkg), true);
  return hash.digest('hex');
}

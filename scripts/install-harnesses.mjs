#!/usr/bin/env node
// Installs the harness CLIs named in harness-versions.lock.json into a cache directory, one folder per version:
//   <cache>/<harness>-<version>/node_modules/.bin/<binary>
// The cache is $BLUE_AGENT_HARNESS_CACHE, else ~/.cache/blue-agent/harnesses. A folder counts as installed only when
// its marker file exists; the marker is written last, after the binary answered `--version`, so an interrupted
// install is redone. Installs happen in a private temporary folder that is renamed into place, which keeps two
// concurrent runs (two test runs, a test run and a person) from seeing each other's half-done work.
//
//   node scripts/install-harnesses.mjs [--harness NAME] [--version X] [--json] [--cache DIR] [--lock FILE]
//
// The functions below are exported so tests can use the same logic.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { findNodeAtLocation, parseTree } from 'jsonc-parser';
import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs as parseFlags } from 'node:util';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const DEFAULT_LOCK_FILE = path.join(repoRoot, 'harness-versions.lock.json');
export const MARKER_FILE = '.blue-agent-installed.json';
/** Bumped when an install folder's contents change shape; older folders are redone. */
const LAYOUT = 2;
const PARTIAL_PREFIX = '.partial-';
const NPM_TIMEOUT_MS = 15 * 60_000;
const VERSION_TIMEOUT_MS = 60_000;

/** The cache root: `$BLUE_AGENT_HARNESS_CACHE`, else `~/.cache/blue-agent/harnesses`. */
export function defaultCacheDir(env = process.env) {
  const fromEnv = env.BLUE_AGENT_HARNESS_CACHE;
  if (fromEnv !== undefined && fromEnv !== '') return path.resolve(fromEnv);
  return path.join(env.HOME && path.isAbsolute(env.HOME) ? env.HOME : homedir(), '.cache', 'blue-agent', 'harnesses');
}

/** Reads and checks the lock file: `{ <harness>: { package, versions: [exact semver, ...] } }`. */
export function readLock(file = DEFAULT_LOCK_FILE) {
  let doc;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`cannot read the harness lock file ${file}: ${error.message}`);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc))
    throw new Error(`${file}: expected an object of harnesses`);
  for (const [harness, entry] of Object.entries(doc)) {
    if (!/^[a-z][a-z0-9-]*$/.test(harness)) throw new Error(`${file}: "${harness}" is not a harness name`);
    const deps = entry?.runtime_deps;
    if (
      deps !== undefined &&
      (typeof deps?.folder !== 'string' ||
        !/^[A-Za-z0-9._-]+$/.test(deps.folder) ||
        !Array.isArray(deps.packages) ||
        !deps.packages.every((p) => typeof p === 'string' && p !== ''))
    ) {
      throw new Error(
        `${file}: ${harness}.runtime_deps must be { "folder": a folder name, "packages": a list of package specs }`,
      );
    }
    if (typeof entry?.package !== 'string' || entry.package === '')
      throw new Error(`${file}: ${harness}.package must be a package name`);
    if (!Array.isArray(entry.versions) || entry.versions.length === 0)
      throw new Error(`${file}: ${harness}.versions must be a non-empty list`);
    for (const v of entry.versions) {
      // Exact versions only: a range would make the cache folder name lie about what it holds.
      if (typeof v !== 'string' || !/^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/.test(v)) {
        throw new Error(`${file}: ${harness}.versions holds "${v}", which is not an exact version`);
      }
    }
  }
  return doc;
}

/**
 * Adds `version` to `harness`'s versions in the lock file (kept sorted): only that list's text is replaced, so every
 * other key of the entry (`runtime_deps`) and of the file stays as it is. The result is read back by readLock.
 */
export function addLockedVersion(file, harness, version) {
  const text = readFileSync(file, 'utf8');
  const doc = readLock(file);
  if (doc[harness] === undefined) throw new Error(`${file}: harness "${harness}" is not in the lock file`);
  const versions = [...new Set([...doc[harness].versions, version])].sort(compareVersions);
  const node = findNodeAtLocation(parseTree(text), [harness, 'versions']);
  if (node === undefined) throw new Error(`${file}: ${harness}.versions not found`);
  const next =
    `${text.slice(0, node.offset)}[${versions.map((v) => JSON.stringify(v)).join(', ')}]` +
    `${text.slice(node.offset + node.length)}`;
  writeFileSync(file, next);
  readLock(file);
}

/** The newest locked version of a harness (versions compared numerically, prerelease before release). */
export function latestLocked(lock, harness) {
  const entry = lock[harness];
  if (entry === undefined)
    throw new Error(`harness "${harness}" is not in the lock file (known: ${Object.keys(lock).join(', ')})`);
  return [...entry.versions].sort(compareVersions).at(-1);
}

export function compareVersions(a, b) {
  const [ma, pa] = splitVersion(a);
  const [mb, pb] = splitVersion(b);
  for (let i = 0; i < 3; i++) if (ma[i] !== mb[i]) return ma[i] - mb[i];
  if (pa === pb) return 0;
  if (pa === undefined) return 1;
  if (pb === undefined) return -1;
  return pa < pb ? -1 : 1;
}

function splitVersion(v) {
  const dash = v.indexOf('-');
  const main = (dash < 0 ? v : v.slice(0, dash)).split('.').map(Number);
  return [main, dash < 0 ? undefined : v.slice(dash + 1)];
}

export function installDir(cache, harness, version) {
  return path.join(cache, `${harness}-${version}`);
}

/** The marker of a finished install, or undefined when the folder is missing or half-done. */
export function readMarker(dir) {
  try {
    const marker = JSON.parse(readFileSync(path.join(dir, MARKER_FILE), 'utf8'));
    return typeof marker?.bin === 'string' && marker.layout === LAYOUT ? marker : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A finished install: `{ harness, version, dir, bin, runtimeDepsDir }` with absolute paths (`runtimeDepsDir` only for
 * harnesses whose lock entry has runtime_deps), or undefined when that version is not (fully) installed.
 */
export function installedHarness(cache, harness, version) {
  const dir = installDir(cache, harness, version);
  const marker = readMarker(dir);
  if (marker === undefined) return undefined;
  const bin = path.join(dir, marker.bin);
  if (!existsSync(bin)) return undefined;
  const runtimeDepsDir = typeof marker.runtimeDeps === 'string' ? path.join(dir, marker.runtimeDeps) : undefined;
  if (runtimeDepsDir !== undefined && !existsSync(path.join(runtimeDepsDir, 'node_modules'))) return undefined;
  return { harness, version, dir, bin, runtimeDepsDir };
}

/** Absolute path of an installed harness binary, or undefined when that version is not (fully) installed. */
export function installedBin(cache, harness, version) {
  return installedHarness(cache, harness, version)?.bin;
}

/**
 * Packages a harness would fetch from the npm registry while it runs (its lock entry's `runtime_deps`, `{version}`
 * standing for the version installed), installed once beside the CLI so runs stay offline; tests seed the harness's
 * config directory from there. A spec such as `<=${version}` takes the newest one the registry serves at or before it.
 */
export function runtimeDeps(entry, version) {
  const deps = entry?.runtime_deps;
  if (deps === undefined) return undefined;
  return { folder: deps.folder, packages: deps.packages.map((p) => p.replaceAll('{version}', version)) };
}

/** The command a person runs to install what is missing. */
export function installCommand(harness, version) {
  const args = ['node scripts/install-harnesses.mjs'];
  if (harness !== undefined) args.push(`--harness ${harness}`);
  if (version !== undefined) args.push(`--version ${version}`);
  return args.join(' ');
}

/**
 * Installs one harness version unless the cache already holds it. Returns
 * `{ harness, version, package, dir, bin, action: 'cached' | 'installed', durationMs }`.
 */
export async function installHarness({
  harness,
  pkg,
  version,
  runtime_deps,
  cache = defaultCacheDir(),
  log = () => {},
  npm = 'npm',
}) {
  const started = Date.now();
  const dir = installDir(cache, harness, version);
  const existing = installedBin(cache, harness, version);
  if (existing !== undefined) {
    return { harness, version, package: pkg, dir, bin: existing, action: 'cached', durationMs: Date.now() - started };
  }
  await mkdir(cache, { recursive: true });
  await removeAbandonedPartials(cache);
  const partial = path.join(cache, `${PARTIAL_PREFIX}${harness}-${version}-${process.pid}-${Date.now().toString(36)}`);
  log(`installing ${pkg}@${version} into ${dir}`);
  try {
    await runChecked(
      npm,
      ['install', '--no-save', '--no-audit', '--no-fund', '--prefix', partial, `${pkg}@${version}`],
      {
        cwd: cache,
        timeoutMs: NPM_TIMEOUT_MS,
        what: `npm install ${pkg}@${version}`,
      },
    );
    const relBin = await binRelativePath(partial, pkg, harness);
    await ensureRunnable(partial, pkg, relBin, version, log);
    const deps = runtimeDeps({ runtime_deps }, version);
    if (deps !== undefined) {
      const depsDir = path.join(partial, deps.folder);
      await mkdir(depsDir, { recursive: true });
      // Saved exactly, as the harness itself would, so the lock file's root lists each package.
      await runChecked(
        npm,
        [
          'install',
          '--save-exact',
          '--ignore-scripts',
          '--no-audit',
          '--no-fund',
          '--prefix',
          depsDir,
          ...deps.packages,
        ],
        {
          cwd: cache,
          timeoutMs: NPM_TIMEOUT_MS,
          what: `npm install ${deps.packages.join(' ')}`,
        },
      );
    }
    const marker = {
      layout: LAYOUT,
      harness,
      package: pkg,
      version,
      bin: relBin,
      runtimeDeps: deps?.folder,
      installedAt: new Date().toISOString(),
    };
    await writeFile(path.join(partial, MARKER_FILE), `${JSON.stringify(marker, null, 2)}\n`);
    if (readMarker(dir) !== undefined) {
      // Another run finished the same version first: keep theirs.
      await rm(partial, { recursive: true, force: true });
    } else {
      await rm(dir, { recursive: true, force: true });
      try {
        await rename(partial, dir);
      } catch (error) {
        // Lost a race with another run between the check and the rename: theirs is as good as ours.
        if (readMarker(dir) === undefined) throw error;
        await rm(partial, { recursive: true, force: true });
      }
    }
  } catch (error) {
    await rm(partial, { recursive: true, force: true });
    throw error;
  }
  const bin = installedBin(cache, harness, version);
  if (bin === undefined) throw new Error(`${pkg}@${version}: installed, but ${dir} holds no usable binary`);
  const durationMs = Date.now() - started;
  log(`installed ${pkg}@${version} in ${(durationMs / 1000).toFixed(1)} s: ${bin}`);
  return { harness, version, package: pkg, dir, bin, action: 'installed', durationMs };
}

/**
 * Installs every locked version (or the one harness / version asked for), one after the other: the CLIs are a few
 * hundred MB each and parallel downloads gain little on a small machine.
 */
export async function installAll({
  lockFile = DEFAULT_LOCK_FILE,
  cache = defaultCacheDir(),
  harness,
  version,
  log = () => {},
} = {}) {
  const lock = readLock(lockFile);
  const names = harness === undefined ? Object.keys(lock) : [harness];
  const results = [];
  for (const name of names) {
    const entry = lock[name];
    if (entry === undefined)
      throw new Error(`harness "${name}" is not in ${lockFile} (known: ${Object.keys(lock).join(', ')})`);
    let versions = entry.versions;
    if (version !== undefined) {
      if (!versions.includes(version)) {
        throw new Error(
          `${name} ${version} is not locked in ${lockFile} (locked: ${versions.join(', ')}); add it there first`,
        );
      }
      versions = [version];
    }
    for (const v of versions)
      results.push(
        await installHarness({
          harness: name,
          pkg: entry.package,
          version: v,
          runtime_deps: entry.runtime_deps,
          cache,
          log,
        }),
      );
  }
  return results;
}

/** `node_modules/.bin/<name>` for the package's binary named like the harness (or its only binary). */
async function binRelativePath(prefix, pkg, harness) {
  const manifest = JSON.parse(await readFile(path.join(prefix, 'node_modules', pkg, 'package.json'), 'utf8'));
  let name;
  if (typeof manifest.bin === 'string') name = pkg.slice(pkg.lastIndexOf('/') + 1);
  else if (manifest.bin && typeof manifest.bin === 'object') {
    const names = Object.keys(manifest.bin);
    name = names.includes(harness) ? harness : names[0];
  }
  if (name === undefined) throw new Error(`${pkg} declares no binary in its package.json`);
  return path.join('node_modules', '.bin', name);
}

/**
 * Confirms the binary reports the expected version. These packages put the native binary in place from a
 * postinstall script; when npm was told not to run install scripts, run that script once ourselves and check again.
 */
async function ensureRunnable(prefix, pkg, relBin, version, log) {
  const bin = path.join(prefix, relBin);
  const first = await versionOf(bin);
  if (first.ok && first.output.includes(version)) return;
  const pkgDir = path.join(prefix, 'node_modules', pkg);
  const manifest = JSON.parse(await readFile(path.join(pkgDir, 'package.json'), 'utf8'));
  const postinstall = manifest.scripts?.postinstall;
  if (typeof postinstall === 'string') {
    log(
      `${pkg}@${version}: the binary did not start (${first.output.trim().slice(0, 200)}); running its postinstall ` +
        `script`,
    );
    await runChecked('sh', ['-c', postinstall], { cwd: pkgDir, timeoutMs: NPM_TIMEOUT_MS, what: `${pkg} postinstall` });
    const second = await versionOf(bin);
    if (second.ok && second.output.includes(version)) return;
    throw new Error(
      `${pkg}@${version}: ${relBin} --version printed ${JSON.stringify(second.output.trim().slice(0, 300))}`,
    );
  }
  throw new Error(
    `${pkg}@${version}: ${relBin} --version printed ${JSON.stringify(first.output.trim().slice(0, 300))}`,
  );
}

async function versionOf(bin) {
  try {
    const { code, stdout, stderr } = await run(bin, ['--version'], { timeoutMs: VERSION_TIMEOUT_MS });
    return { ok: code === 0, output: `${stdout}${stderr}` };
  } catch (error) {
    return { ok: false, output: error.message };
  }
}

/** Partial folders left by runs that died; a live run's folder is kept. */
async function removeAbandonedPartials(cache) {
  for (const name of await readdir(cache)) {
    if (!name.startsWith(PARTIAL_PREFIX)) continue;
    const pid = Number(/-(\d+)-[0-9a-z]+$/.exec(name)?.[1]);
    if (pid === process.pid || (Number.isInteger(pid) && isAlive(pid))) continue;
    await rm(path.join(cache, name), { recursive: true, force: true });
  }
}

function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

async function runChecked(file, args, options) {
  const { code, stdout, stderr, timedOut } = await run(file, args, options);
  if (code !== 0) {
    const tail = `${stdout}\n${stderr}`.trim().split('\n').slice(-20).join('\n');
    throw new Error(`${options.what} ${timedOut ? 'timed out' : `failed (exit ${code})`}:\n${tail}`);
  }
}

/**
 * Runs a command without a shell, with a hard timeout that kills its whole process group. The directory of the
 * running Node goes first on PATH: npm and the `#!/usr/bin/env node` launchers of these packages need it.
 */
export function run(file, args, { cwd, timeoutMs, env = process.env } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      cwd,
      env: { ...env, PATH: [path.dirname(process.execPath), env.PATH ?? ''].join(path.delimiter) },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (d) => void (stdout = (stdout + d).slice(-200_000)));
    child.stderr.on('data', (d) => void (stderr = (stderr + d).slice(-200_000)));
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }, timeoutMs ?? 60_000);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr, timedOut });
    });
  });
}

function parseArgs(argv) {
  // node:util's parser: --flag value and --flag=value, unknown flags refused.
  const { values } = parseFlags({
    args: argv,
    options: {
      json: { type: 'boolean' },
      harness: { type: 'string' },
      version: { type: 'string' },
      cache: { type: 'string' },
      lock: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const opts = {
    json: values.json === true,
    harness: values.harness,
    version: values.version,
    cache: values.cache === undefined ? undefined : path.resolve(values.cache),
    lockFile: values.lock === undefined ? undefined : path.resolve(values.lock),
    help: values.help === true,
  };
  if (opts.version !== undefined && opts.harness === undefined) throw new Error('--version needs --harness');
  return opts;
}

async function main() {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`install-harnesses: ${error.message}\n`);
    return 2;
  }
  if (opts.help) {
    process.stdout.write(
      'usage: node scripts/install-harnesses.mjs [--harness NAME] [--version X] [--json] [--cache DIR] [--lock FILE]\n',
    );
    return 0;
  }
  const cache = opts.cache ?? defaultCacheDir();
  // With --json, stdout carries only the JSON document; progress goes to stderr.
  const log = (line) => (opts.json ? process.stderr : process.stdout).write(`${line}\n`);
  try {
    const results = await installAll({ ...opts, cache, log });
    if (opts.json) {
      process.stdout.write(`${JSON.stringify({ cache, harnesses: results }, null, 2)}\n`);
    } else {
      for (const r of results) {
        if (r.action === 'cached') log(`${r.harness} ${r.version}: already installed: ${r.bin}`);
      }
    }
    return 0;
  } catch (error) {
    process.stderr.write(`install-harnesses: ${error.message}\n`);
    return 1;
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  process.exitCode = await main();
}

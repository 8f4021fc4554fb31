#!/usr/bin/env node
// Certification: installs every harness CLI version pinned in harness-versions.lock.json (or the one asked for) into
// the harness cache, runs the whole loop against each (test/certify/certify.test.ts: reconcile with a user hook
// beside the managed one, a real offline session, capture, drain, resume on a second HOME, native resume with the
// earlier turns), and for each harness with two or more resumable locked versions a session captured by the oldest
// and resumed by the newest; prints a table and exits 1 when any step failed. Harnesses without a CLI here are
// certified on their fixtures.
//
//   npm run certify [-- --harness NAME] [--version X | --latest] [--update-profiles] [--results FILE]
//
// --version X of a version not in the lock file installs and certifies it, and adds it to the lock file when it
// passes. --latest asks the npm registry npm is configured with for each locked harness's newest version and
// certifies that one (added to the lock file when it passes). --update-profiles raises each interval's
// verified_before to just past the highest version that passed (never lowering it, never past a version that
// failed; with --latest, only when every version asked for passed), sets verified_by, checks the profiles with
// `blue-agent profiles check` and regenerates README.md's compatibility table.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import semver from 'semver';
import YAML from 'yaml';
import { latestQueries, parseArgs, plan, resumableIn, resumesFrom, targetLabel, USAGE } from './certify-plan.mjs';
import { inInterval, raiseCeiling, readProfiles, repoRoot, spliceCeiling, updateReadme } from './compat.mjs';
import {
  addLockedVersion,
  DEFAULT_LOCK_FILE,
  defaultCacheDir,
  installHarness,
  readLock,
} from './install-harnesses.mjs';
import { latestVersion } from './registry.mjs';

const STEPS = ['install', 'reconcile', 'session', 'capture', 'drain', 'restore', 'resume'];
const MARK = { passed: 'passed', failed: 'FAILED', 'n/a': 'n/a', skipped: 'skipped' };

function runVitest(env) {
  return new Promise((resolve, reject) => {
    const vitest = path.join(repoRoot, 'node_modules', 'vitest', 'vitest.mjs');
    const child = spawn(process.execPath, [vitest, 'run', '-c', 'vitest.certify.config.ts'], {
      cwd: path.join(repoRoot, 'packages', 'agent'),
      env: { ...process.env, ...env },
      stdio: 'inherit',
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}

function passed(result) {
  return (
    result !== undefined &&
    STEPS.every((s) => result.steps[s]?.status === 'passed' || result.steps[s]?.status === 'n/a')
  );
}

function table(rows) {
  const head = ['harness', 'version', 'profile', 'by', ...STEPS, 'time'];
  const body = rows.map((r) => [
    r.harness,
    r.version,
    r.profile ?? '?',
    r.method,
    ...STEPS.map((s) => MARK[r.steps[s]?.status] ?? 'no result'),
    `${(r.ms / 1000).toFixed(1)} s`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((row) => row[i].length)));
  const line = (cells) =>
    cells
      .map((c, i) => c.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n');
}

/** Raises the ceilings from the results; returns the lines to print. Throws when the profiles do not check. */
async function updateProfiles(results) {
  const out = [];
  const originals = new Map();
  for (const { file, doc } of readProfiles()) {
    let text = readFileSync(file, 'utf8');
    const before = text;
    for (const interval of doc.intervals) {
      const mine = results.filter((r) => r.harness === doc.harness && inInterval(r.version, interval));
      if (mine.length === 0) continue;
      const { ceiling, raised, blockedBy } = raiseCeiling(
        interval.verified_before,
        mine.map((r) => ({ version: r.version, passed: passed(r) })),
      );
      const method = mine.every((r) => r.method === 'fixtures') ? 'fixtures' : 'cli';
      const stopped = blockedBy === undefined ? '' : ` (${doc.harness} ${blockedBy} failed: no raise past it)`;
      if (raised) {
        text = spliceCeiling(text, interval.profile, ceiling, method);
        out.push(
          `${interval.profile}: verified_before ${interval.verified_before} -> ${ceiling} (verified_by: ${method})` +
            `${stopped}`,
        );
      } else {
        if (blockedBy !== undefined && semver.gt(interval.verified_before, blockedBy)) {
          out.push(
            `${interval.profile}: WARNING: ${doc.harness} ${blockedBy} failed but lies below the ceiling ` +
              `${interval.verified_before}; the ceiling is never lowered automatically: lower it by hand`,
          );
        } else out.push(`${interval.profile}: verified_before stays ${interval.verified_before}${stopped}`);
        if (
          semver.gt(interval.verified_before, interval.introduced) &&
          interval.verified_by === undefined &&
          mine.some(passed)
        ) {
          text = spliceCeiling(text, interval.profile, interval.verified_before, method);
        }
      }
    }
    if (text !== before) {
      originals.set(file, before);
      YAML.parse(text);
      writeFileSync(file, text);
    }
  }
  if (originals.size > 0) {
    const check = await new Promise((resolve) => {
      const child = spawn(
        process.execPath,
        [path.join(repoRoot, 'packages', 'agent', 'bin', 'blue-agent.js'), 'profiles', 'check'],
        { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let text = '';
      child.stdout.on('data', (d) => (text += d));
      child.stderr.on('data', (d) => (text += d));
      child.once('exit', (code) => resolve({ code, text }));
    });
    if (check.code !== 0) {
      for (const [file, text] of originals) writeFileSync(file, text);
      throw new Error(`blue-agent profiles check failed on the raised profiles (restored them):\n${check.text}`);
    }
    out.push('blue-agent profiles check: ok');
  }
  out.push(updateReadme() ? 'README.md: compatibility table updated' : 'README.md: compatibility table up to date');
  return out;
}

async function main() {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`certify: ${error.message}\n`);
    return 2;
  }
  if (opts.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const started = Date.now();
  const lock = readLock(DEFAULT_LOCK_FILE);
  const log = (line) => process.stdout.write(`[certify] ${line}\n`);
  const latest = new Map();
  let targets;
  try {
    if (opts.latest) {
      for (const { harness, package: pkg } of latestQueries(lock, opts)) {
        const version = await latestVersion(pkg);
        latest.set(harness, version);
        log(
          `${harness}: the newest version of ${pkg} is ${version}` +
            `${lock[harness].versions.includes(version) ? ' (locked already)' : ''}`,
        );
      }
    }
    const docs = readProfiles().map(({ doc }) => doc);
    targets = plan(lock, opts, latest, resumableIn(docs), resumesFrom(docs));
  } catch (error) {
    process.stderr.write(`certify: ${error.message}\n`);
    return 2;
  }
  const cache = defaultCacheDir();
  const installFailures = new Map();
  for (const t of targets.filter((x) => x.method === 'cli')) {
    try {
      const r = await installHarness({
        harness: t.harness,
        pkg: t.package,
        version: t.version,
        runtime_deps: t.runtime_deps,
        cache,
        log,
      });
      if (r.action === 'cached') log(`${t.harness} ${t.version}: cached in ${r.dir}`);
    } catch (error) {
      // The suite records the install step as failed (the CLI is not in the cache); the reason is printed below.
      installFailures.set(`${t.harness} ${t.version}`, error.message);
      log(`${t.harness} ${t.version}: install failed: ${error.message.split('\n')[0]}`);
    }
  }

  const scratch = mkdtempSync(path.join(tmpdir(), 'blue-agent-certify-'));
  const resultsFile = path.join(scratch, 'results.json');
  let code;
  let results = [];
  try {
    code = await runVitest({
      BLUE_AGENT_SKIP_HARNESS_INSTALL: '1',
      BLUE_AGENT_HARNESS_CACHE: cache,
      BLUE_AGENT_CERTIFY_RESULTS: resultsFile,
      BLUE_AGENT_CERTIFY_TARGETS: JSON.stringify(
        targets.map(({ harness, version, method, from }) => ({
          harness,
          version,
          method,
          ...(from === undefined ? {} : { from }),
        })),
      ),
    });
    if (existsSync(resultsFile)) results = JSON.parse(readFileSync(resultsFile, 'utf8'));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }

  const rows = targets.map((t) => {
    const r = results.find((x) => x.harness === t.harness && x.version === targetLabel(t));
    if (r !== undefined) return r;
    return {
      harness: t.harness,
      version: targetLabel(t),
      method: t.method,
      profile: null,
      steps: { install: { status: 'failed', ms: 0, detail: `no result: the certification suite exited ${code}` } },
      ms: 0,
    };
  });
  process.stdout.write(`\nCertification (${((Date.now() - started) / 1000).toFixed(0)} s)\n\n${table(rows)}\n`);
  const failures = rows.filter((r) => !passed(r));
  for (const r of failures) {
    const [step, s] = Object.entries(r.steps).find(([, x]) => x.status === 'failed') ?? ['?', { detail: 'incomplete' }];
    const install = installFailures.get(`${r.harness} ${r.version}`);
    process.stdout.write(
      `\n${r.harness} ${r.version}: ${step} failed:\n${(install ?? s.detail ?? '')
        .split('\n')
        .map((l) => `  ${l}`)
        .join('\n')}\n`,
    );
  }
  if (opts.results !== undefined) writeFileSync(path.resolve(opts.results), `${JSON.stringify(rows, null, 2)}\n`);

  for (const t of targets) {
    if (
      t.method === 'cli' &&
      !t.locked &&
      passed(rows.find((r) => r.harness === t.harness && r.version === t.version))
    ) {
      addLockedVersion(DEFAULT_LOCK_FILE, t.harness, t.version);
      process.stdout.write(`\n${t.harness} ${t.version} passed: added to harness-versions.lock.json\n`);
    }
  }
  if (opts.updateProfiles && opts.latest && failures.length > 0) {
    // Keeping up with releases: a ceiling moves only when the newest of every harness asked for passed.
    process.stdout.write(
      `\nno ceiling raised: ${failures.map((r) => `${r.harness} ${r.version}`).join(', ')} failed\n`,
    );
    return 1;
  }
  if (opts.updateProfiles) {
    try {
      // A ceiling is a version's own certification: cross-version rows do not move it.
      process.stdout.write(`\n${(await updateProfiles(rows.filter((r) => r.method !== 'cross'))).join('\n')}\n`);
    } catch (error) {
      process.stderr.write(`certify: ${error.message}\n`);
      return 1;
    }
  }
  return failures.length > 0 || code !== 0 ? 1 : 0;
}

process.exitCode = await main();

/**
 * A plain `reconcile` runs from dist/reconcile.cjs with a V8 code cache taken after a run (bin/code-cache.js): the
 * cache is written once, used after, made anew when V8 refuses it, and never read from a file another user could
 * have written. Run from bin/, the bundle answers as the full CLI does.
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
// @ts-expect-error plain JavaScript without declarations (bin/ loads with zero dependencies)
import { cacheFileFor, loadBundle } from '../../bin/code-cache.js';
import { versionStubs } from '../../../../test/support/context.js';

const ROOT = path.join(import.meta.dirname, '..', '..');
const ENTRY = path.join(ROOT, 'bin', 'blue-agent.js');

/** A backup's name says which file (a hash of its path) and when. */
const BACKUP_NAME = /\.[0-9a-f]{8}\.\d{4}-\d\d-\d\dT[\d-]+Z\.bak/g;

function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortedKeys((value as Record<string, unknown>)[key])]),
  );
}

/** The environment of a user whose home is `home`, everything blue-agent keeps inside it. */
function homeEnv(home: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local', 'share'),
    XDG_STATE_HOME: path.join(home, '.local', 'state'),
    BLUE_AGENT_HOME: path.join(home, '.local', 'state', 'blue-agent'),
    BLUE_AGENT_CONFIG: path.join(home, '.config', 'blue-agent', 'config.yaml'),
  };
}

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-code-cache-'));
});
afterEach(async () => rm(dir, { recursive: true, force: true }));

interface Loaded {
  exports: { answer(): number; sibling(): string };
  cacheRejected: boolean;
  save(): void;
}

/** A small bundle whose functions only run when called, and that requires a file beside it. */
async function writeBundle(): Promise<string> {
  const file = path.join(dir, 'bundle.cjs');
  await writeFile(
    path.join(dir, 'sibling.cjs'),
    'module.exports = "beside " + require("node:path").basename(__dirname);\n',
  );
  await writeFile(
    file,
    'exports.answer = function () { return [1, 2, 3].reduce((a, b) => a * b) * 7; };\nexports.sibling = () => ' +
      'require("./sibling.cjs");\n',
  );
  return file;
}

describe('the code cache of a bundle', () => {
  it('is written after the first run and used by the next', async () => {
    const file = await writeBundle();
    const cacheDir = path.join(dir, 'cache');
    await mkdir(cacheDir);
    const first = loadBundle(file, cacheDir) as Loaded;
    expect(first.exports.answer()).toBe(42);
    expect(first.exports.sibling()).toBe(`beside ${path.basename(dir)}`);
    first.save();
    const cacheFile = cacheFileFor(file, cacheDir) as string;
    const written = await stat(cacheFile);
    expect(written.mode & 0o777).toBe(0o600);
    expect(await readdir(cacheDir)).toEqual([path.basename(cacheFile)]);

    const second = loadBundle(file, cacheDir) as Loaded;
    expect(second.cacheRejected).toBe(false);
    expect(second.exports.answer()).toBe(42);
    second.save();
    // A cache V8 took is kept as it is.
    expect((await stat(cacheFile)).mtimeMs).toBe(written.mtimeMs);
  });

  it('is made anew when V8 refuses it', async () => {
    const file = await writeBundle();
    const cacheFile = cacheFileFor(file, dir) as string;
    await writeFile(cacheFile, 'not a code cache', { mode: 0o600 });
    const loaded = loadBundle(file, dir) as Loaded;
    expect(loaded.cacheRejected).toBe(true);
    expect(loaded.exports.answer()).toBe(42);
    loaded.save();
    expect((await readFile(cacheFile)).toString()).not.toBe('not a code cache');
    expect((loadBundle(file, dir) as Loaded).cacheRejected).toBe(false);
  });

  it('is not read from a file others may write', async () => {
    const file = await writeBundle();
    const cacheFile = cacheFileFor(file, dir) as string;
    await writeFile(cacheFile, 'planted');
    await chmod(cacheFile, 0o666);
    const loaded = loadBundle(file, dir) as Loaded;
    // Not read at all (a read cache would have been refused), and replaced by one of this user's.
    expect(loaded.cacheRejected).toBe(false);
    loaded.save();
    expect((await stat(cacheFile)).mode & 0o777).toBe(0o600);
    expect((await readFile(cacheFile)).toString()).not.toBe('planted');
  });

  it(
    'is neither read nor written in a folder others may write (Node.js keeps its cache under the shared temporary ' +
      'folder)',
    async () => {
      const file = await writeBundle();
      const shared = path.join(dir, 'shared');
      await mkdir(shared);
      await chmod(shared, 0o777);
      expect(cacheFileFor(file, shared)).toBeUndefined();
      const loaded = loadBundle(file, shared) as Loaded;
      expect(loaded.exports.answer()).toBe(42);
      loaded.save();
      expect(await readdir(shared)).toEqual([]);
    },
  );

  it('names the bundle as it is now: another build is another cache', async () => {
    const file = await writeBundle();
    const before = cacheFileFor(file, dir);
    await writeFile(file, `${await readFile(file, 'utf8')}exports.more = 1;\n`);
    expect(cacheFileFor(file, dir)).not.toBe(before);
    expect(cacheFileFor(file, undefined)).toBeUndefined();
  });
});

describe('a plain reconcile run from bin/', () => {
  it('runs from a bundle of ASCII only: V8 keeps other source as two-byte text, decoded slowly each run', async () => {
    const source = await readFile(path.join(ROOT, 'dist', 'reconcile.cjs'), 'latin1');
    expect(source.length).toBeGreaterThan(100_000);
    expect(source.match(/.{0,30}[^\x00-\x7f]+/)?.[0]).toBeUndefined();
  });

  it('makes its file system calls synchronously: node:fs/promises is not in the bundle', async () => {
    const source = await readFile(path.join(ROOT, 'dist', 'reconcile.cjs'), 'utf8');
    expect(source).toMatch(/src\/util\/startup\/fs-promises-sync\.ts/);
    expect(source).not.toMatch(/require\("(node:)?fs\/promises"\)/);
  });

  it(
    'takes each built-in as it is: none is copied per importing module (add one imported by default to ' +
      'builtins-as-they-are in scripts/build.mjs)',
    async () => {
      const source = await readFile(path.join(ROOT, 'dist', 'reconcile.cjs'), 'utf8');
      expect(source).toMatch(/^\/\/ builtin:node:path$/m);
      expect(source.match(/__toESM\(require\("node:[^"]+"\)[^)]*\)/g) ?? []).toEqual([]);
    },
  );

  it('makes the changes the full CLI makes, and then changes nothing', async () => {
    const bin = await versionStubs(dir, {
      claude: '2.1.332 (Claude Code)',
      codex: 'codex-cli 0.171.0',
      kimi: 'kimi, version 1.49.0',
      opencode: '1.18.33',
    });
    const policy = path.join(dir, 'policy.yaml');
    await writeFile(
      policy,
      'revision: 3\nharnesses:\n  kimi: { allow_unverified_versions: true }\nsession_upload: { presign_url: ' +
        '"https://control.example/presign" }\n',
    );
    const homes = { plain: path.join(dir, 'plain'), full: path.join(dir, 'full') };
    /** Node.js with `args`; its stdout is a file when `stdoutFile` is given (as a file or a terminal is written), else
     * a pipe. */
    const node = (home: string, args: string[], stdoutFile?: string) => {
      const env = {
        ...homeEnv(home),
        PATH: `${bin}:/usr/bin:/bin`,
        NODE_COMPILE_CACHE: path.join(dir, 'compile-cache'),
      };
      const out = stdoutFile === undefined ? 'pipe' : openSync(stdoutFile, 'w');
      const result = spawnSync(process.execPath, args, { env, encoding: 'utf8', stdio: ['ignore', out, 'pipe'] });
      if (typeof out === 'number') closeSync(out);
      const mask = (text: string) => text.replaceAll(home, '<home>').replace(BACKUP_NAME, '.<hash>.<time>.bak');
      const stdout = stdoutFile === undefined ? result.stdout : readFileSync(stdoutFile, 'utf8');
      return { status: result.status, stdout: mask(stdout), stderr: mask(result.stderr) };
    };
    const cli = (home: string, ...args: string[]) => node(home, [ENTRY, ...args]);
    for (const home of Object.values(homes)) {
      await mkdir(path.join(home, '.codex'), { recursive: true });
      await mkdir(path.join(home, '.claude'), { recursive: true });
      await writeFile(path.join(home, '.claude', 'settings.json'), '{\n  // mine\n  "model": "opus"\n}\n');
    }
    const first = cli(homes.plain, 'reconcile', '--json', '--policy', policy);
    expect(first.status).toBe(0);
    expect(first).toEqual(cli(homes.full, 'reconcile', '--json', `--policy=${policy}`));
    expect(
      JSON.parse(first.stdout).harnesses.filter((h: { action: string }) => h.action !== 'unchanged').length,
    ).toBeGreaterThan(2);
    const tree = async (home: string) => {
      const files = (await readdir(home, { recursive: true, withFileTypes: true })).filter(
        (e) => e.isFile() && !e.name.endsWith('.lock'),
      );
      const out: Record<string, string> = {};
      for (const e of files) {
        const file = path.join(e.parentPath, e.name);
        const text = await readFile(file, 'utf8');
        // The version cache lists binaries in the order their probes ended.
        out[path.relative(home, file).replace(BACKUP_NAME, '.<hash>.<time>.bak')] = (
          e.name === 'versions.json' ? JSON.stringify(sortedKeys(JSON.parse(text))) : text
        )
          .replaceAll(home, '<home>')
          .replace(BACKUP_NAME, '.<hash>.<time>.bak')
          .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<time>');
      }
      return out;
    };
    const written = await tree(homes.plain);
    expect(Object.keys(written)).toEqual(
      expect.arrayContaining(['.claude/settings.json', '.local/state/blue-agent/ledger.json']),
    );
    expect(written['.claude/settings.json']).toContain('// mine');
    expect(written).toEqual(await tree(homes.full));
    // A run that changes nothing, its report written to a file, loads neither node:crypto nor node:fs/promises, nor
    // node:stream (which either would bring, as would making process.stdout).
    const loaded = path.join(dir, 'loaded.json');
    await writeFile(
      path.join(dir, 'record.cjs'),
      `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(loaded)}, ` +
        `JSON.stringify(process.moduleLoadList)));\n`,
    );
    const again = node(
      homes.plain,
      ['--require', path.join(dir, 'record.cjs'), ENTRY, 'reconcile', '--json', '--policy', policy],
      path.join(dir, 'report.json'),
    );
    expect(again.status).toBe(0);
    const modules = JSON.parse(await readFile(loaded, 'utf8')) as string[];
    expect(modules).toContain('NativeModule vm');
    expect(modules.filter((m) => /^NativeModule (crypto|fs\/promises|stream)$/.test(m))).toEqual([]);
    expect(JSON.parse(again.stdout).harnesses.every((h: { action: string }) => h.action === 'unchanged')).toBe(true);
    expect(await tree(homes.plain)).toEqual(written);
    // Its report for a person, thrown away (cron, scripts): /dev/null is no terminal, told without node:tty.
    expect(
      node(
        homes.plain,
        ['--require', path.join(dir, 'record.cjs'), ENTRY, 'reconcile', '--policy', policy],
        '/dev/null',
      ).status,
    ).toBe(0);
    expect(
      (JSON.parse(await readFile(loaded, 'utf8')) as string[]).filter((m) =>
        /^NativeModule (tty|net|stream|crypto)$/.test(m),
      ),
    ).toEqual([]);
    // Where Node.js runs without WebAssembly, files are hashed by node:crypto, to the same ledger.
    const jitless = node(homes.plain, ['--jitless', ENTRY, 'reconcile', '--json', '--policy', policy]);
    expect(jitless).toMatchObject({ status: 0, stderr: '' });
    expect(JSON.parse(jitless.stdout).harnesses.every((h: { action: string }) => h.action === 'unchanged')).toBe(true);
    expect(await tree(homes.plain)).toEqual(written);
  });

  it('ends quietly when the reader of its output has gone away', async () => {
    const bin = await versionStubs(dir, { claude: '2.1.332 (Claude Code)', opencode: '1.18.33' });
    await mkdir(path.join(dir, 'home'));
    const env = {
      ...homeEnv(path.join(dir, 'home')),
      PATH: `${bin}:/usr/bin:/bin`,
      NODE_COMPILE_CACHE: path.join(dir, 'compile-cache'),
    };
    const policy = path.join(dir, 'policy.yaml');
    await writeFile(policy, 'revision: 3\nsession_upload: { presign_url: "https://control.example/presign" }\n');
    const args = ['--dry-run', '--policy', policy];
    const whole = spawnSync(process.execPath, [ENTRY, 'reconcile', ...args], { env, encoding: 'utf8' });
    expect(whole, whole.stdout).toMatchObject({ status: 0 });
    for (const more of [[], ['--json']]) {
      const child = spawn(process.execPath, [ENTRY, 'reconcile', ...args, ...more], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      // Closed before the child has started: its first write finds no reader.
      child.stdout.destroy();
      let stderr = '';
      child.stderr.on('data', (chunk) => (stderr += chunk));
      const code = await new Promise((resolve) => child.on('close', resolve));
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    }
  });

  it('answers as the full CLI does, and leaves its code cache', async () => {
    const home = path.join(dir, 'home');
    const cacheDir = path.join(dir, 'compile-cache');
    // The versions the reconcile bench runs with: every harness found ends active or awaiting trust, exit 0.
    const bin = await versionStubs(dir, {
      claude: '2.1.332 (Claude Code)',
      codex: 'codex-cli 0.171.0',
      kimi: 'kimi, version 1.49.0',
      opencode: '1.18.33',
    });
    await mkdir(path.join(home, '.codex'), { recursive: true });
    const policy = path.join(dir, 'policy.yaml');
    await writeFile(
      policy,
      'revision: 3\nharnesses:\n  kimi: { allow_unverified_versions: true }\nsession_upload: { presign_url: ' +
        '"https://control.example/presign" }\n',
    );
    const env = {
      ...process.env,
      HOME: home,
      PATH: `${bin}:/usr/bin:/bin`,
      XDG_CONFIG_HOME: path.join(home, '.config'),
      XDG_DATA_HOME: path.join(home, '.local', 'share'),
      XDG_STATE_HOME: path.join(home, '.local', 'state'),
      BLUE_AGENT_HOME: path.join(home, '.local', 'state', 'blue-agent'),
      BLUE_AGENT_CONFIG: path.join(home, '.config', 'blue-agent', 'config.yaml'),
      NODE_COMPILE_CACHE: cacheDir,
    };
    const cli = (...args: string[]) => spawnSync(process.execPath, [ENTRY, ...args], { env, encoding: 'utf8' });
    // `--policy=FILE` is not the plain spelling: the full CLI (commander) parses it.
    const full = cli('reconcile', '--dry-run', '--json', `--policy=${policy}`);
    const plain = cli('reconcile', '--dry-run', '--json', '--policy', policy);
    expect(full.status).toBe(0);
    expect(plain).toMatchObject({ status: full.status, stdout: full.stdout, stderr: full.stderr });
    expect(JSON.parse(plain.stdout).harnesses.length).toBeGreaterThan(0);
    const caches = (await readdir(cacheDir, { recursive: true })).filter((f) =>
      /blue-agent-.*\.v8cache$/.test(String(f)),
    );
    expect(caches).toHaveLength(1);

    const human = cli('reconcile', '--dry-run', '--policy', policy);
    expect(human).toMatchObject({ status: 0, stdout: cli('reconcile', '--dry-run', `--policy=${policy}`).stdout });
    const failed = [
      cli('reconcile', '--json', '--policy', path.join(dir, 'missing.yaml')),
      cli('reconcile', '--json', `--policy=${path.join(dir, 'missing.yaml')}`),
    ];
    expect(failed[0]).toMatchObject({
      status: failed[1]!.status,
      stdout: failed[1]!.stdout,
      stderr: failed[1]!.stderr,
    });
    expect(failed[0]!.status).toBe(1);
  });
});

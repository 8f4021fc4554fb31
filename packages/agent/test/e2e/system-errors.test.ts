/**
 * Ordinary filesystem failures, met by the built command line run as a process: each is reported with its own code,
 * the person's path and a hint, never as INTERNAL.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { agentRoot, makeTestHome, type TestHome } from '../../../../test/support/context.js';

const run = promisify(execFile);
const entry = path.join(agentRoot, 'bin', 'blue-agent.js');
const SESSION = '3d394c86-0c1e-4a57-9d43-0f0a3bb1e2c1';
const PROFILE = 'claude-v2_0_12';
/** Linux's sysfs refuses new files and folders to every user, root included (EACCES, EPERM, or EROFS when mounted so).
 * */
const REFUSING_DIR = process.platform === 'linux' && existsSync('/sys/kernel') ? '/sys' : undefined;

let t: TestHome;
let env: Record<string, string>;
let claudeDir: string;
let policy: string;

beforeEach(async () => {
  t = await makeTestHome();
  const bin = path.join(t.root, 'bin');
  await mkdir(bin);
  await writeFile(path.join(bin, 'claude'), "#!/bin/sh\necho '2.1.332 (Claude Code)'\n", { mode: 0o755 });
  claudeDir = path.join(t.root, 'claude');
  env = { ...t.env, CLAUDE_CONFIG_DIR: claudeDir, PATH: `${bin}:${path.dirname(process.execPath)}:/usr/bin:/bin` };
  const project = path.join(claudeDir, 'projects', '-work');
  await mkdir(project, { recursive: true });
  await writeFile(
    path.join(project, `${SESSION}.jsonl`),
    `${JSON.stringify({ type: 'user', sessionId: SESSION, message: { role: 'user', content: 'hi' } })}\n`,
  );
  policy = path.join(t.root, 'policy.yaml');
  await writeFile(
    policy,
    'revision: 2\nsession_upload: { presign_url: "https://c.example/session-uploads/presign" }\n',
  );
});
afterEach(async () => t.cleanup());

interface Failure {
  code: string;
  message: string;
  hint: string;
  file?: string;
}

async function cli(
  args: string[],
  extraEnv: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [entry, ...args], {
      env: { ...env, ...extraEnv },
      cwd: t.home,
      timeout: 30_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** Runs a command with --json that must fail, and returns its error document. */
async function failure(args: string[], extraEnv: Record<string, string> = {}): Promise<Failure> {
  const result = await cli([...args, '--json'], extraEnv);
  expect(result.code, result.stderr).toBe(1);
  const doc = JSON.parse(result.stdout) as { ok: boolean; error: Failure };
  expect(doc.ok).toBe(false);
  expect(doc.error.code).not.toBe('INTERNAL');
  expect(doc.error.hint).not.toContain('bug');
  return doc.error;
}

/** The same, for a command without --json: the error as printed on stderr. */
async function printedFailure(args: string[]): Promise<Failure> {
  const result = await cli(args);
  expect(result.code, result.stderr).toBe(1);
  const printed = /^blue-agent: error \[([A-Z_]+)\]: (.*)\n {2}hint: (.*)\n$/.exec(result.stderr);
  expect(printed, result.stderr).not.toBeNull();
  const [, code, message, hint] = printed!;
  expect(code).not.toBe('INTERNAL');
  return { code: code!, message: message!, hint: hint! };
}

const bundleCreate = (out: string) => [
  'bundle',
  'create',
  '--harness',
  'claude',
  '--session',
  SESSION,
  '--profile',
  PROFILE,
  '--out',
  out,
];

async function makeBundle(): Promise<string> {
  const file = path.join(t.root, 'session.bundle');
  const made = await cli(bundleCreate(file));
  expect(made.code, made.stderr).toBe(0);
  return file;
}

describe('bundle create --out', () => {
  it('into a folder that does not exist: PATH_NOT_FOUND naming the path given, in both outputs', async () => {
    const out = path.join(t.root, 'no', 'such', 'dir', 'x.bundle');
    const error = await failure(bundleCreate(out));
    expect(error.code).toBe('PATH_NOT_FOUND');
    expect(error.file).toBe(out);
    expect(error.message).toMatch(
      new RegExp(`^cannot write the bundle to ${out}: no such file or directory \\(ENOENT: open `),
    );
    expect(error.hint).toContain(`ls -ld ${path.dirname(out)}`);
    const human = await cli(bundleCreate(out));
    expect(human.code).toBe(1);
    expect(human.stderr).toContain(`blue-agent: error [PATH_NOT_FOUND]: cannot write the bundle to ${out}`);
    expect(human.stderr).toContain('  hint: ');
  });

  it('onto a directory: NOT_A_FILE, and nothing is left beside it', async () => {
    const out = path.join(t.root, 'existing');
    await mkdir(out);
    const error = await failure(bundleCreate(out));
    expect(error.code).toBe('NOT_A_FILE');
    expect(error.message).toBe(`cannot write the bundle to ${out}: is a directory, not a file (EISDIR: rename)`);
    expect((await readdir(t.root)).filter((name) => name.endsWith('.partial'))).toEqual([]);
  });

  it('below a regular file: NOT_A_DIRECTORY', async () => {
    await writeFile(path.join(t.root, 'plain'), 'x');
    const out = path.join(t.root, 'plain', 'x.bundle');
    const error = await failure(bundleCreate(out));
    expect(error.code).toBe('NOT_A_DIRECTORY');
    expect(error.file).toBe(out);
  });

  it.skipIf(REFUSING_DIR === undefined)('where no one may create files: PERMISSION_DENIED', async () => {
    const out = path.join(REFUSING_DIR!, 'blue-agent-test.bundle');
    const error = await failure(bundleCreate(out));
    expect(error.code).toBe('PERMISSION_DENIED');
    expect(error.file).toBe(out);
    expect(error.hint).toContain(`ls -ld ${REFUSING_DIR} ${out}`);
  });
});

describe('sessions export --out', () => {
  it.skipIf(!existsSync('/dev/full'))('on a full device: NO_SPACE, with the filesystem to free space on', async () => {
    const bundle = await makeBundle();
    // /dev/full takes the open and refuses every write with ENOSPC, as a full disk does.
    const error = await printedFailure(['sessions', 'export', bundle, '--format', 'markdown', '--out', '/dev/full']);
    expect(error.code).toBe('NO_SPACE');
    expect(error.message).toBe('cannot write the export to /dev/full: no space left on the device (ENOSPC: write)');
    expect(error.hint).toContain('df -h /dev');
  });

  it('onto a directory: NOT_A_FILE', async () => {
    const bundle = await makeBundle();
    const out = path.join(t.root, 'exports');
    await mkdir(out);
    const error = await printedFailure(['sessions', 'export', bundle, '--format', 'json', '--out', out]);
    expect(error.code).toBe('NOT_A_FILE');
    expect(error.message).toBe(`cannot write the export to ${out}: is a directory, not a file (EISDIR: open)`);
  });
});

describe('reconcile', () => {
  it("--dry-run with a harness's config file that is a symbolic link loop: UNSAFE_PATH for that file", async () => {
    const settings = path.join(claudeDir, 'settings.json');
    await symlink('settings.json', settings);
    const result = await cli(['reconcile', '--policy', policy, '--harness', 'claude', '--dry-run', '--json']);
    expect(result.code, result.stderr).toBe(1);
    const report = JSON.parse(result.stdout) as {
      harnesses: { state: string; files: { path: string; action: string; error?: Failure }[] }[];
    };
    const claude = report.harnesses[0]!;
    expect(claude.state).toBe('error');
    expect(claude.files).toEqual([
      {
        path: settings,
        action: 'error',
        error: expect.objectContaining({
          code: 'UNSAFE_PATH',
          file: settings,
          message: expect.stringContaining('too many levels of symbolic links (ELOOP'),
        }),
      },
    ]);
    expect(claude.files[0]!.error!.hint).toContain(`ls -l ${settings}`);
  });

  it.skipIf(REFUSING_DIR === undefined)(
    "a harness's config folder no one may write: PERMISSION_DENIED naming the config file",
    async () => {
      const dir = path.join(REFUSING_DIR!, 'blue-agent-claude');
      const result = await cli(['reconcile', '--policy', policy, '--harness', 'claude', '--json'], {
        CLAUDE_CONFIG_DIR: dir,
      });
      expect(result.code, result.stderr).toBe(1);
      const report = JSON.parse(result.stdout) as {
        harnesses: { files: { path: string; action: string; error?: Failure }[] }[];
      };
      const settings = path.join(dir, 'settings.json');
      const failed = report.harnesses[0]!.files.find((f) => f.action === 'error')!;
      expect(failed.path).toBe(settings);
      expect(failed.error).toMatchObject({ code: 'PERMISSION_DENIED', file: settings });
      expect(failed.error!.message).toMatch(new RegExp(`^cannot update ${settings}: `));
      // The folder it could not create is named by the one above it, where the permission is missing.
      expect(failed.error!.hint).toContain(`ls -ld ${REFUSING_DIR} ${settings}`);
    },
  );

  it('a state directory below a regular file: NOT_A_DIRECTORY naming the state file it could not write', async () => {
    await writeFile(path.join(t.root, 'plain'), 'x');
    const stateDir = path.join(t.root, 'plain', 'state');
    const error = await failure(['reconcile', '--policy', policy, '--harness', 'claude'], {
      BLUE_AGENT_HOME: stateDir,
    });
    expect(error.code).toBe('NOT_A_DIRECTORY');
    expect(error.message).toMatch(new RegExp(`^cannot write blue-agent's state file ${stateDir}/`));
  });

  it.skipIf(REFUSING_DIR === undefined)(
    'a state directory no one may create: PERMISSION_DENIED with the command to look at it',
    async () => {
      const stateDir = path.join(REFUSING_DIR!, 'blue-agent-state');
      const error = await failure(['reconcile', '--policy', policy, '--harness', 'claude'], {
        BLUE_AGENT_HOME: stateDir,
      });
      expect(error.code).toBe('PERMISSION_DENIED');
      expect(error.message).toContain(stateDir);
      expect(error.hint).toContain('ls -ld');
    },
  );

  it(
    'a state directory without write permission (mode 0500): PERMISSION_DENIED, or written where permissions do ' +
      'not bind',
    async () => {
      const stateDir = path.join(t.root, 'state');
      await mkdir(stateDir, { mode: 0o700 });
      await chmod(stateDir, 0o500);
      try {
        // Whether the mode binds this user (it does not bind a privileged one) is asked of the filesystem itself.
        const binds = await writeFile(path.join(stateDir, 'probe'), '').then(
          async () => {
            await rm(path.join(stateDir, 'probe'));
            return false;
          },
          () => true,
        );
        const result = await cli(['reconcile', '--policy', policy, '--harness', 'claude', '--json'], {
          BLUE_AGENT_HOME: stateDir,
        });
        if (binds) {
          expect(result.code, result.stderr).toBe(1);
          const error = (JSON.parse(result.stdout) as { error: Failure }).error;
          expect(error.code).toBe('PERMISSION_DENIED');
          expect(error.message).toContain(stateDir);
          expect(error.hint).toContain(`ls -ld ${stateDir}`);
        } else {
          expect(result.code, result.stderr).toBe(0);
          expect(await readFile(path.join(claudeDir, 'settings.json'), 'utf8')).toContain('capture --harness claude');
        }
      } finally {
        await chmod(stateDir, 0o700);
      }
    },
  );
});

/**
 * Set-ups for the status and doctor tests: a temporary HOME, fake harness binaries on PATH that print a version, an
 * agent config, a token file and a spool.
 */
import { chmod, lstat, mkdir, readdir, readFile, readlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { bufferOutput, stateLayout, type Context } from '../../packages/agent/src/context.js';
import { main } from '../../packages/agent/src/cli/main.js';
import { Spool } from '../../packages/agent/src/spool/index.js';
import { makeTestHome, type TestHome } from './context.js';
import type { HarnessName } from '../../packages/contract/src/schema/index.js';
import { versionLines } from './rigs.js';

export const SELF = { node: '/usr/bin/node', entry: '/opt/blue-agent/bin/blue-agent.js' };
export const VERSIONS: Record<HarnessName, string> = versionLines();

export interface Setup {
  t: TestHome;
  bin: string;
  stateDir: string;
  ctx: Context;
  /** Fake harness binaries: name → `--version` output. */
  harnesses(versions: Partial<Record<HarnessName, string>>): Promise<void>;
  config(text: string): Promise<void>;
  token(value: string, mode?: number): Promise<void>;
  /** A new context (same HOME and PATH) with overrides, e.g. a clock. */
  context(overrides?: Parameters<TestHome['context']>[0]): Context;
  /** Runs the CLI; returns the exit code and what it printed. */
  cli(
    argv: string[],
    overrides?: Parameters<TestHome['context']>[0],
  ): Promise<{ code: number; stdout: string; stderr: string }>;
  cleanup(): Promise<void>;
}

export async function setup(): Promise<Setup> {
  const t = await makeTestHome();
  const bin = path.join(t.root, 'bin');
  await mkdir(bin);
  const stateDir = t.env.BLUE_AGENT_HOME!;
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  const env = { PATH: `${bin}:/usr/bin:/bin` };
  const context: Setup['context'] = (overrides = {}) =>
    t.context({ self: SELF, ...overrides, env: { ...env, ...overrides.env } });
  const s: Setup = {
    t,
    bin,
    stateDir,
    ctx: context(),
    async harnesses(versions) {
      for (const [name, output] of Object.entries(versions)) {
        await writeFile(path.join(bin, name), `#!/bin/sh\necho '${output}'\n`, { mode: 0o755 });
      }
    },
    async config(text) {
      await mkdir(path.dirname(t.env.BLUE_AGENT_CONFIG!), { recursive: true });
      await writeFile(t.env.BLUE_AGENT_CONFIG!, text);
    },
    async token(value, mode = 0o600) {
      const file = path.join(stateDir, 'token');
      await writeFile(file, `${value}\n`, { mode });
      await chmod(file, mode);
    },
    context,
    async cli(argv, overrides = {}) {
      const stdout = bufferOutput();
      const stderr = bufferOutput();
      const code = await main(argv, context({ ...overrides, stdout, stderr }));
      return { code, stdout: stdout.text(), stderr: stderr.text() };
    },
    cleanup: () => t.cleanup(),
  };
  return s;
}

/** Captures in the spool, as the hook writes them. */
export async function enqueue(
  stateDir: string,
  harness: string,
  sessionIds: string[],
  createdAt: number[],
): Promise<string[]> {
  const spool = await Spool.open(stateLayout(stateDir));
  const ids: string[] = [];
  for (const [i, session] of sessionIds.entries()) {
    const record = await spool.enqueueIntake({
      harness,
      profile: 'claude-v2_0_12',
      payload: { session_id: session },
      createdAtUnixMs: createdAt[i]!,
    });
    ids.push(record.id);
  }
  return ids;
}

/** Every file under a directory with its bytes and mtime: "nothing was written" means this does not change. */
export async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (d: string): Promise<void> => {
    for (const entry of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      const full = path.join(d, entry.name);
      const info = await lstat(full);
      if (entry.isDirectory()) {
        out[`${full}/`] = `dir:${(info.mode & 0o7777).toString(8)}:${info.mtimeMs}`;
        await walk(full);
      } else {
        out[full] =
          `${info.mtimeMs}:${(info.mode & 0o7777).toString(8)}:` +
          `${info.isSymbolicLink() ? await readlink(full) : await readFile(full, 'utf8')}`;
      }
    }
  };
  await walk(dir);
  return out;
}

/**
 * A Context around a fresh temporary HOME: every location the agent or a harness reads is inside it.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bufferOutput, createContext, type Context, type ContextOverrides } from '../../packages/agent/src/context.js';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The packages' folders: the agent ships bin/, dist/, profiles/ and demo/; the contract schemas/; the server
 * dist/assets. */
export const agentRoot = path.join(repoRoot, 'packages', 'agent');
export const contractRoot = path.join(repoRoot, 'packages', 'contract');
export const controlApiRoot = path.join(repoRoot, 'packages', 'control-api');

export interface TestHome {
  root: string;
  home: string;
  env: Record<string, string>;
  ctx: Context;
  stdout: ReturnType<typeof bufferOutput>;
  stderr: ReturnType<typeof bufferOutput>;
  /** A new Context on the same HOME, with overrides (for example another PATH or `self`). */
  context(overrides?: ContextOverrides & { env?: Record<string, string> }): Context;
  cleanup(): Promise<void>;
}

export async function makeTestHome(extraEnv: Record<string, string> = {}): Promise<TestHome> {
  const root = await mkdtemp(path.join(tmpdir(), 'blue-agent-test-'));
  const home = path.join(root, 'home');
  const env: Record<string, string> = {
    HOME: home,
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local', 'share'),
    XDG_STATE_HOME: path.join(home, '.local', 'state'),
    BLUE_AGENT_HOME: path.join(home, '.local', 'state', 'blue-agent'),
    BLUE_AGENT_CONFIG: path.join(home, '.config', 'blue-agent', 'config.yaml'),
    ...extraEnv,
  };
  const stdout = bufferOutput();
  const stderr = bufferOutput();
  // UTC unless a test gives its own time zone: no result depends on the machine's.
  const context = (overrides: ContextOverrides & { env?: Record<string, string> } = {}) =>
    createContext({
      cwd: home,
      stdout,
      stderr,
      ...overrides,
      clock: { now: () => Date.now(), utcOffsetMinutes: () => 0, ...overrides.clock },
      env: { ...env, ...overrides.env },
    });
  const { mkdir } = await import('node:fs/promises');
  await mkdir(home, { recursive: true });
  return {
    root,
    home,
    env,
    ctx: context(),
    stdout,
    stderr,
    context,
    cleanup: () => rm(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }),
  };
}

/**
 * Stand-in harness executables in `<root>/bin` that answer `--version` with the given output, as reconcile's version
 * detection reads it. Returns the folder, to put first on PATH.
 */
export async function versionStubs(root: string, versions: Record<string, string>): Promise<string> {
  const bin = path.join(root, 'bin');
  await mkdir(bin, { recursive: true });
  for (const [name, output] of Object.entries(versions))
    await writeFile(path.join(bin, name), `#!/bin/sh\necho '${output}'\n`, { mode: 0o755 });
  return bin;
}

/**
 * Shared by the run-loop tests: a temporary HOME with a fake Claude Code on PATH (it only prints its version), a
 * real Control API on loopback, and helpers to wait on the agent's JSON log lines.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { makeTestHome, type TestHome } from './context.js';

export const CLAUDE_VERSION = '2.1.332 (Claude Code)';

export interface AgentHome extends TestHome {
  bin: string;
  stateDir: string;
  settings: string;
}

/** A HOME whose PATH has a fake `claude` that prints a supported version. */
export async function agentHome(env: Record<string, string> = {}): Promise<AgentHome> {
  const t = await makeTestHome(env);
  const bin = path.join(t.root, 'bin');
  await mkdir(bin);
  await writeFile(path.join(bin, 'claude'), `#!/bin/sh\necho '${CLAUDE_VERSION}'\n`, { mode: 0o755 });
  t.env.PATH = `${bin}:/usr/bin:/bin`;
  return Object.assign(t, {
    bin,
    stateDir: t.env.BLUE_AGENT_HOME!,
    settings: path.join(t.home, '.claude', 'settings.json'),
  });
}

/**
 * Polls `check` until it returns a value that is not undefined/false, or fails after `timeoutMs`: a bound on what
 * never comes, generous because a loaded machine is slow; what comes ends the wait at once.
 */
export async function waitFor<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(25);
  }
}

export type LogLine = { time: string; level: string; msg: string } & Record<string, any>;

export function parseLog(text: string): LogLine[] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as LogLine);
}

/** A policy that turns capture on, as the Control API publishes it. */
export function uploadPolicy(controlUrl: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { ttl_seconds: 1, session_upload: { presign_url: `${controlUrl}/session-uploads/presign` }, ...extra };
}

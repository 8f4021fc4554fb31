/**
 * The checkout's shell entries — `./blue-agent`, `scripts/with-node24`, `scripts/install-launcher` — run as a person
 * runs them: a process in a folder of the caller's, with an environment of its own. PATH starts with the Node.js
 * running the tests (a supported one), so the launcher provisions nothing.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from './context.js';

export const LAUNCHER = path.join(repoRoot, 'blue-agent');
export const WITH_NODE24 = path.join(repoRoot, 'scripts', 'with-node24');
export const INSTALL_LAUNCHER = path.join(repoRoot, 'scripts', 'install-launcher');

/** A PATH with a supported Node.js and the system's tools, and nothing named blue-agent. */
export function plainPath(): string {
  return `${path.dirname(process.execPath)}:/usr/bin:/bin`;
}

export interface ScriptResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `file args` in `cwd` with exactly `env`; killed after `timeoutMs`. */
export function runFile(
  file: string,
  args: readonly string[],
  options: { env: Record<string, string>; cwd: string; timeoutMs?: number },
): Promise<ScriptResult> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      [...args],
      { env: options.env, cwd: options.cwd, timeout: options.timeoutMs ?? 60_000, encoding: 'utf8' },
      (error, stdout, stderr) => {
        if (error !== null && typeof error.code !== 'number')
          reject(new Error(`${file} did not run: ${error.message}\n${stderr}`));
        else resolve({ code: error === null ? 0 : (error.code as number), stdout, stderr });
      },
    );
  });
}

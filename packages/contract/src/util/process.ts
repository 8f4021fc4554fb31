/**
 * Child processes, always without a shell, always with a timeout and bounded output.
 */
export interface RunOptions {
  timeoutMs: number;
  env?: Readonly<Record<string, string | undefined>>;
  cwd?: string;
  /** Bytes of stdout/stderr kept; the rest is dropped. */
  maxOutputBytes?: number;
  input?: string;
  /** Ends the child (and its process group) when aborted, as a timeout does. */
  signal?: AbortSignal;
}

export interface RunResult {
  exitCode: number | undefined;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** Set when the binary could not be started at all (ENOENT, EACCES). */
  spawnError?: string;
}

export type ProcessRunner = (file: string, args: readonly string[], options: RunOptions) => Promise<RunResult>;

export function createProcessRunner(): ProcessRunner {
  return async (file, args, options) => {
    const { execa } = await import('execa');
    // Its own process group, so a timeout ends everything it started: a grandchild holding stdout open would
    // otherwise keep the call waiting past its deadline.
    const subprocess = execa(file, args, {
      shell: false,
      reject: false,
      detached: true,
      env: options.env as NodeJS.ProcessEnv | undefined,
      extendEnv: options.env === undefined,
      cwd: options.cwd,
      input: options.input,
      stdin: options.input === undefined ? 'ignore' : 'pipe',
      maxBuffer: options.maxOutputBytes ?? 1024 * 1024,
      stripFinalNewline: false,
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(subprocess.pid);
    }, options.timeoutMs);
    const abort = (): void => killGroup(subprocess.pid);
    options.signal?.addEventListener('abort', abort, { once: true });
    if (options.signal?.aborted === true) abort();
    try {
      const result = await subprocess;
      const spawnFailed = result.failed && result.exitCode === undefined && !timedOut && !result.isTerminated;
      return {
        exitCode: timedOut ? undefined : result.exitCode,
        stdout: typeof result.stdout === 'string' ? result.stdout : '',
        stderr: typeof result.stderr === 'string' ? result.stderr : '',
        timedOut,
        ...(spawnFailed ? { spawnError: result.code ?? result.shortMessage } : {}),
      };
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', abort);
      // Whatever the child left behind in its group goes with it.
      killGroup(subprocess.pid);
    }
  };
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

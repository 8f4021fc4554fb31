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
    const result = await execa(file, args, {
      shell: false,
      reject: false,
      timeout: options.timeoutMs,
      killSignal: 'SIGKILL',
      env: options.env as NodeJS.ProcessEnv | undefined,
      extendEnv: options.env === undefined,
      cwd: options.cwd,
      input: options.input,
      stdin: options.input === undefined ? 'ignore' : 'pipe',
      maxBuffer: options.maxOutputBytes ?? 1024 * 1024,
      stripFinalNewline: false,
    });
    const spawnFailed = result.failed && result.exitCode === undefined && !result.timedOut && !result.isTerminated;
    return {
      exitCode: result.exitCode,
      stdout: typeof result.stdout === 'string' ? result.stdout : '',
      stderr: typeof result.stderr === 'string' ? result.stderr : '',
      timedOut: result.timedOut,
      ...(spawnFailed ? { spawnError: result.code ?? result.shortMessage } : {}),
    };
  };
}

/**
 * An interactive harness session in a pseudo-terminal, for CLIs that fire their session-end hook only when an
 * interactive session closes. The CLI's output goes through a headless terminal emulator, so waits look at the
 * screen as a person sees it (a full-screen UI redraws in place), and keys go in the way a person types them: one
 * character at a time (a burst reads as a paste to some CLIs, and an Enter inside it as a new line), Enter on its own
 * after a pause. Every wait and the whole session are bounded; the process group is killed at the end either way.
 */
import { spawn as ptySpawn, type IPty } from '@lydell/node-pty';
import { Terminal } from '@xterm/headless';
import { setTimeout as sleep } from 'node:timers/promises';
import type { HarnessRunResult } from './run-harness.js';

const COLUMNS = 120;
const ROWS = 40;
/** Between typed characters: slow enough not to read as a paste. */
const TYPE_GAP_MS = 25;

export interface PtySession {
  /** The visible screen, one line per row, trailing blanks trimmed. */
  screen(): string;
  /** Everything the terminal holds, scroll-back included. */
  all(): string;
  /** Waits until `test(screen)` holds; throws, with the screen, after `timeoutMs`. */
  waitFor(what: string, test: (screen: string) => boolean, timeoutMs?: number): Promise<void>;
  /** Like waitFor, but false instead of throwing. */
  waitUntil(test: (screen: string) => boolean, timeoutMs: number): Promise<boolean>;
  /** Types text one character at a time. */
  type(text: string): Promise<void>;
  /** Sends keys as they are (Enter is `\r`, Up is `\x1b[A`). */
  press(keys: string): void;
  exited(): boolean;
  /** Waits for the process to end (bounded by the session's deadline). */
  done(): Promise<HarnessRunResult>;
  /** Kills the process group now. */
  kill(): void;
}

export interface PtyOptions {
  env: Record<string, string>;
  cwd: string;
  /** The whole session, after which the process group is killed. Default 120 s. */
  timeoutMs?: number;
}

export function startPty(bin: string, args: readonly string[], options: PtyOptions): PtySession {
  const started = Date.now();
  const terminal = new Terminal({ cols: COLUMNS, rows: ROWS, allowProposedApi: true, scrollback: 5000 });
  const child: IPty = ptySpawn(bin, [...args], {
    name: 'xterm-256color',
    cols: COLUMNS,
    rows: ROWS,
    cwd: options.cwd,
    env: { ...options.env, TERM: 'xterm-256color' },
  });
  let raw = '';
  child.onData((data) => {
    raw = raw.length > 4_000_000 ? raw : raw + data;
    terminal.write(data);
  });
  let ended: { exitCode: number; signal?: number } | undefined;
  let timedOut = false;
  const exit = new Promise<{ exitCode: number; signal?: number }>((resolve) =>
    child.onExit((e) => {
      ended = e;
      resolve(e);
    }),
  );
  const killGroup = () => {
    for (const target of [-child.pid, child.pid]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
  };
  const deadline = setTimeout(() => {
    timedOut = true;
    killGroup();
  }, options.timeoutMs ?? 120_000);

  const lines = (from: number, to: number) => {
    const buffer = terminal.buffer.active;
    const out: string[] = [];
    for (let i = from; i < to; i++) out.push(buffer.getLine(i)?.translateToString(true) ?? '');
    return out.join('\n');
  };
  // The emulator parses asynchronously: a read waits for what has been written so far.
  const settle = () => new Promise<void>((resolve) => terminal.write('', resolve));
  const session: PtySession = {
    screen: () => lines(terminal.buffer.active.viewportY, terminal.buffer.active.viewportY + ROWS),
    all: () => lines(0, terminal.buffer.active.length),
    async waitUntil(test, timeoutMs) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        await settle();
        if (test(session.screen())) return true;
        if (ended !== undefined || Date.now() >= end) return false;
        await sleep(50);
      }
    },
    async waitFor(what, test, timeoutMs = 60_000) {
      if (!(await session.waitUntil(test, timeoutMs))) {
        const why =
          ended === undefined ? `timed out after ${timeoutMs} ms` : `the process ended (exit ${ended.exitCode})`;
        throw new Error(`pty: ${why} waiting for ${what}; the screen:\n${session.screen()}`);
      }
    },
    async type(text) {
      for (const ch of text) {
        child.write(ch);
        await sleep(TYPE_GAP_MS);
      }
    },
    press: (keys) => child.write(keys),
    exited: () => ended !== undefined,
    async done() {
      const e = await exit;
      clearTimeout(deadline);
      await settle();
      const text = session.all();
      terminal.dispose();
      return {
        exitCode: e.exitCode,
        signal: null,
        stdout: text,
        stderr: '',
        durationMs: Date.now() - started,
        timedOut,
        command: [bin, ...args],
        env: options.env,
      };
    },
    kill: killGroup,
  };
  return session;
}

/**
 * The questions `resume` asks: yes/no (default No: Enter, `n`, Esc and Ctrl-C all keep things as they are), a typed
 * directory (validated, asked again until it names one, Esc cancels), and where to restore a session.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { Context } from '../context.js';
import { select } from './picker.js';
import {
  CLEAR_LINE,
  KeySession,
  colours,
  fit,
  fitPath,
  isCancel,
  terminalSize,
  textWidth,
  typed,
  type Key,
} from './terminal.js';

/** Asks a yes/no question on one line; resolves true only for `y`. */
export function confirm(ctx: Context, question: string): Promise<boolean> {
  const c = colours(ctx);
  const suffix = ' [y/N] ';
  return new Promise((resolve) => {
    const draw = () => {
      const width = terminalSize(ctx).columns - 1;
      ctx.stderr.write(`${CLEAR_LINE}${c.bold('?')} ${fit(question, Math.max(1, width - 2 - suffix.length))}${suffix}`);
    };
    const session = new KeySession(
      ctx,
      (key: Key) => {
        const text = typed(key).toLowerCase();
        let answer: boolean | undefined;
        if (text === 'y') answer = true;
        else if (text === 'n' || isCancel(key) || key.name === 'return' || key.name === 'enter') answer = false;
        if (answer === undefined) return;
        session.close();
        ctx.stderr.write(`${answer ? 'yes' : 'no'}\n`);
        resolve(answer);
      },
      draw,
    );
    draw();
  });
}

/**
 * Reads a line of text. `check` returns an error message to show (and the question is asked again) or undefined to
 * accept. Resolves undefined when cancelled (Esc, Ctrl-C).
 */
export function askText(
  ctx: Context,
  question: string,
  check: (text: string) => Promise<string | undefined>,
): Promise<string | undefined> {
  const c = colours(ctx);
  let text = '';
  let busy = false;
  return new Promise((resolve, reject) => {
    const draw = () => {
      const width = terminalSize(ctx).columns - 1;
      const label = `${question}: `;
      const room = Math.max(1, width - 2 - textWidth(label));
      // The end of what is typed stays visible.
      const shown = textWidth(text) <= room ? text : fitPath(text, room);
      ctx.stderr.write(`${CLEAR_LINE}${c.bold('?')} ${fit(label, Math.max(1, width - 2))}${shown}`);
    };
    const session = new KeySession(
      ctx,
      (key: Key) => {
        if (busy) return;
        if (isCancel(key)) {
          session.close();
          ctx.stderr.write(`${CLEAR_LINE}${c.bold('?')} ${question}: ${c.dim('(cancelled)')}\n`);
          resolve(undefined);
          return;
        }
        if (key.name === 'return' || key.name === 'enter') {
          busy = true;
          check(text).then(
            (problem) => {
              busy = false;
              if (problem === undefined) {
                session.close();
                ctx.stderr.write('\n');
                resolve(text);
                return;
              }
              const width = terminalSize(ctx).columns - 1;
              ctx.stderr.write(`${CLEAR_LINE}${c.red(fit(problem, width))}\n`);
              draw();
            },
            (error: unknown) => {
              session.close();
              reject(error);
            },
          );
          return;
        }
        if (key.name === 'backspace') text = [...text].slice(0, -1).join('');
        else if (key.ctrl && key.name === 'u') text = '';
        else text = (text + typed(key)).slice(0, 4096);
        draw();
      },
      draw,
    );
    draw();
  });
}

/** An existing directory named by `input` (relative to `cwd`, `~` for home), resolved; or the reason it is not one. */
export async function checkDirectory(
  input: string,
  cwd: string,
  home: string,
): Promise<{ dir: string } | { problem: string }> {
  const trimmed = input.trim();
  if (trimmed === '') return { problem: 'Type a directory (Esc to cancel).' };
  if (trimmed.includes('\u0000')) return { problem: 'That is not a path.' };
  const expanded = trimmed === '~' ? home : trimmed.startsWith('~/') ? path.join(home, trimmed.slice(2)) : trimmed;
  const dir = path.resolve(cwd, expanded);
  const info = await stat(dir).catch(() => undefined);
  if (info === undefined) return { problem: `${dir} does not exist.` };
  if (!info.isDirectory()) return { problem: `${dir} is not a directory.` };
  return { dir };
}

export type DestinationKind = 'current' | 'recorded' | 'other';

/**
 * Where to restore a session whose recorded directory differs from the current one: here, the recorded directory
 * (offered only when it exists on this machine), or another existing directory. Undefined when cancelled.
 */
export async function askDestination(
  ctx: Context,
  current: string,
  recorded: string,
  recordedExists: boolean,
): Promise<string | undefined> {
  const items: { value: DestinationKind; cells: string[]; search: string }[] = [
    { value: 'current', cells: ['The current directory', current], search: '' },
  ];
  if (recordedExists) items.push({ value: 'recorded', cells: ['The recorded directory', recorded], search: '' });
  items.push({ value: 'other', cells: ['Another directory…', 'type its path'], search: '' });
  const kind = await select(ctx, {
    title: 'Where should the session be restored?',
    note: `It was recorded in ${recorded}${recordedExists ? '' : ' (not on this machine)'}; you are in ${current}.`,
    columns: [
      { name: 'DESTINATION', min: 12, max: 24 },
      { name: 'DIRECTORY', min: 8, flex: 1, path: true },
    ],
    items,
    filter: false,
  });
  if (kind === undefined) return undefined;
  if (kind === 'current') return current;
  if (kind === 'recorded') return recorded;
  let chosen: string | undefined;
  const answer = await askText(ctx, 'Directory', async (text) => {
    const result = await checkDirectory(text, ctx.cwd, ctx.paths.home);
    if ('problem' in result) return result.problem;
    chosen = result.dir;
    return undefined;
  });
  return answer === undefined ? undefined : chosen;
}

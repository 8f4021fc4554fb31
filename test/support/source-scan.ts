/**
 * A small reader of the project's own TypeScript sources, for tests that keep a rule about where names may be
 * spelled: every string literal of a file (comments left out) and the arguments of its `path.join` / `path.resolve`
 * calls. A lexer, not a parser: enough for the sources here (strings, templates, comments, regular expressions).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from './context.js';

export interface Literal {
  /** The literal's text: a string's content, or a template's raw source between the backticks. */
  text: string;
  kind: 'string' | 'template';
  line: number;
}

export interface PathCall {
  /** Each argument: a literal's text, or the expression as written. */
  args: { literal?: string; code: string }[];
  line: number;
}

export interface ScannedSource {
  /** Relative to the repository, with forward slashes (`packages/agent/src/spool/index.ts`). */
  file: string;
  literals: Literal[];
  pathCalls: PathCall[];
  /** Array literals whose elements are all string literals: their texts. */
  stringArrays: { items: string[]; line: number }[];
}

/** Every `.ts` file under the packages' `src/`, scanned. */
export function scanSources(): ScannedSource[] {
  const out: ScannedSource[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.ts'))
        out.push(scanSource(path.relative(repoRoot, full).split(path.sep).join('/'), readFileSync(full, 'utf8')));
    }
  };
  for (const pkg of readdirSync(path.join(repoRoot, 'packages'))) walk(path.join(repoRoot, 'packages', pkg, 'src'));
  return out.sort((a, b) => (a.file < b.file ? -1 : 1));
}

const PLACEHOLDER = /^\u0000(\d+)\u0000$/;

export function scanSource(file: string, text: string): ScannedSource {
  const literals: Literal[] = [];
  // The code with comments removed and every literal replaced by a placeholder naming it.
  let masked = '';
  let line = 1;
  let i = 0;
  const lastSignificant = (): string => masked.trimEnd().slice(-1);
  const regexMayStart = (): boolean => {
    const before = masked.trimEnd();
    return (
      before === '' ||
      /[(,=:[!&|?{};+\-*%<>~^]$/.test(before) ||
      /\b(return|typeof|case|of|in|void|yield|await)$/.test(before)
    );
  };
  const take = (kind: Literal['kind'], content: string, startLine: number) => {
    literals.push({ text: content, kind, line: startLine });
    masked += `\u0000${literals.length - 1}\u0000`;
  };
  while (i < text.length) {
    const c = text[i]!;
    const next = text[i + 1];
    if (c === '\n') line++;
    if (c === '/' && next === '/') {
      while (i < text.length && text[i] !== '\n') i++;
      continue;
    }
    if (c === '/' && next === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end === -1 ? text.length : end + 2;
      const lines = text.slice(i, stop).split('\n').length - 1;
      line += lines;
      // Newlines kept, so that offsets in the masked code give the right line.
      masked += lines === 0 ? ' ' : '\n'.repeat(lines);
      i = stop;
      continue;
    }
    if (c === "'" || c === '"') {
      const start = line;
      let j = i + 1;
      let content = '';
      while (j < text.length && text[j] !== c && text[j] !== '\n') {
        if (text[j] === '\\') {
          content += text[j + 1] ?? '';
          j += 2;
        } else content += text[j++];
      }
      take('string', content, start);
      i = j + 1;
      continue;
    }
    if (c === '`') {
      const start = line;
      let j = i + 1;
      // Raw source up to the closing backtick of this template, nested templates and braces included.
      const stack: ('t' | 'b')[] = ['t'];
      while (j < text.length && stack.length > 0) {
        const d = text[j]!;
        if (d === '\n') line++;
        const top = stack[stack.length - 1];
        if (top === 't') {
          if (d === '\\') j++;
          else if (d === '`') stack.pop();
          else if (d === '$' && text[j + 1] === '{') {
            stack.push('b');
            j++;
          }
        } else if (d === '{') stack.push('b');
        else if (d === '}') stack.pop();
        else if (d === '`') stack.push('t');
        else if (d === "'" || d === '"') {
          let k = j + 1;
          while (k < text.length && text[k] !== d && text[k] !== '\n') k += text[k] === '\\' ? 2 : 1;
          j = k;
        }
        j++;
      }
      take('template', text.slice(i + 1, j - 1), start);
      masked += '\n'.repeat(line - start);
      i = j;
      continue;
    }
    if (c === '/' && regexMayStart() && lastSignificant() !== ')') {
      let j = i + 1;
      let inClass = false;
      while (j < text.length && text[j] !== '\n') {
        const d = text[j]!;
        if (d === '\\') j++;
        else if (d === '[') inClass = true;
        else if (d === ']') inClass = false;
        else if (d === '/' && !inClass) break;
        j++;
      }
      masked += 'RegExp';
      i = j + 1;
      while (i < text.length && /[a-z]/.test(text[i]!)) i++;
      continue;
    }
    masked += c;
    i++;
  }

  const lineOf = (offset: number): number => masked.slice(0, offset).split('\n').length;
  const literalOf = (code: string): string | undefined => {
    const m = PLACEHOLDER.exec(code.trim());
    return m === null ? undefined : literals[Number(m[1])]!.text;
  };
  const unmask = (code: string): string =>
    code.replace(/\u0000(\d+)\u0000/g, (_, n: string) => JSON.stringify(literals[Number(n)]!.text));

  const pathCalls: PathCall[] = [];
  for (const match of masked.matchAll(/\bpath\.(?:join|resolve)\(/g)) {
    const open = match.index + match[0].length;
    const args: string[] = [];
    let depth = 0;
    let current = '';
    for (let k = open; k < masked.length; k++) {
      const d = masked[k]!;
      if (d === '(' || d === '[' || d === '{') depth++;
      if (d === ')' || d === ']' || d === '}') {
        if (depth === 0) break;
        depth--;
      }
      if (d === ',' && depth === 0) {
        args.push(current);
        current = '';
      } else current += d;
    }
    if (current.trim() !== '') args.push(current);
    pathCalls.push({
      args: args.map((a) => ({
        ...(literalOf(a) === undefined ? {} : { literal: literalOf(a)! }),
        code: unmask(a).trim(),
      })),
      line: lineOf(match.index),
    });
  }

  const stringArrays: ScannedSource['stringArrays'] = [];
  for (const match of masked.matchAll(/\[\s*((?:\u0000\d+\u0000\s*,\s*)*\u0000\d+\u0000)\s*,?\s*\]/g)) {
    const items = match[1]!.split(',').map((s) => literalOf(s)!);
    stringArrays.push({ items, line: lineOf(match.index) });
  }
  return { file, literals, pathCalls, stringArrays };
}

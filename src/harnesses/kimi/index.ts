/**
 * Kimi CLI. The managed hook is one `[[hooks]]` table in `<share>/config.toml`:
 *
 *   [[hooks]] # managed by blue-agent
 *   event = "SessionEnd"
 *   matcher = ""
 *   command = "'/usr/bin/node' '/opt/blue-agent/bin/blue-agent.js' capture --harness kimi --profile kimi-v1_28_0"
 *   timeout = 5
 *
 * Kimi runs `command` through `/bin/sh -c` with the JSON payload on stdin (`kimi_cli/hooks/runner.py`), validates
 * every table against `HookDef` (event from a fixed list, `timeout` 1..600) and fills every other config key with a
 * default, so a config.toml that holds only `[[hooks]]` loads.
 *
 * Edits are text splices: the user's bytes outside the managed table are never re-serialised. Every result is parsed
 * again and compared with the input, minus managed tables, before it is returned.
 */
import { access } from 'node:fs/promises';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { parse, TomlError } from 'smol-toml';
import type { Context } from '../../context.js';
import { BlueError, lineColumnAt } from '../../errors.js';
import type { Interval } from '../../schema/index.js';
import { isManagedCommand } from '../signature.js';
import type { HarnessAdapter, HookPlan, HookPlanInput, ManagedHook, OwnershipRecord } from '../types.js';

const CONFIG_FILE = 'config.toml';
const LEGACY_CONFIG_FILE = 'config.json';
const EVENT = 'SessionEnd';
/** Kimi's `HookDef.timeout` bounds; a value outside them makes Kimi refuse the whole config file. */
const TIMEOUT_MIN = 1;
const TIMEOUT_MAX = 600;
/** Kimi's default when a table has no `timeout`. */
const TIMEOUT_DEFAULT = 30;
const MARKER = '# managed by blue-agent';

/**
 * What the ledger keeps about a managed table the agent appended: the line breaks put in front of it and whether the
 * agent created the file. Only line-break characters are stored, never user content.
 */
interface KimiOwnership {
  created_file?: boolean;
  separator?: string;
}

export const kimi: HarnessAdapter = {
  name: 'kimi',

  configRoot(ctx: Context): string {
    const share = ctx.env.KIMI_SHARE_DIR;
    if (share !== undefined && share !== '' && path.isAbsolute(share)) return share;
    return path.join(ctx.paths.home, '.kimi');
  },

  async hookFile(ctx: Context, _interval: Interval): Promise<string> {
    const root = kimi.configRoot(ctx);
    const file = path.join(root, CONFIG_FILE);
    // Kimi converts a legacy config.json only while config.toml is absent; creating config.toml first would make it
    // skip the conversion and silently drop the user's settings.
    if (!(await exists(file)) && (await exists(path.join(root, LEGACY_CONFIG_FILE)))) {
      throw new BlueError(
        'NATIVE_CONFIG_CONFLICT',
        `Kimi CLI still has a legacy ${LEGACY_CONFIG_FILE} and no ${CONFIG_FILE}; adding the capture hook now would stop Kimi from migrating ${LEGACY_CONFIG_FILE}`,
        {
          file: path.join(root, LEGACY_CONFIG_FILE),
          hint: `Run \`kimi\` once so it converts ${LEGACY_CONFIG_FILE} to ${CONFIG_FILE}, then run \`blue-agent reconcile\` again.`,
        },
      );
    }
    return file;
  },

  knownHookFiles(ctx: Context): string[] {
    return [path.join(kimi.configRoot(ctx), CONFIG_FILE)];
  },

  planHook(input: HookPlanInput): HookPlan {
    return planKimiHook(input);
  },
};

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Planning

function planKimiHook({ text, file, desired, owned }: HookPlanInput): HookPlan {
  const ledger = readOwnership(owned);
  if (text === null) {
    if (desired === null) return { text: null, owned: undefined, managedFound: 0 };
    const created = renderTable(desired, '\n', true);
    verify('', created, desired, file);
    return { text: created, owned: record({ created_file: true, separator: '' }), managedFound: 0 };
  }

  const data = parseToml(text, file);
  const doc = scanToml(text, file);

  const inline = doc.items.find((item) => item.kind === 'keyval' && item.table.length === 0 && item.key[0] === 'hooks');
  const hooksValue = data.hooks;
  if (inline !== undefined || (hooksValue !== undefined && !Array.isArray(hooksValue))) {
    const managedInside = Array.isArray(hooksValue) && hooksValue.some(isManagedEntry);
    if (desired === null && !managedInside) return { text, owned: undefined, managedFound: 0 };
    throw hooksShapeConflict(text, file, inline ?? doc.items.find((item) => item.key[0] === 'hooks' || item.table[0] === 'hooks'));
  }

  const elements = hookElements(doc, file, (hooksValue as unknown[] | undefined) ?? []);
  const managed = elements.filter((element) => isManagedEntry(element.value));

  if (desired === null) {
    if (managed.length === 0) return { text, owned: undefined, managedFound: 0 };
    const next = removeSpans(text, managed, ledger.separator, doc.eol).text;
    verify(text, next, null, file);
    if (ledger.created_file === true && next === '') return { text: null, owned: undefined, managedFound: managed.length };
    return { text: next, owned: undefined, managedFound: managed.length };
  }

  if (managed.length === 0) {
    const { separator, terminated } = appendLayout(text, doc.eol);
    const next = text + separator + renderTable(desired, doc.eol, terminated);
    verify(text, next, desired, file);
    return { text: next, owned: record({ ...ledger, separator }), managedFound: 0 };
  }

  const [keep, ...duplicates] = managed as [HookElement, ...HookElement[]];
  if (duplicates.length === 0 && isUpToDate(keep.value, desired)) {
    return { text, owned: record(ledger), managedFound: 1 };
  }
  // The first managed table is rewritten where it stands; the duplicates after it are cut.
  const rendered = renderTable(desired, doc.eol, text.slice(keep.start, keep.end).endsWith('\n'));
  const shift = rendered.length - (keep.end - keep.start);
  const replaced = text.slice(0, keep.start) + rendered + text.slice(keep.end);
  const moved = duplicates.map((span) => ({ start: span.start + shift, end: span.end + shift }));
  const removed = removeSpans(replaced, moved, ledger.separator, doc.eol);
  const next = removed.text;
  verify(text, next, desired, file);
  const nextLedger: KimiOwnership = { ...ledger };
  if (removed.usedSeparator) delete nextLedger.separator;
  return { text: next, owned: record(nextLedger), managedFound: managed.length };
}

function readOwnership(owned: OwnershipRecord | undefined): KimiOwnership {
  const result: KimiOwnership = {};
  if (owned === undefined) return result;
  if (owned.created_file === true) result.created_file = true;
  if (typeof owned.separator === 'string' && /^[\r\n]*$/.test(owned.separator)) result.separator = owned.separator;
  return result;
}

/** The separator is left out when unknown (a table the agent found rather than appended). */
function record(ownership: KimiOwnership): OwnershipRecord {
  const out: Record<string, unknown> = {};
  if (ownership.created_file === true) out.created_file = true;
  if (ownership.separator !== undefined) out.separator = ownership.separator;
  return out;
}

/**
 * How an appended table joins the existing text: one blank line before it (unless there already is one), and no final
 * line break when the file had none.
 */
function appendLayout(text: string, eol: string): { separator: string; terminated: boolean } {
  if (text === '' || (/^\s*$/.test(text) && text.endsWith('\n'))) return { separator: '', terminated: true };
  if (text.endsWith('\n')) {
    return { separator: endsWithBlankLine(text) ? '' : eol, terminated: true };
  }
  return { separator: eol + eol, terminated: false };
}

function endsWithBlankLine(text: string): boolean {
  return /(^|\n)[ \t]*\r?\n$/.test(text);
}

/**
 * Removes managed spans, last first. The span the ledger describes (the last one that still has the recorded
 * separator in front of it) loses that separator too, which gives back the bytes as they were before the append; any
 * other span is cut without leaving a double blank line behind.
 */
function removeSpans(
  text: string,
  spans: readonly { start: number; end: number }[],
  separator: string | undefined,
  eol: string,
): { text: string; usedSeparator: boolean } {
  let out = text;
  let usedSeparator = false;
  for (const span of [...spans].sort((a, b) => b.start - a.start)) {
    let before = out.slice(0, span.start);
    let after = out.slice(span.end);
    if (!usedSeparator && separator !== undefined && before.endsWith(separator)) {
      before = before.slice(0, before.length - separator.length);
      usedSeparator = true;
    } else if (before === '' || endsWithBlankLine(before)) {
      if (after.startsWith('\r\n')) after = after.slice(2);
      else if (after.startsWith('\n')) after = after.slice(1);
      else if (after === '' && before !== '') before = before.replace(/\r?\n$/, '');
    }
    // A table that ended the file without a line break may have had user text appended right after it since.
    if (before !== '' && !before.endsWith('\n') && after !== '' && !after.startsWith('\n') && !after.startsWith('\r\n')) {
      before += eol;
    }
    out = before + after;
  }
  return { text: out, usedSeparator };
}

function renderTable(hook: ManagedHook, eol: string, terminated: boolean): string {
  const lines = [
    `[[hooks]] ${MARKER}`,
    `event = ${tomlString(EVENT)}`,
    'matcher = ""',
    `command = ${tomlString(hook.command)}`,
    `timeout = ${kimiTimeout(hook.timeoutSeconds)}`,
  ];
  return lines.join(eol) + (terminated ? eol : '');
}

/** Kimi rejects the whole config when a timeout is outside 1..600 seconds, so the value is kept inside. */
function kimiTimeout(seconds: number): number {
  if (!Number.isFinite(seconds)) return TIMEOUT_DEFAULT;
  return Math.min(TIMEOUT_MAX, Math.max(TIMEOUT_MIN, Math.ceil(seconds)));
}

/** A TOML basic string. */
export function tomlString(value: string): string {
  let out = '"';
  for (const ch of value) {
    const code = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\b') out += '\\b';
    else if (ch === '\f') out += '\\f';
    else if (code < 0x20 || code === 0x7f) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return out + '"';
}

function isManagedEntry(value: unknown): boolean {
  if (!isTable(value)) return false;
  return value.event === EVENT && typeof value.command === 'string' && isManagedCommand(value.command, 'kimi');
}

function isUpToDate(value: unknown, desired: ManagedHook): boolean {
  if (!isTable(value)) return false;
  const matcher = value.matcher ?? '';
  const timeout = value.timeout === undefined ? TIMEOUT_DEFAULT : Number(value.timeout);
  return (
    value.event === EVENT &&
    value.command === desired.command &&
    matcher === '' &&
    timeout === kimiTimeout(desired.timeoutSeconds)
  );
}

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

// ---------------------------------------------------------------------------------------------------------------
// Verification

function parseToml(text: string, file: string): Record<string, unknown> {
  try {
    return parse(text, { integersAsBigInt: 'asNeeded' }) as Record<string, unknown>;
  } catch (error) {
    const message = error instanceof Error ? (error.message.split('\n')[0] ?? error.message) : String(error);
    const where = error instanceof TomlError ? { line: error.line, column: error.column } : {};
    throw new BlueError('NATIVE_CONFIG_PARSE', `Kimi CLI config is not valid TOML: ${message.replace(/^Invalid TOML document: /, '')}`, {
      file,
      ...where,
      hint: 'Fix the TOML at the reported position (Kimi CLI cannot load this file either); blue-agent leaves a file it cannot parse untouched.',
      cause: error,
    });
  }
}

/**
 * The result must parse, hold exactly the desired managed table (or none), and be equal to the input everywhere else.
 */
function verify(before: string, after: string, desired: ManagedHook | null, file: string): void {
  let parsed: Record<string, unknown>;
  try {
    parsed = parse(after, { integersAsBigInt: 'asNeeded' }) as Record<string, unknown>;
  } catch (error) {
    throw spliceConflict(file, error);
  }
  const original = parse(before, { integersAsBigInt: 'asNeeded' }) as Record<string, unknown>;
  const hooks = Array.isArray(parsed.hooks) ? (parsed.hooks as unknown[]) : [];
  const managed = hooks.filter(isManagedEntry);
  const expected = desired === null ? 0 : 1;
  const rightEntry = desired === null || (managed.length === 1 && isUpToDate(managed[0], desired));
  if (managed.length !== expected || !rightEntry || !isDeepStrictEqual(withoutManaged(original), withoutManaged(parsed))) {
    throw spliceConflict(file);
  }
}

function withoutManaged(data: Record<string, unknown>): Record<string, unknown> {
  if (!Array.isArray(data.hooks)) return data;
  const rest = (data.hooks as unknown[]).filter((entry) => !isManagedEntry(entry));
  // smol-toml tables have a null prototype; the copy keeps it so the deep comparison sees like with like.
  const copy = Object.assign(Object.create(null) as Record<string, unknown>, data);
  if (rest.length === 0) delete copy.hooks;
  else copy.hooks = rest;
  return copy;
}

function spliceConflict(file: string, cause?: unknown): BlueError {
  return new BlueError('NATIVE_CONFIG_CONFLICT', 'the managed [[hooks]] table cannot be spliced into the Kimi CLI config without changing other entries', {
    file,
    hint: 'Add the hook by hand (see `blue-agent reconcile --dry-run` for the exact table) or simplify the [[hooks]] tables in this file, then run reconcile again.',
    cause,
  });
}

function hooksShapeConflict(text: string, file: string, item: ScanItem | undefined): BlueError {
  const where = item === undefined ? {} : lineColumnAt(text, item.keyAt);
  return new BlueError(
    'NATIVE_CONFIG_CONFLICT',
    '`hooks` in the Kimi CLI config is not written as [[hooks]] tables (an inline `hooks = [...]` array or a plain table), so the managed hook cannot be added as its own [[hooks]] table',
    {
      file,
      ...where,
      hint: 'Rewrite each entry of `hooks` as a `[[hooks]]` table with the same keys (Kimi reads both forms the same way), then run `blue-agent reconcile` again.',
    },
  );
}

// ---------------------------------------------------------------------------------------------------------------
// A structural scan of TOML text: where each table header and key/value statement starts and ends. It runs only on
// text smol-toml has accepted, so it can be strict.

interface ScanItem {
  kind: 'table' | 'array-table' | 'keyval';
  /** Start of the statement's line (leading indentation included). */
  start: number;
  /** Offset of the first key character. */
  keyAt: number;
  /** End of the statement's line, after its line break when it has one. */
  end: number;
  /** The header's key, or the key/value's own (possibly dotted) key. */
  key: string[];
  /** For a key/value: the table it belongs to. For a header: its own key. */
  table: string[];
}

interface ScannedToml {
  items: ScanItem[];
  eol: string;
}

interface HookElement {
  start: number;
  end: number;
  value: unknown;
}

function hookElements(doc: ScannedToml, file: string, values: readonly unknown[]): HookElement[] {
  const elements: HookElement[] = [];
  const items = doc.items;
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    if (item.kind !== 'array-table' || !samePath(item.key, ['hooks'])) continue;
    let end = item.end;
    let j = i + 1;
    for (; j < items.length; j++) {
      const next = items[j]!;
      const belongs = next.kind === 'keyval' || (next.key[0] === 'hooks' && next.key.length > 1);
      if (!belongs) break;
      end = next.end;
    }
    elements.push({ start: item.start, end, value: values[elements.length] });
    i = j - 1;
  }
  if (elements.length !== values.length) {
    throw new BlueError('NATIVE_CONFIG_CONFLICT', 'the [[hooks]] tables of the Kimi CLI config could not be located in the text', {
      file,
      hint: 'Simplify the [[hooks]] tables in this file (one `[[hooks]]` header per entry), then run reconcile again.',
    });
  }
  return elements;
}

function samePath(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((part, i) => part === b[i]);
}

function scanToml(text: string, file: string): ScannedToml {
  const n = text.length;
  const items: ScanItem[] = [];
  let table: string[] = [];
  let i = 0;

  const fail = (at: number): never => {
    const { line, column } = lineColumnAt(text, at);
    throw new BlueError('NATIVE_CONFIG_PARSE', 'unexpected text in the Kimi CLI config', {
      file,
      line,
      column,
      hint: 'Check the TOML at the reported position, then run reconcile again.',
    });
  };
  const skipBlanks = (at: number): number => {
    while (at < n && (text[at] === ' ' || text[at] === '\t')) at++;
    return at;
  };
  const lineStart = (at: number): number => {
    while (at > 0 && (text[at - 1] === ' ' || text[at - 1] === '\t')) at--;
    return at;
  };
  const finishLine = (at: number): number => {
    at = skipBlanks(at);
    if (text[at] === '#') while (at < n && text[at] !== '\n') at++;
    if (at >= n) return n;
    if (text[at] === '\n') return at + 1;
    if (text[at] === '\r' && text[at + 1] === '\n') return at + 2;
    if (text[at] === '\r' && at + 1 >= n) return n;
    return fail(at);
  };
  const skipSpace = (at: number): number => {
    for (;;) {
      while (at < n && /[ \t\r\n]/.test(text[at]!)) at++;
      if (text[at] !== '#') return at;
      while (at < n && text[at] !== '\n') at++;
    }
  };

  const readBasic = (at: number): { value: string; end: number } => {
    let value = '';
    let j = at + 1;
    while (j < n && text[j] !== '"') {
      if (text[j] === '\\') {
        const esc = text[j + 1];
        const simple: Record<string, string> = { b: '\b', t: '\t', n: '\n', f: '\f', r: '\r', e: '\x1b', '"': '"', '\\': '\\' };
        if (esc !== undefined && esc in simple) {
          value += simple[esc];
          j += 2;
        } else if (esc === 'u' || esc === 'U' || esc === 'x') {
          const len = esc === 'u' ? 4 : esc === 'U' ? 8 : 2;
          value += String.fromCodePoint(Number.parseInt(text.slice(j + 2, j + 2 + len), 16));
          j += 2 + len;
        } else {
          return fail(j);
        }
      } else {
        value += text[j];
        j++;
      }
    }
    if (j >= n) return fail(at);
    return { value, end: j + 1 };
  };

  const parseKey = (at: number): { key: string[]; end: number } => {
    const key: string[] = [];
    let j = at;
    for (;;) {
      j = skipBlanks(j);
      if (text[j] === '"') {
        const str = readBasic(j);
        key.push(str.value);
        j = str.end;
      } else if (text[j] === "'") {
        const close = text.indexOf("'", j + 1);
        if (close < 0) return fail(j);
        key.push(text.slice(j + 1, close));
        j = close + 1;
      } else {
        const start = j;
        while (j < n && /[A-Za-z0-9_-]/.test(text[j]!)) j++;
        if (j === start) return fail(j);
        key.push(text.slice(start, j));
      }
      j = skipBlanks(j);
      if (text[j] !== '.') return { key, end: j };
      j++;
    }
  };

  const skipString = (at: number): number => {
    const quote = text[at]!;
    const triple = text.startsWith(quote.repeat(3), at);
    if (quote === '"' && !triple) return readBasic(at).end;
    if (!triple) {
      const close = text.indexOf("'", at + 1);
      return close < 0 ? fail(at) : close + 1;
    }
    let j = at + 3;
    for (;;) {
      if (j >= n) return fail(at);
      if (quote === '"' && text[j] === '\\') {
        j += 2;
        continue;
      }
      if (text.startsWith(quote.repeat(3), j)) {
        let end = j + 3;
        // Up to two quotes may sit right before the closing delimiter.
        for (let extra = 0; extra < 2 && text[end] === quote; extra++) end++;
        return end;
      }
      j++;
    }
  };

  const skipValue = (at: number): number => {
    const ch = text[at];
    if (ch === '"' || ch === "'") return skipString(at);
    if (ch === '[') {
      let j = at + 1;
      for (;;) {
        j = skipSpace(j);
        if (j >= n) return fail(at);
        if (text[j] === ']') return j + 1;
        if (text[j] === ',') {
          j++;
          continue;
        }
        j = skipValue(j);
      }
    }
    if (ch === '{') {
      let j = at + 1;
      for (;;) {
        j = skipSpace(j);
        if (j >= n) return fail(at);
        if (text[j] === '}') return j + 1;
        if (text[j] === ',') {
          j++;
          continue;
        }
        const key = parseKey(j);
        j = skipBlanks(key.end);
        if (text[j] !== '=') return fail(j);
        j = skipValue(skipBlanks(j + 1));
      }
    }
    let j = at;
    while (j < n && !/[ \t\r\n#,\]}]/.test(text[j]!)) j++;
    // A date and a time may be separated by one space.
    if (/^\d{4}-\d{2}-\d{2}$/.test(text.slice(at, j)) && text[j] === ' ' && /^\d{2}:/.test(text.slice(j + 1, j + 4))) {
      j++;
      while (j < n && !/[ \t\r\n#,\]}]/.test(text[j]!)) j++;
    }
    if (j === at) return fail(at);
    return j;
  };

  while (i < n) {
    const ch = text[i]!;
    if (ch === ' ' || ch === '\t' || ch === '\r' || ch === '\n' || ch === '\uFEFF') {
      i++;
      continue;
    }
    if (ch === '#') {
      while (i < n && text[i] !== '\n') i++;
      continue;
    }
    const start = lineStart(i);
    if (ch === '[') {
      const isArray = text[i + 1] === '[';
      const key = parseKey(i + (isArray ? 2 : 1));
      let j = skipBlanks(key.end);
      const close = isArray ? ']]' : ']';
      if (!text.startsWith(close, j)) return fail(j);
      j += close.length;
      table = key.key;
      const end = finishLine(j);
      items.push({ kind: isArray ? 'array-table' : 'table', start, keyAt: i, end, key: key.key, table: key.key });
      i = end;
      continue;
    }
    const key = parseKey(i);
    let j = skipBlanks(key.end);
    if (text[j] !== '=') return fail(j);
    j = skipValue(skipBlanks(j + 1));
    const end = finishLine(j);
    items.push({ kind: 'keyval', start, keyAt: i, end, key: key.key, table });
    i = end;
  }

  const firstBreak = text.indexOf('\n');
  const eol = firstBreak > 0 && text[firstBreak - 1] === '\r' ? '\r\n' : '\n';
  return { items, eol };
}

/**
 * Kimi's managed hook: Kimi Code and kimi-cli keep it as one `[[hooks]]` table in their config.toml:
 *
 *   [[hooks]] # managed by blue-agent
 *   event = "Stop"
 *   matcher = ""
 *   command = "'/usr/bin/node' '/opt/blue-agent/bin/blue-agent.js' capture --harness kimi --profile kimi-v2_0_2"
 *   timeout = 10
 *
 * the event being the profile's: Kimi Code 0.33 and later fire SessionEnd only when an interactive session closes and
 * Stop after every turn (at the end of a headless run too), so their profiles capture on Stop and wait for the Kimi
 * process to exit (one capture per session, of its last state); earlier Kimi Code and kimi-cli fire SessionEnd at every
 * end. Kimi runs `command` through `/bin/sh -c` with the JSON payload on stdin, validates every table strictly (event
 * from a fixed list, `timeout` 1..600, no other key: one bad table turns every hook off) and fills every other config
 * key with a default, so a config.toml that holds only `[[hooks]]` loads.
 *
 * A managed table is known by its command, whatever its event or comment: `kimi migrate --run` copies kimi-cli's
 * tables into Kimi Code's config without their comments, and reconcile then repairs the copy in place (event,
 * profile) rather than add a second one; the table in kimi-cli's config goes when Kimi Code is the `kimi` installed.
 *
 * Edits are text splices: the user's bytes outside the managed table are never re-serialised. Every result is parsed
 * again and compared with the input, minus managed tables, before it is returned.
 */
import { parse } from 'smol-toml';
import { BlueError, lineColumnAt } from '@blue-agent/contract/errors.js';
import { eolOf } from '../../harness-kit/text.js';
import {
  isTomlTable,
  parseTomlOr,
  samePath,
  scanToml,
  statementAt,
  TomlScanError,
  tomlString,
  type TomlSection,
} from '../../harness-kit/toml-text.js';
import { isManagedCommand } from '../../harness-kit/signature.js';
import type { HookPlan, HookPlanInput, ManagedHook, OwnershipRecord } from '../types.js';

// Not `import … from 'node:util'`: importing it as an ES module loads everything util keeps lazy (worker_threads,
// parseArgs, the diff engine): milliseconds of every command that loads the adapters.
const { isDeepStrictEqual } = process.getBuiltinModule('node:util');

/** Kimi's `HookDef.timeout` bounds; a value outside them makes Kimi refuse the whole config file. */
const TIMEOUT_MIN = 1;
const TIMEOUT_MAX = 600;
/** Kimi's default when a table has no `timeout`. */
const TIMEOUT_DEFAULT = 30;
const MARKER = '# managed by blue-agent';

/** The longest `hooks = []` statement the agent takes out (and keeps in the ledger to put back). */
const MAX_REPLACED = 1024;

/**
 * What the ledger keeps about a managed table the agent appended: the line breaks put in front of it, whether the
 * agent created the file, and the empty `hooks = []` statement (Kimi's own default) the table replaced, with the
 * offset of its line. Nothing else of the user's is stored.
 */
interface KimiOwnership {
  created_file?: boolean;
  separator?: string;
  replaced?: { text: string; offset: number };
}

export function planKimiHook({ text, file, desired, owned }: HookPlanInput): HookPlan {
  const ledger = readOwnership(owned);
  if (text === null) {
    if (desired === null) return { text: null, owned: undefined, managedFound: 0 };
    const created = renderTable(desired, '\n', true);
    verify('', created, desired, file);
    return { text: created, owned: record({ created_file: true, separator: '' }), managedFound: 0 };
  }

  const data = parseToml(text, file);
  const sections = scan(text, file);
  const eol = eolOf(text);

  const inline = sections[0]!.entries.find((entry) => entry.key[0] === 'hooks');
  const hooksValue = data.hooks;
  // Kimi writes `hooks = []` into its default config. A TOML array cannot be both inline and `[[hooks]]` tables, so
  // that statement (only when empty, and only its line) gives way to the managed table and is put back on removal.
  if (desired !== null && inline !== undefined && isEmptyHooksStatement(text.slice(inline.start, inline.lineEnd))) {
    const statement = text.slice(inline.start, inline.lineEnd);
    const cut = text.slice(0, inline.start) + text.slice(inline.lineEnd);
    const { separator, terminated } = appendLayout(cut, eol);
    const next = cut + separator + renderTable(desired, eol, terminated);
    verify(text, next, desired, file);
    return {
      text: next,
      owned: record({ ...ledger, separator, replaced: { text: statement, offset: inline.start } }),
      managedFound: 0,
    };
  }
  if (inline !== undefined || (hooksValue !== undefined && !Array.isArray(hooksValue))) {
    const managedInside = Array.isArray(hooksValue) && hooksValue.some(isManagedEntry);
    if (desired === null && !managedInside) return { text, owned: undefined, managedFound: 0 };
    throw hooksShapeConflict(text, file, inline?.start ?? firstHooksLine(sections));
  }

  const elements = hookElements(sections, file, (hooksValue as unknown[] | undefined) ?? []);
  const managed = elements.filter((element) => isManagedEntry(element.value));

  if (desired === null) {
    if (managed.length === 0) return { text, owned: undefined, managedFound: 0 };
    const next = putBackReplaced(removeSpans(text, managed, ledger.separator, eol).text, ledger.replaced, eol, file);
    verify(text, next, null, file);
    if (ledger.created_file === true && next === '')
      return { text: null, owned: undefined, managedFound: managed.length };
    return { text: next, owned: undefined, managedFound: managed.length };
  }

  if (managed.length === 0) {
    const { separator, terminated } = appendLayout(text, eol);
    const next = text + separator + renderTable(desired, eol, terminated);
    verify(text, next, desired, file);
    return { text: next, owned: record({ ...ledger, separator }), managedFound: 0 };
  }

  const [keep, ...duplicates] = managed as [HookElement, ...HookElement[]];
  if (duplicates.length === 0 && isUpToDate(keep.value as Record<string, unknown>, desired)) {
    return { text, owned: record(ledger), managedFound: 1 };
  }
  // The first managed table is rewritten where it stands; the duplicates after it are cut.
  const rendered = renderTable(desired, eol, text.slice(keep.start, keep.end).endsWith('\n'));
  const shift = rendered.length - (keep.end - keep.start);
  const replaced = text.slice(0, keep.start) + rendered + text.slice(keep.end);
  const moved = duplicates.map((span) => ({ start: span.start + shift, end: span.end + shift }));
  const removed = removeSpans(replaced, moved, ledger.separator, eol);
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
  const replaced = owned.replaced as { text?: unknown; offset?: unknown } | undefined;
  if (
    typeof replaced === 'object' &&
    replaced !== null &&
    typeof replaced.text === 'string' &&
    Number.isSafeInteger(replaced.offset) &&
    (replaced.offset as number) >= 0 &&
    isEmptyHooksStatement(replaced.text)
  ) {
    result.replaced = { text: replaced.text, offset: replaced.offset as number };
  }
  return result;
}

/** One whole `hooks = []` line (blanks, line breaks and comments aside): all the record may ever put back. */
function isEmptyHooksStatement(statement: string): boolean {
  if (statement.length > MAX_REPLACED) return false;
  try {
    const parsed = parse(statement) as Record<string, unknown>;
    const keys = Object.keys(parsed);
    return (
      keys.length === 1 &&
      keys[0] === 'hooks' &&
      Array.isArray(parsed.hooks) &&
      parsed.hooks.length === 0 &&
      /^[ \t]*["']?hooks["']?[ \t]*=/.test(statement)
    );
  } catch {
    return false;
  }
}

/**
 * Puts the `hooks = []` line the managed table replaced back where it was, when that place is still the start of a
 * line and the file reads the same with it, minus the empty `hooks`: that is, in the top-level section, outside
 * strings and arrays, in a file that does not define `hooks` again. Elsewhere it is left out, which Kimi reads the same
 * way (no hooks).
 */
function putBackReplaced(text: string, replaced: KimiOwnership['replaced'], eol: string, file: string): string {
  if (replaced === undefined) return text;
  const { offset } = replaced;
  // Past the end, `text[offset - 1]` is undefined.
  if (offset > 0 && text[offset - 1] !== '\n') return text;
  const statement = replaced.text.endsWith('\n') || offset === text.length ? replaced.text : replaced.text + eol;
  const next = text.slice(0, offset) + statement + text.slice(offset);
  try {
    verify(text, next, null, file);
  } catch {
    return text;
  }
  return next;
}

/** The separator is left out when unknown (a table the agent found rather than appended). */
function record(ownership: KimiOwnership): OwnershipRecord {
  const out: Record<string, unknown> = {};
  if (ownership.created_file === true) out.created_file = true;
  if (ownership.separator !== undefined) out.separator = ownership.separator;
  if (ownership.replaced !== undefined) out.replaced = { ...ownership.replaced };
  return out;
}

/**
 * How an appended table joins the existing text: one blank line before it (unless there already is one), and no final
 * line break when the file had none.
 */
function appendLayout(text: string, eol: string): { separator: string; terminated: boolean } {
  if (text === '') return { separator: '', terminated: true };
  // A blank text that ends with a line break ends with a blank line (TOML allows no white space but spaces and tabs).
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
      else if (after === '') before = before.replace(/\r?\n$/, '');
    }
    // A table that ended the file without a line break may have had user text appended right after it since.
    if (
      before !== '' &&
      !before.endsWith('\n') &&
      after !== '' &&
      !after.startsWith('\n') &&
      !after.startsWith('\r\n')
    ) {
      before += eol;
    }
    out = before + after;
  }
  return { text: out, usedSeparator };
}

function renderTable(hook: ManagedHook, eol: string, terminated: boolean): string {
  const lines = [
    `[[hooks]] ${MARKER}`,
    `event = ${tomlString(hook.event)}`,
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

/** A table whose command is the managed capture command, on whatever event (a copy `kimi migrate` made, say). */
export function isManagedEntry(value: unknown): value is Record<string, unknown> {
  if (!isTomlTable(value)) return false;
  return typeof value.command === 'string' && isManagedCommand(value.command, 'kimi');
}

/** For a managed entry: true when it already says what `desired` wants (its event, command, matcher and timeout). */
function isUpToDate(value: Record<string, unknown>, desired: ManagedHook): boolean {
  const matcher = value.matcher ?? '';
  const timeout = value.timeout === undefined ? TIMEOUT_DEFAULT : Number(value.timeout);
  return (
    value.event === desired.event &&
    value.command === desired.command &&
    matcher === '' &&
    timeout === kimiTimeout(desired.timeoutSeconds)
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Verification

function parseToml(text: string, file: string): Record<string, unknown> {
  return parseTomlOr(
    text,
    ({ reason, at, error }) =>
      new BlueError('NATIVE_CONFIG_PARSE', `Kimi config is not valid TOML: ${reason}`, {
        file,
        ...at,
        hint:
          'Fix the TOML at the reported position (Kimi cannot load this file either); blue-agent leaves a file ' +
          'it cannot parse untouched.',
        cause: error,
      }),
    { integersAsBigInt: 'asNeeded' },
  );
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
  const rightEntry = desired === null || (managed.length === 1 && isUpToDate(managed[0]!, desired));
  if (
    managed.length !== expected ||
    !rightEntry ||
    !isDeepStrictEqual(withoutManaged(original), withoutManaged(parsed))
  ) {
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
  return new BlueError(
    'NATIVE_CONFIG_CONFLICT',
    'the managed [[hooks]] table cannot be spliced into the Kimi config without changing other entries',
    {
      file,
      hint:
        'Add the hook by hand (see `blue-agent reconcile --dry-run` for the exact table) or simplify the ' +
        '[[hooks]] tables in this file, then run reconcile again.',
      cause,
    },
  );
}

function hooksShapeConflict(text: string, file: string, lineStart: number | undefined): BlueError {
  const where = lineStart === undefined ? {} : lineColumnAt(text, statementAt(text, lineStart));
  return new BlueError(
    'NATIVE_CONFIG_CONFLICT',
    '`hooks` in the Kimi config is not written as [[hooks]] tables (an inline `hooks = [...]` array or a plain ' +
      'table), so the managed hook cannot be added as its own [[hooks]] table',
    {
      file,
      ...where,
      hint:
        'Rewrite each entry of `hooks` as a `[[hooks]]` table with the same keys (Kimi reads both forms the ' +
        'same way), then run `blue-agent reconcile` again.',
    },
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Locating the [[hooks]] tables in the text

/** Scans text smol-toml has accepted; a layout the scanner does not follow is reported where it stopped. */
function scan(text: string, file: string): TomlSection[] {
  try {
    return scanToml(text);
  } catch (error) {
    if (!(error instanceof TomlScanError)) throw error;
    const { line, column } = lineColumnAt(text, error.offset);
    throw new BlueError('NATIVE_CONFIG_PARSE', 'unexpected text in the Kimi config', {
      file,
      line,
      column,
      hint: 'Check the TOML at the reported position, then run reconcile again.',
    });
  }
}

/**
 * The start of the first header that defines something under the top-level `hooks` (a top-level `hooks` key is found
 * before this; a `hooks` key inside another table is that table's).
 */
function firstHooksLine(sections: readonly TomlSection[]): number | undefined {
  return sections.find((section) => section.path?.[0] === 'hooks')?.start;
}

interface HookElement {
  start: number;
  end: number;
  value: unknown;
}

/** Each `[[hooks]]` table with the `[hooks.x]` sub-tables that follow it, paired with its parsed value. */
function hookElements(sections: readonly TomlSection[], file: string, values: readonly unknown[]): HookElement[] {
  const elements: HookElement[] = [];
  for (let i = 0; i < sections.length; i++) {
    const section = sections[i]!;
    if (!section.array || !samePath(section.path, ['hooks'])) continue;
    let end = section.contentEnd;
    while (i + 1 < sections.length && isUnderHooks(sections[i + 1]!)) {
      i++;
      end = sections[i]!.contentEnd;
    }
    elements.push({ start: section.start, end, value: values[elements.length] });
  }
  if (elements.length !== values.length) {
    throw new BlueError(
      'NATIVE_CONFIG_CONFLICT',
      'the [[hooks]] tables of the Kimi config could not be located in the text',
      {
        file,
        hint:
          'Simplify the [[hooks]] tables in this file (one `[[hooks]]` header per entry), then run reconcile ' +
          'again.',
      },
    );
  }
  return elements;
}

function isUnderHooks(section: TomlSection): boolean {
  return section.path !== null && section.path.length > 1 && section.path[0] === 'hooks';
}

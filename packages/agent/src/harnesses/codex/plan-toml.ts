/**
 * config.toml planning by text splices. The managed hook is its own `[[hooks.<Event>]]` group appended at the end
 * of the file, so it runs after the user's hooks and its Codex trust key (`<file>:<event>:<group>:<handler>`) does
 * not shift the user's. Nothing outside the managed entries is rewritten.
 * Shape: codex-rs/config/src/hook_config.rs (`HookEventsToml`, `MatcherGroup`, `HookHandlerConfig` tagged by `type`,
 * `timeout` in seconds).
 */
import { parse } from 'smol-toml';
import { BlueError, errorAt } from '@blue-agent/contract/errors.js';
import { eolOf } from '../../harness-kit/text.js';
import {
  parseTomlOr,
  pathStartsWith,
  samePath,
  scanToml,
  statementAt,
  TomlScanError,
  tomlString as quoteToml,
  type TomlSection,
} from '../../harness-kit/toml-text.js';
import type { HookPlan, HookPlanInput, ManagedHook, OwnershipRecord } from '../types.js';
import {
  checkOutcome,
  conflictError,
  desiredTimeout,
  handlerIsRight,
  isRecord,
  listHandlers,
  own,
  parseError,
  type ParsedHandler,
} from './model.js';

/** What the ledger keeps for config.toml: whether the file was created, and the exact separator put before the block.
 * */
type TomlRecord = {
  format: 'toml';
  created: boolean;
  /** Line terminator added to a last line that had none. */
  lead?: string;
  /** Blank line added between the user's text and the managed block. */
  gap?: string;
};

const PARSE_HINT =
  'Fix the syntax error (Codex cannot read this file either); blue-agent leaves the file untouched until it parses.';

interface Edit {
  start: number;
  end: number;
  text: string;
}

interface LocatedHandler {
  parsed: ParsedHandler;
  /** The `[[hooks.<Event>.hooks]]` table and the sub-tables that follow it; empty when written inline. */
  sections: TomlSection[];
  /** The group's `[[hooks.<Event>]]` table, its handler tables and their sub-tables; empty when written inline. */
  groupSections: TomlSection[];
  /** Where to point a person at when the entry cannot be edited. */
  anchor: number;
}

export function readTomlRecord(owned: OwnershipRecord | undefined): TomlRecord | undefined {
  if (!isRecord(owned) || owned.format !== 'toml') return undefined;
  const lineBreak = (value: unknown): value is string => typeof value === 'string' && /^(\r?\n)?$/.test(value);
  const record: TomlRecord = { format: 'toml', created: owned.created === true };
  if (lineBreak(owned.lead) && lineBreak(owned.gap)) {
    record.lead = owned.lead;
    record.gap = owned.gap;
  }
  return record;
}

export function parseTomlText(text: string, file: string): Record<string, unknown> {
  return parseTomlOr(text, ({ reason, at }) =>
    errorAt('NATIVE_CONFIG_PARSE', file, at, `invalid TOML: ${reason}`, PARSE_HINT),
  );
}

function scan(text: string, file: string): TomlSection[] {
  try {
    return scanToml(text);
  } catch (error) {
    if (error instanceof TomlScanError) {
      throw parseError(file, text, error.offset, `cannot read the layout of this TOML: ${error.message}`, PARSE_HINT);
    }
    throw error;
  }
}

/** The `\uXXXX` escapes this planner writes use upper-case hex. */
export function tomlString(value: string): string {
  return quoteToml(value, 'upper');
}

function tomlKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : tomlString(key);
}

export function renderTomlBlock(desired: ManagedHook, eol: string): string {
  const event = tomlKey(desired.event);
  return [
    `[[hooks.${event}]]`,
    `[[hooks.${event}.hooks]]`,
    'type = "command"',
    `command = ${tomlString(desired.command)}`,
    `timeout = ${desiredTimeout(desired)}`,
    '',
  ].join(eol);
}

/** Pairs every parsed handler with the tables that hold it, when it is written as tables. */
function locate(sections: TomlSection[], doc: Record<string, unknown>): LocatedHandler[] {
  const hooks = own(doc, 'hooks');
  const parsed = listHandlers(hooks);
  const located: LocatedHandler[] = [];
  const events = new Set(parsed.map((p) => p.event));
  for (const event of events) {
    // A parsed handler means `hooks` is a table and the event an array of groups, each with a `hooks` array.
    const groups = own(hooks as Record<string, unknown>, event) as Array<Record<string, unknown>>;
    const fallback = definitionOffset(sections, event) ?? 0;
    // Tables under the event, each attached to the group (and handler) last opened before it. An event written
    // inline has none: TOML cannot add `[[hooks.<Event>]]` tables to an inline array or tables inside its groups.
    const byGroup = new Map<number, { all: TomlSection[]; handlers: TomlSection[][] }>();
    let g = -1;
    for (const section of sections) {
      if (!pathStartsWith(section.path, ['hooks', event])) continue;
      if (section.array && samePath(section.path, ['hooks', event])) {
        g++;
        byGroup.set(g, { all: [section], handlers: [] });
        continue;
      }
      const entry = byGroup.get(g);
      if (entry === undefined) continue;
      entry.all.push(section);
      if (section.array && samePath(section.path, ['hooks', event, 'hooks'])) entry.handlers.push([section]);
      // A table under `hooks.<event>.hooks` belongs to the handler before it (none when the group's `hooks` is a
      // table).
      else if (pathStartsWith(section.path, ['hooks', event, 'hooks'])) entry.handlers.at(-1)?.push(section);
    }
    for (const p of parsed.filter((x) => x.event === event)) {
      const entry = byGroup.get(p.group);
      // Handler tables, or none when the group writes its `hooks` array inline.
      const handlerTables = entry?.handlers[p.handler] ?? [];
      const inlineHandlers =
        entry !== undefined && entry.handlers.length !== (own(groups[p.group]!, 'hooks') as unknown[]).length;
      located.push({
        parsed: p,
        sections: handlerTables,
        groupSections: entry === undefined || inlineHandlers ? [] : entry.all,
        anchor: entry === undefined ? fallback : entry.all[0]!.start,
      });
    }
  }
  return located;
}

/**
 * Where `hooks` or `hooks.<event>` is defined, if anywhere. Asked only when the event is not written as
 * `[[hooks.<event>]]` tables (then there are none of them): for an event written so, this is its first table.
 */
function definitionOffset(sections: TomlSection[], event: string): number | undefined {
  for (const section of sections) {
    if ((section.array && samePath(section.path, ['hooks'])) || pathStartsWith(section.path, ['hooks', event]))
      return section.start;
    for (const entry of section.entries) {
      const full = [...(section.path ?? []), ...entry.key];
      if (samePath(full, ['hooks']) || pathStartsWith(full, ['hooks', event])) return entry.start;
    }
  }
  return undefined;
}

/** Ranges covering the given tables (in document order), adjacent ones merged. */
function rangesOf(sections: TomlSection[]): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (const s of sections) {
    const last = out.at(-1);
    if (last !== undefined && last[1] === s.start) last[1] = s.contentEnd;
    else out.push([s.start, s.contentEnd]);
  }
  return out;
}

const BLANK_LINE_BEFORE = /(^|\n)[ \t]*\r?\n$/;
const BLANK_LINE_AFTER = /^[ \t]*\r?\n/;

/** Widens a cut over the separator around it, so removal leaves the surrounding text as it was. */
function widenCut(
  text: string,
  start: number,
  end: number,
  record: TomlRecord | undefined,
  recorded: boolean,
): [number, number] {
  const before = text.slice(0, start);
  const after = text.slice(end);
  const atEnd = after.length === 0;
  if (recorded && record?.gap !== undefined) {
    const lead = record.lead ?? '';
    const gap = record.gap;
    // A recorded `\n` is not there when the text ends in `\r\n`: cutting it would leave a bare `\r`.
    const endsWith = (separator: string) => before.endsWith(separator) && !before.endsWith(`\r${separator}`);
    if (atEnd && endsWith(lead + gap) && (lead !== '' || BLANK_LINE_BEFORE.test(before))) {
      return [start - lead.length - gap.length, end];
    }
    if (endsWith(gap) && BLANK_LINE_BEFORE.test(before)) return [start - gap.length, end];
    return [start, end];
  }
  const blankBefore = BLANK_LINE_BEFORE.exec(before);
  const blankAfter = BLANK_LINE_AFTER.exec(after);
  if (blankBefore !== null && (atEnd || blankAfter !== null)) {
    return [start - blankBefore[0].length + blankBefore[1]!.length, end];
  }
  if (start === 0 && blankAfter !== null) return [start, end + blankAfter[0].length];
  return [start, end];
}

function applyEdits(text: string, edits: Edit[]): string {
  const sorted = [...edits].sort((a, b) => b.start - a.start || b.end - a.end);
  let out = text;
  let floor = Number.POSITIVE_INFINITY;
  for (const edit of sorted) {
    if (edit.end > floor) throw new BlueError('INTERNAL', 'overlapping edits in a Codex config plan');
    out = out.slice(0, edit.start) + edit.text + out.slice(edit.end);
    floor = edit.start;
  }
  return out;
}

/** Merges overlapping or touching cuts, given in order of their start. */
function mergeCuts(cuts: Array<[number, number]>): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (const c of cuts) {
    const last = out.at(-1);
    if (last !== undefined && c[0] <= last[1]) last[1] = Math.max(last[1], c[1]);
    else out.push([c[0], c[1]]);
  }
  return out;
}

function inlineConflict(file: string, text: string, at: LocatedHandler, event: string): BlueError {
  return conflictError(
    file,
    text,
    statementAt(text, at.anchor),
    `the blue-agent hook in hooks.${event} is written inline, where it cannot be changed without rewriting your ` +
      `entries`,
    `Delete that blue-agent entry by hand (reconcile adds its own as [[hooks.${event}]] tables), then run ` +
      `reconcile again. The file was left unchanged.`,
  );
}

/** Edits that bring the kept managed handler to `desired`, in place. */
function keeperEdits(text: string, file: string, keeper: LocatedHandler, desired: ManagedHook, eol: string): Edit[] {
  const value = keeper.parsed.value;
  if (handlerIsRight(value, desired)) return [];
  const table = keeper.sections[0];
  if (table === undefined) throw inlineConflict(file, text, keeper, desired.event);
  const find = (key: string) => table.entries.find((e) => e.key.length === 1 && e.key[0] === key);
  const edits: Edit[] = [];
  // A key set by a dotted key or a sub-table has no value of its own to replace, and cannot be added again.
  const settable = (key: string) => {
    const entry = find(key);
    if (entry === undefined && own(value, key) !== undefined) throw inlineConflict(file, text, keeper, desired.event);
    return entry;
  };
  const type = settable('type');
  if (own(value, 'type') !== 'command') {
    if (type !== undefined) edits.push({ start: type.valueStart, end: type.valueEnd, text: '"command"' });
    else edits.push({ start: table.headerEnd, end: table.headerEnd, text: `type = "command"${eol}` });
  }
  // A managed handler has a command string, and in a handler table that is a key of its own.
  const command = find('command')!;
  if (own(value, 'command') !== desired.command) {
    edits.push({ start: command.valueStart, end: command.valueEnd, text: tomlString(desired.command) });
  }
  const timeout = settable('timeout');
  const seconds = String(desiredTimeout(desired));
  if (own(value, 'timeout') !== desiredTimeout(desired)) {
    if (timeout !== undefined) edits.push({ start: timeout.valueStart, end: timeout.valueEnd, text: seconds });
    else if (text[command.lineEnd - 1] === '\n')
      edits.push({ start: command.lineEnd, end: command.lineEnd, text: `timeout = ${seconds}${eol}` });
    else edits.push({ start: command.lineEnd, end: command.lineEnd, text: `${eol}timeout = ${seconds}` });
  }
  return edits;
}

/** Keeps one managed handler: its own single-handler group first, then the first one for the event. */
function chooseKeeper(managed: LocatedHandler[], desired: ManagedHook): LocatedHandler | undefined {
  const candidates = managed.filter((m) => m.parsed.event === desired.event);
  const editable = (m: LocatedHandler) => m.sections.length > 0 || handlerIsRight(m.parsed.value, desired);
  return (
    candidates.find((m) => m.parsed.ownGroup && m.groupSections.length > 0 && handlersInGroup(managed, m) === 1) ??
    candidates.find(editable) ??
    candidates[0]
  );
}

function handlersInGroup(all: LocatedHandler[], m: LocatedHandler): number {
  return all.filter((x) => x.parsed.event === m.parsed.event && x.parsed.group === m.parsed.group).length;
}

export function planToml(input: HookPlanInput): HookPlan {
  const { text, file, desired } = input;
  const record = readTomlRecord(input.owned);
  if (text === null) {
    if (desired === null) return { text: null, owned: undefined, managedFound: 0 };
    const out = renderTomlBlock(desired, '\n');
    checkOutcome(file, {}, parseTomlText(out, file), desired);
    return { text: out, owned: { format: 'toml', created: true, lead: '', gap: '' }, managedFound: 0 };
  }

  const doc = parseTomlText(text, file);
  const sections = scan(text, file);
  const eol = eolOf(text);
  const located = locate(sections, doc);
  const managed = located.filter((l) => l.parsed.managed);
  const keeper = desired === null ? undefined : chooseKeeper(managed, desired);

  // Cuts: every managed handler but the keeper; a group that holds only managed handlers goes as a whole.
  const cutTables: TomlSection[][] = [];
  const cutGroups = new Set<string>();
  for (const m of managed) {
    if (m === keeper) continue;
    const groupKey = `${m.parsed.event}\u0000${m.parsed.group}`;
    const keeperInGroup =
      keeper !== undefined && keeper.parsed.event === m.parsed.event && keeper.parsed.group === m.parsed.group;
    if (m.parsed.ownGroup && !keeperInGroup) {
      if (cutGroups.has(groupKey)) continue;
      if (m.groupSections.length === 0) throw inlineConflict(file, text, m, m.parsed.event);
      cutGroups.add(groupKey);
      cutTables.push(m.groupSections);
    } else {
      if (m.sections.length === 0) throw inlineConflict(file, text, m, m.parsed.event);
      cutTables.push(m.sections);
    }
  }
  const ranges = cutTables.flatMap(rangesOf).sort((a, b) => a[0] - b[0]);
  const lastRange = ranges.at(-1);
  const cuts = mergeCuts(ranges.map((r) => widenCut(text, r[0], r[1], record, r === lastRange && desired === null)));
  const edits: Edit[] = cuts.map(([start, end]) => ({ start, end, text: '' }));
  if (keeper !== undefined && desired !== null) edits.push(...keeperEdits(text, file, keeper, desired, eol));

  let out = applyEdits(text, edits);
  let owned: OwnershipRecord | undefined;
  if (desired === null) {
    owned = undefined;
    if (out === '' && record?.created === true) {
      checkOutcome(file, doc, {}, null);
      return { text: null, owned: undefined, managedFound: managed.length };
    }
  } else if (keeper !== undefined) {
    // Once duplicates are cut, the recorded separator may no longer sit before the kept entry.
    owned = cuts.length > 0 || record === undefined ? { format: 'toml', created: record?.created ?? false } : record;
  } else {
    const hooks = own(doc, 'hooks');
    const groups = isRecord(hooks) ? own(hooks, desired.event) : undefined;
    const conflictAt = definitionOffset(sections, desired.event);
    // An inline array under the event fails the parse below, with the same error.
    if (conflictAt !== undefined && !Array.isArray(groups)) {
      throw appendConflict(file, text, statementAt(text, conflictAt), desired.event);
    }
    const lead = out.length > 0 && !out.endsWith('\n') ? eol : '';
    const joined = out + lead;
    const gap = joined === '' || BLANK_LINE_BEFORE.test(joined) ? '' : eol;
    out = joined + gap + renderTomlBlock(desired, eol);
    owned = { format: 'toml', created: false, lead, gap };
  }

  let after: Record<string, unknown>;
  try {
    after = parse(out) as Record<string, unknown>;
  } catch {
    if (desired === null) {
      throw conflictError(
        file,
        text,
        cuts[0]?.[0] ?? 0,
        'removing the blue-agent hook here would leave the file unreadable',
        'Remove the blue-agent entry by hand, then run reconcile again. The file was left unchanged.',
      );
    }
    throw appendConflict(
      file,
      text,
      statementAt(text, definitionOffset(sections, desired.event) ?? text.length),
      desired.event,
    );
  }
  checkOutcome(file, doc, after, desired);
  return { text: out, owned, managedFound: managed.length };
}

function appendConflict(file: string, text: string, offset: number, event: string): BlueError {
  return conflictError(
    file,
    text,
    offset,
    `hooks.${event} (or hooks) is defined here as an inline value, so blue-agent cannot add its [[hooks.${event}]] ` +
      `table next to it`,
    `Rewrite these hooks as [[hooks.${event}]] and [[hooks.${event}.hooks]] tables (or keep your hooks in ` +
      `hooks.json), then run reconcile again. The file was left unchanged.`,
  );
}

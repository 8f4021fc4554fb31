/**
 * The planner for a JSON settings file (comments allowed) that keeps its hooks in matcher groups: from the current
 * text and the desired managed hook, the next text.
 *
 * Shape: `{"hooks": {"SessionEnd": [{"matcher": "", "hooks": [{"type": "command", "command": ..., "timeout":
 * ...}]}]}}`.
 * A hook object is managed when its `command` is a managed capture command; a matcher group whose hooks are all
 * managed is the agent's own group. Everything else belongs to the user and keeps its bytes.
 *
 * What differs between the harnesses that use this shape is a `MatcherHooksDialect`: the name in messages, which
 * commands are managed, and the managed hook object as written (its keys, their order, the timeout's unit). The agent's
 * group is always `{"matcher": "", "hooks": [<that object>]}`: an empty or missing matcher matches every session end.
 */
import { parseTree, printParseErrorCode, type ParseError } from 'jsonc-parser';
import { BlueError, errorAt, lineColumnAt } from '@blue-agent/contract/errors.js';
import {
  appendChild,
  applyAll,
  canonical,
  detectStyle,
  endOf,
  isBareEmpty,
  kids,
  lastNamed,
  nestingBeyond,
  propertyParts,
  propsNamed,
  removeChildrenEdits,
  render,
  spansLines,
  valueOf,
  type Edit,
  type JsonValue,
  type NewChild,
  type Node,
  type Style,
} from './json-splice.js';
import {
  BASE_TEXT_LIMIT,
  makeOwnership,
  readOwnership,
  type Container,
  type MatcherHooksOwnership,
  type OwnershipRecord,
} from './matcher-hooks-ownership.js';
import type { RequiredSetting } from '../harnesses/types.js';
import { addRequiredSettings, removeAddedSettings } from './required-settings.js';
import { lineIndent } from './text.js';

/** What the planner needs of the managed hook (the harness contract's `ManagedHook` has more). */
export interface MatcherHook {
  readonly event: string;
  readonly command: string;
  readonly timeoutSeconds: number;
  /** Settings the harness needs before it runs hooks at all (the profile's capture.hook.requires; see
   * required-settings.ts). */
  readonly requires?: readonly RequiredSetting[];
}

/** The managed hook object as written: each key once, in this order, with a string or number value. */
export type HookEntry = { [key: string]: string | number };

/** What one harness's settings file differs in. */
export interface MatcherHooksDialect<H extends MatcherHook = MatcherHook> {
  /** The harness's name as messages show it ("<name> settings must be a JSON object"). */
  readonly displayName: string;
  /** True when a hook's `command` is this harness's managed capture command. */
  isManagedCommand(command: string): boolean;
  /**
   * The managed hook object to write for `desired`. An existing managed hook is right when it holds exactly these keys,
   * once each, with these values (as JSON strings and numbers, in any order and spelling).
   */
  entry(desired: H): HookEntry;
}

export interface MatcherHooksInput<H extends MatcherHook = MatcherHook> {
  /** Current text of the file; null when it does not exist. */
  text: string | null;
  /** Path used in error messages. */
  file: string;
  /** The one managed hook that should be in the file, or null when none should be. */
  desired: H | null;
  /** What the ledger recorded the last time the agent wrote the file, if anything. */
  owned: OwnershipRecord | undefined;
}

export interface MatcherHooksPlan {
  /** The text the file should have; null when it should not exist. Identical to the input text when nothing changes. */
  text: string | null;
  /** The ownership record to keep for the file afterwards; undefined when the agent no longer owns anything in it. */
  owned: OwnershipRecord | undefined;
  /** Managed hooks found in the input. */
  managedFound: number;
}

/** The test for a managed command, as the scan uses it. */
type Managed = (command: string) => boolean;

/** Real settings nest a handful of levels; far deeper input is refused before the (recursive) parser sees it. */
const MAX_DEPTH = 256;
const BOM = '\uFEFF';
/** What a missing or whitespace-only file is planned as: an empty object, written the default way. */
const EMPTY_DOCUMENT = '{}\n';

interface Where {
  file: string;
  /** The harness's display name, for messages. */
  name: string;
  /** The harness's test for a managed command. */
  managed: Managed;
  /** The full input text, for line and column. */
  full: string;
  /** Characters before the planned body (a byte-order mark). */
  shift: number;
}

interface HookRef {
  node: Node;
  container: Node;
  index: number;
  managed: boolean;
}

interface GroupRef {
  node: Node;
  index: number;
  hooks: HookRef[];
  own: boolean;
}

interface EventRef {
  prop: Node;
  index: number;
  name: string;
  hooksObject: Node;
  array: Node | undefined;
  groups: GroupRef[];
}

interface Scan {
  root: Node;
  hooksProps: Node[];
  events: EventRef[];
  managed: HookRef[];
}

export function planMatcherHooks<H extends MatcherHook>(
  input: MatcherHooksInput<H>,
  dialect: MatcherHooksDialect<H>,
): MatcherHooksPlan {
  const { text, file, desired } = input;
  const record = readOwnership(input.owned);
  const bom = text?.startsWith(BOM) ? BOM : '';
  const original = text === null ? null : text.slice(bom.length);
  const managed: Managed = (command) => dialect.isManagedCommand(command);
  const where: Where = { file, name: dialect.displayName, managed, full: text ?? '', shift: bom.length };
  // Settings added with the hook come out first and go back in last: the hooks are planned on the file without them.
  const added = record?.settings ?? [];
  const body =
    original === null || original.trim() === '' || added.length === 0
      ? original
      : // biome-ignore lint/complexity/noCommaOperator: parsed as the user's first, so their typo is theirs
        (parseUser(original, where), removeAddedSettings(original, added, where));
  const requires = desired?.requires ?? [];

  if (desired === null) {
    if (body === null || body.trim() === '') return { text, owned: undefined, managedFound: 0 };
    const result = planRemoval(body, record, where);
    const out =
      result.restored || result.text === null ? result.text : result.text === original ? text : bom + result.text;
    return { text: out, owned: undefined, managedFound: result.found };
  }

  // A missing or whitespace-only file is planned as an empty object; the record says how to give it back.
  const blank = body === null || body.trim() === '';
  const base: MatcherHooksOwnership['base'] =
    body === null ? 'missing' : blank ? 'empty' : (record?.base ?? 'existing');
  const baseText =
    body === null ? undefined : blank ? (text!.length <= BASE_TEXT_LIMIT ? text! : undefined) : record?.baseText;
  const working = blank ? EMPTY_DOCUMENT : body;
  const result = planInstall(working, { event: desired.event, entry: dialect.entry(desired) }, record, where);
  const previous = record !== undefined && record.event === desired.event ? record : undefined;
  const settings =
    requires.length === 0 ? { text: result.text, added: [] } : addRequiredSettings(result.text, requires, where);

  let owned: OwnershipRecord;
  if (result.insertion !== undefined) {
    const created = [...result.insertion.created, ...(previous?.created ?? [])];
    owned = makeOwnership(base, baseText, desired.event, created, result.insertion.splice, settings.added);
  } else if (previous !== undefined && JSON.stringify(previous.settings ?? []) === JSON.stringify(settings.added)) {
    // The entry was already there and the record still describes the file: kept as given, so that an unchanged
    // file keeps an identical ledger entry.
    owned = input.owned!;
  } else if (previous !== undefined) {
    owned = makeOwnership(
      previous.base,
      previous.baseText,
      previous.event,
      previous.created,
      previous.splice,
      settings.added,
    );
  } else {
    // Found in place with no (usable) record: which containers came with it is unknown.
    owned = makeOwnership(base, baseText, desired.event, undefined, undefined, settings.added);
  }
  const out = !blank && settings.text === original ? text : bom + settings.text;
  return { text: out, owned, managedFound: result.found };
}

// ---------------------------------------------------------------------------------------------------------------
// Parsing and scanning

function describeParseError(error: ParseError): string {
  const name = printParseErrorCode(error.error);
  const messages: Record<string, string> = {
    InvalidSymbol: 'unexpected character',
    InvalidNumberFormat: 'invalid number',
    PropertyNameExpected: 'property name expected (a trailing comma?)',
    ValueExpected: 'value expected',
    ColonExpected: "':' expected",
    CommaExpected: "',' expected",
    CloseBraceExpected: "'}' expected",
    CloseBracketExpected: "']' expected",
    EndOfFileExpected: 'unexpected content after the end of the settings object',
    InvalidCommentToken: 'invalid comment',
    UnexpectedEndOfComment: 'unterminated comment',
    UnexpectedEndOfString: 'unterminated string',
    UnexpectedEndOfNumber: 'unterminated number',
    InvalidUnicode: 'invalid unicode escape',
    InvalidEscapeCharacter: 'invalid escape character in string',
    InvalidCharacter: 'invalid character in string',
  };
  return messages[name] ?? name;
}

function at(where: Where, offset: number): { line: number; column: number } {
  return lineColumnAt(where.full, offset + where.shift);
}

function parseUser(text: string, where: Where): Node {
  const deep = nestingBeyond(text, MAX_DEPTH);
  if (deep >= 0) {
    throw errorAt(
      'NATIVE_CONFIG_PARSE',
      where.file,
      at(where, deep),
      `nested deeper than ${MAX_DEPTH} levels`,
      `${where.name} settings are not expected to nest this deep; check the file for corruption, fix it, and run ` +
        `reconcile again.`,
    );
  }
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, { allowTrailingComma: false, disallowComments: false });
  const first = errors[0];
  if (first !== undefined || root === undefined) {
    const what = first === undefined ? 'no JSON value' : describeParseError(first);
    throw errorAt(
      'NATIVE_CONFIG_PARSE',
      where.file,
      at(where, first?.offset ?? 0),
      what,
      `Fix the JSON syntax at that position in ${where.file}; blue-agent leaves a file it cannot parse untouched.`,
    );
  }
  return root;
}

/** Parses text the planner produced itself; a failure is a planning bug. */
function parseOwn(text: string, where: Where): Node {
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, { allowTrailingComma: false, disallowComments: false });
  if (errors.length > 0 || root === undefined) internal(where, 'the planned text does not parse');
  return root;
}

function internal(where: Where, why: string): never {
  throw new BlueError('INTERNAL', `${where.file}: the planned change failed its own check: ${why}`, {
    file: where.file,
    hint: 'This is a bug in blue-agent; the file was not changed. Please report it with the command you ran.',
  });
}

function edit(text: string, edits: readonly Edit[], where: Where): string {
  try {
    return applyAll(text, edits);
  } catch (error) {
    return internal(where, error instanceof Error ? error.message : String(error));
  }
}

/** An object whose last `command` is a managed command string (`lastNamed` finds nothing in any other node). */
function isManagedHookNode(hook: Node, managed: Managed): boolean {
  const last = lastNamed(hook, 'command');
  const value = last === undefined ? undefined : valueOf(last);
  return value?.type === 'string' && managed(value.value);
}

/**
 * The agent's own group: one `hooks` array, not empty, every hook managed. (In a `hooks` object instead of an array
 * the children are properties, which are never managed hooks.)
 */
function isOwnGroup(group: Node, managed: Managed): boolean {
  const arrays = propsNamed(group, 'hooks');
  if (arrays.length !== 1) return false;
  const hooks = kids(valueOf(arrays[0]!));
  return hooks.length > 0 && hooks.every((hook) => isManagedHookNode(hook, managed));
}

/** Finds every hook under `hooks.<event>[].hooks[]`, whatever the event, without judging the shape. */
function scan(root: Node, managed: Managed): Scan {
  const hooksProps = propsNamed(root, 'hooks');
  const events: EventRef[] = [];
  const found: HookRef[] = [];
  for (const hooksProp of hooksProps) {
    const hooksObject = valueOf(hooksProp);
    if (hooksObject?.type !== 'object') continue;
    kids(hooksObject).forEach((prop, index) => {
      const parts = propertyParts(prop);
      if (parts === undefined) return;
      const array = parts.value.type === 'array' ? parts.value : undefined;
      const groups: GroupRef[] = [];
      kids(array).forEach((group, groupIndex) => {
        if (group.type !== 'object') return;
        const hooks: HookRef[] = [];
        for (const hooksArrayProp of propsNamed(group, 'hooks')) {
          const container = valueOf(hooksArrayProp);
          if (container?.type !== 'array') continue;
          kids(container).forEach((node, hookIndex) => {
            const ref = { node, container, index: hookIndex, managed: isManagedHookNode(node, managed) };
            hooks.push(ref);
            if (ref.managed) found.push(ref);
          });
        }
        groups.push({ node: group, index: groupIndex, hooks, own: isOwnGroup(group, managed) });
      });
      events.push({ prop, index, name: parts.key, hooksObject, array, groups });
    });
  }
  return { root, hooksProps, events, managed: found };
}

function kindOf(node: Node): string {
  switch (node.type) {
    case 'object':
      return 'an object';
    case 'array':
      return 'an array';
    case 'null':
      return 'null';
    default:
      return `a ${node.type}`;
  }
}

function conflict(where: Where, node: Node, what: string, hint: string): never {
  throw errorAt('NATIVE_CONFIG_CONFLICT', where.file, at(where, node.offset), what, hint);
}

/** Adding the managed group needs `hooks` to be an object and `hooks.<event>` an array of groups. */
function checkAddable(scanned: Scan, event: string, where: Where): void {
  const { root } = scanned;
  if (root.type !== 'object') {
    conflict(
      where,
      root,
      `the top level is ${kindOf(root)}, not an object`,
      `${where.name} settings must be a JSON object ({ ... }); fix ${where.file} so blue-agent can add its ${event} ` +
        `hook.`,
    );
  }
  if (scanned.hooksProps.length > 1) {
    conflict(
      where,
      scanned.hooksProps[1]!,
      '"hooks" appears more than once',
      'Merge the duplicate "hooks" objects into one; only the last one takes effect.',
    );
  }
  const hooksProp = scanned.hooksProps[0];
  if (hooksProp === undefined) return;
  const hooksObject = valueOf(hooksProp)!;
  if (hooksObject.type !== 'object') {
    conflict(
      where,
      hooksObject,
      `"hooks" is ${kindOf(hooksObject)}, not an object`,
      `Make "hooks" an object keyed by event name, for example {"${event}": []}.`,
    );
  }
  const eventProps = propsNamed(hooksObject, event);
  if (eventProps.length > 1) {
    conflict(
      where,
      eventProps[1]!,
      `"hooks.${event}" appears more than once`,
      `Merge the duplicate "${event}" arrays into one; only the last one takes effect.`,
    );
  }
  const array = eventProps[0] === undefined ? undefined : valueOf(eventProps[0]);
  if (array === undefined) return;
  if (array.type !== 'array') {
    conflict(
      where,
      array,
      `"hooks.${event}" is ${kindOf(array)}, not an array`,
      `Make "hooks.${event}" an array of matcher groups: [{"matcher": "", "hooks": [...]}].`,
    );
  }
  kids(array).forEach((group, index) => {
    const props = propsNamed(group, 'hooks');
    if (props.length > 1) {
      conflict(
        where,
        props[1]!,
        `"hooks.${event}[${index}].hooks" appears more than once`,
        'Merge the duplicate "hooks" arrays of that matcher group into one.',
      );
    }
    const value = props[0] === undefined ? undefined : valueOf(props[0]);
    if (value !== undefined && value.type !== 'array') {
      conflict(
        where,
        value,
        `"hooks.${event}[${index}].hooks" is ${kindOf(value)}, not an array`,
        'Make the "hooks" of each matcher group an array of hook objects: [{"type": "command", "command": "..."}].',
      );
    }
  });
}

// ---------------------------------------------------------------------------------------------------------------
// What the user owns: the comparison both directions are checked against

/** A user group as the user wrote it, minus any managed hooks inside it. */
function userGroup(text: string, group: Node, managed: Managed): string {
  const entries = kids(group).map((prop) => {
    const parts = propertyParts(prop);
    if (parts === undefined) return '?';
    if (parts.key !== 'hooks' || parts.value.type !== 'array')
      return `${JSON.stringify(parts.key)}:${canonical(text, parts.value)}`;
    const hooks = kids(parts.value).filter((hook) => !isManagedHookNode(hook, managed));
    return `"hooks":[${hooks.map((hook) => canonical(text, hook)).join(',')}]`;
  });
  return `{${entries.join(',')}}`;
}

/**
 * The user's entries: the document without managed hooks and own groups. Event arrays and a `hooks` object left
 * empty are dropped, since they mean the same to the harness as absent ones and removal may take them away.
 */
function userView(text: string, root: Node, managed: Managed): string {
  if (root.type !== 'object') return canonical(text, root);
  const entries: string[] = [];
  for (const prop of kids(root)) {
    const parts = propertyParts(prop);
    if (parts === undefined) continue;
    if (parts.key !== 'hooks' || parts.value.type !== 'object') {
      entries.push(`${JSON.stringify(parts.key)}:${canonical(text, parts.value)}`);
      continue;
    }
    const events: string[] = [];
    for (const eventProp of kids(parts.value)) {
      const event = propertyParts(eventProp);
      if (event === undefined) continue;
      if (event.value.type !== 'array') {
        events.push(`${JSON.stringify(event.key)}:${canonical(text, event.value)}`);
        continue;
      }
      const groups = kids(event.value)
        .filter((group) => !isOwnGroup(group, managed))
        .map((group) => (group.type === 'object' ? userGroup(text, group, managed) : canonical(text, group)));
      if (groups.length > 0) events.push(`${JSON.stringify(event.key)}:[${groups.join(',')}]`);
    }
    if (events.length > 0) entries.push(`"hooks":{${events.join(',')}}`);
  }
  return `{${entries.join(',')}}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Removing managed hooks

/** Edits that remove the given managed hooks: whole own groups when all their hooks go, else single hooks. */
function removalEdits(text: string, scanned: Scan, doomed: ReadonlySet<Node>): { edits: Edit[]; emptied: Set<string> } {
  const byContainer = new Map<Node, Set<number>>();
  const add = (container: Node, index: number) => {
    const set = byContainer.get(container) ?? new Set<number>();
    set.add(index);
    byContainer.set(container, set);
  };
  for (const event of scanned.events) {
    for (const group of event.groups) {
      const going = group.hooks.filter((hook) => doomed.has(hook.node));
      if (group.own && going.length === group.hooks.length) add(event.array!, group.index);
      else for (const hook of going) add(hook.container, hook.index);
    }
  }
  const emptied = new Set<string>();
  for (const event of scanned.events) {
    const going = event.array === undefined ? undefined : byContainer.get(event.array);
    if (going !== undefined && going.size === kids(event.array).length) emptied.add(event.name);
  }
  const edits = [...byContainer].flatMap(([container, indices]) => removeChildrenEdits(text, container, indices));
  return { edits, emptied };
}

/**
 * Removes event arrays and the `hooks` object once they are empty (no children, no comments) and ours to remove.
 * When the ledger record knows which containers the agent created, ours means those. Otherwise (ledger lost, or
 * the entry was found already in place), ours means this very plan emptied them by taking out managed groups: a
 * container the user left empty stays, and one the agent emptied goes, since an empty container means nothing to
 * the harness and most likely came with the hook.
 */
function removeEmptyContainers(
  text: string,
  where: Where,
  record: MatcherHooksOwnership | undefined,
  emptied: ReadonlySet<string>,
  options: { keepEvent?: string; keepHooks: boolean },
): string {
  const ours = (name: string): boolean =>
    name !== options.keepEvent &&
    (record?.created !== undefined && record.event === name ? record.created.includes('event') : emptied.has(name));
  let root = parseOwn(text, where);
  let scanned = scan(root, where.managed);
  const edits: Edit[] = [];
  let removedEvents = 0;
  for (const hooksProp of scanned.hooksProps) {
    const hooksObject = valueOf(hooksProp)!;
    const going = new Set(
      scanned.events
        .filter(
          (e) => e.hooksObject === hooksObject && e.array !== undefined && isBareEmpty(text, e.array) && ours(e.name),
        )
        .map((e) => e.index),
    );
    if (going.size === 0) continue;
    removedEvents += going.size;
    edits.push(...removeChildrenEdits(text, hooksObject, going));
  }
  text = edit(text, edits, where);
  root = parseOwn(text, where);
  scanned = scan(root, where.managed);
  if (options.keepHooks) return text;
  const hooksOurs = record?.created !== undefined ? record.created.includes('hooks') : removedEvents > 0;
  if (!hooksOurs) return text;
  const going = new Set(
    kids(root)
      .map((prop, index) => ({ prop, index }))
      .filter(
        ({ prop }) =>
          scanned.hooksProps.includes(prop) && valueOf(prop)?.type === 'object' && isBareEmpty(text, valueOf(prop)!),
      )
      .map(({ index }) => index),
  );
  return going.size === 0 ? text : edit(text, removeChildrenEdits(text, root, going), where);
}

/**
 * Cuts out exactly the bytes the record says were inserted around the managed group, when the file still holds them
 * as they were: the way install-then-remove gives back the original bytes.
 */
function exactCut(
  text: string,
  scanned: Scan,
  record: MatcherHooksOwnership | undefined,
  where: Where,
): string | undefined {
  const splice = record?.splice;
  if (record === undefined || splice === undefined || scanned.managed.length !== 1 || scanned.hooksProps.length !== 1)
    return undefined;
  const events = scanned.events.filter((e) => e.name === record.event);
  const event = events[0];
  if (events.length !== 1 || event === undefined || event.array === undefined) return undefined;
  const group = event.groups.find((g) => g.hooks.some((h) => h.managed));
  if (group === undefined || !group.own || group.hooks.length !== 1) return undefined;
  const start = group.node.offset - splice.before.length;
  const end = endOf(group.node) + splice.after.length;
  if (
    start < 0 ||
    text.slice(start, group.node.offset) !== splice.before ||
    text.slice(endOf(group.node), end) !== splice.after
  ) {
    return undefined;
  }
  const top =
    splice.node === 'group'
      ? { container: event.array, index: group.index }
      : splice.node === 'event'
        ? { container: event.hooksObject, index: event.index }
        : { container: scanned.root, index: kids(scanned.root).indexOf(scanned.hooksProps[0]!) };
  const siblings = kids(top.container);
  const edits: Edit[] = [{ offset: start, length: end - start, content: '' }];
  if (splice.comma === 'none') {
    if (siblings.length !== 1) return undefined;
  } else {
    const previous = siblings[top.index - 1];
    if (top.index !== siblings.length - 1 || previous === undefined) return undefined;
    if (splice.comma === 'separate') {
      if (text[endOf(previous)] !== ',') return undefined;
      edits.push({ offset: endOf(previous), length: 1, content: '' });
    }
  }
  const cut = edit(text, edits, where);
  const errors: ParseError[] = [];
  const root = parseTree(cut, errors, { allowTrailingComma: false, disallowComments: false });
  if (errors.length > 0 || root === undefined || scan(root, where.managed).managed.length !== 0) return undefined;
  return userView(cut, root, where.managed) === userView(text, scanned.root, where.managed) ? cut : undefined;
}

interface RemovalResult {
  text: string | null;
  found: number;
  /** The text is the whole file as it was before the agent first wrote it (not a body to put a BOM back on). */
  restored?: boolean;
}

function planRemoval(text: string, record: MatcherHooksOwnership | undefined, where: Where): RemovalResult {
  const root = parseUser(text, where);
  // Nothing of ours can sit in a document that is not an object; leave it as it is.
  if (root.type !== 'object') return { text, found: 0 };
  const scanned = scan(root, where.managed);
  const found = scanned.managed.length;
  let out = exactCut(text, scanned, record, where);
  let emptied = new Set<string>();
  if (out === undefined) {
    const removal = removalEdits(text, scanned, new Set(scanned.managed.map((h) => h.node)));
    out = edit(text, removal.edits, where);
    emptied = removal.emptied;
  }
  out = removeEmptyContainers(out, where, record, emptied, { keepHooks: false });
  const after = parseOwn(out, where);
  if (scan(after, where.managed).managed.length !== 0) internal(where, 'managed hooks remain after removal');
  if (userView(out, after, where.managed) !== userView(text, root, where.managed))
    internal(where, "removal would change the user's entries");
  if (record !== undefined && record.base !== 'existing' && /^\s*\{\s*\}\s*$/.test(out)) {
    return { text: record.base === 'missing' ? null : (record.baseText ?? ''), found, restored: true };
  }
  return { text: out, found };
}

// ---------------------------------------------------------------------------------------------------------------
// Installing the managed hook

/** The managed hook as the planner works with it: its event and the hook object the dialect writes. */
interface Wanted {
  event: string;
  entry: HookEntry;
}

function groupValue(desired: Wanted): { [key: string]: JsonValue } {
  return { matcher: '', hooks: [desired.entry] };
}

/**
 * Exactly the keys of the entry, with its values: a string as a string, a number as a number. As many properties as
 * keys, each key present: so each key once. (`lastNamed` finds nothing in a node that is not an object.)
 */
function hookIsRight(hook: Node, desired: Wanted): boolean {
  const keys = Object.keys(desired.entry);
  if (kids(hook).length !== keys.length) return false;
  return keys.every((key) => {
    const want = desired.entry[key];
    const prop = lastNamed(hook, key);
    const has = prop === undefined ? undefined : valueOf(prop);
    return has?.type === (typeof want === 'string' ? 'string' : 'number') && has.value === want;
  });
}

/** A missing matcher matches everything, like the empty one the agent writes (only a string node holds ''). */
function matcherIsRight(group: Node): boolean {
  return propsNamed(group, 'matcher').every((prop) => valueOf(prop)!.value === '');
}

/** Minimal edits that make the kept managed hook and its group exactly what is desired. */
function keeperEdits(text: string, group: Node, hook: Node, desired: Wanted, style: Style): Edit[] {
  const edits: Edit[] = [];
  // Every matcher is written as "": the empty string has one spelling, so a right one keeps its bytes.
  for (const prop of propsNamed(group, 'matcher')) {
    const value = valueOf(prop)!;
    edits.push({ offset: value.offset, length: value.length, content: '""' });
  }
  const wanted = desired.entry;
  const keys = Object.keys(wanted);
  const names = kids(hook).map((prop) => propertyParts(prop)!.key);
  const sameKeys = names.length === keys.length && keys.every((k) => names.filter((n) => n === k).length === 1);
  if (!sameKeys) {
    // Keys missing, repeated or extra: the hook object is the agent's, so write it anew where it stands.
    const content = render(wanted, style, lineIndent(text, hook.offset), !spansLines(text, hook));
    edits.push({ offset: hook.offset, length: hook.length, content });
    return edits;
  }
  for (const prop of kids(hook)) {
    const parts = propertyParts(prop)!;
    const want = wanted[parts.key]!;
    const has = parts.value;
    // A right value keeps its spelling (no other node holds a string or number value).
    const right = has.value === want;
    if (!right) edits.push({ offset: has.offset, length: has.length, content: JSON.stringify(want) });
  }
  return edits;
}

interface InstallResult {
  text: string;
  found: number;
  insertion?: { created: Container[]; splice: NonNullable<MatcherHooksOwnership['splice']> };
}

function planInstall(
  text: string,
  desired: Wanted,
  record: MatcherHooksOwnership | undefined,
  where: Where,
): InstallResult {
  const root = parseUser(text, where);
  const first = scan(root, where.managed);
  checkAddable(first, desired.event, where);
  const found = first.managed.length;
  const style = detectStyle(text, root);

  // Keep one managed hook that sits in an own group of the event, preferring one that is already right.
  const candidates = first.events
    .filter((e) => e.name === desired.event)
    .flatMap((e) => e.groups.filter((g) => g.own).flatMap((g) => g.hooks.map((h) => ({ group: g, hook: h }))));
  const keeper =
    candidates.find((c) => hookIsRight(c.hook.node, desired) && matcherIsRight(c.group.node)) ??
    candidates.find((c) => hookIsRight(c.hook.node, desired)) ??
    candidates[0];

  const doomed = new Set(first.managed.filter((h) => h !== keeper?.hook).map((h) => h.node));
  const removal = removalEdits(text, first, doomed);
  const edits = [...removal.edits];
  if (keeper !== undefined) edits.push(...keeperEdits(text, keeper.group.node, keeper.hook.node, desired, style));
  let out = edit(text, edits, where);
  if (removal.emptied.size > 0) {
    out = removeEmptyContainers(out, where, record, removal.emptied, { keepEvent: desired.event, keepHooks: true });
  }

  let insertion: InstallResult['insertion'];
  if (keeper === undefined) {
    const added = insertGroup(out, desired, where);
    out = added.text;
    insertion = { created: added.created, splice: added.splice };
  }

  verifyInstalled(out, text, root, desired, where);
  return { text: out, found, ...(insertion === undefined ? {} : { insertion }) };
}

/** Adds the managed group at the end of `hooks.<event>`, creating the array and the `hooks` object when missing. */
function insertGroup(
  text: string,
  desired: Wanted,
  where: Where,
): { text: string; created: Container[]; splice: NonNullable<MatcherHooksOwnership['splice']> } {
  const root = parseOwn(text, where);
  const style = detectStyle(text, root);
  const inlineFile = kids(root).length > 0 && !spansLines(text, root);
  const group = groupValue(desired);
  const key = (name: string) => `${JSON.stringify(name)}${style.colon}`;
  const hooksObject = propsNamed(root, 'hooks')[0] === undefined ? undefined : valueOf(propsNamed(root, 'hooks')[0]!);
  const eventProp = hooksObject === undefined ? undefined : propsNamed(hooksObject, desired.event)[0];
  const array = eventProp === undefined ? undefined : valueOf(eventProp);
  const { eol, unit } = style;

  let container: Node;
  let node: 'group' | 'event' | 'hooks';
  let created: Container[];
  let make: (indent: string, inline: boolean) => NewChild;
  if (array !== undefined) {
    container = array;
    node = 'group';
    created = [];
    make = (indent, inline) => ({ pre: '', core: render(group, style, indent, inline), post: '' });
  } else if (hooksObject !== undefined) {
    container = hooksObject;
    node = 'event';
    created = ['event'];
    make = (indent, inline) =>
      inline
        ? { pre: `${key(desired.event)}[`, core: render(group, style, '', true), post: ']' }
        : {
            pre: `${key(desired.event)}[${eol}${indent}${unit}`,
            core: render(group, style, indent + unit, false),
            post: `${eol}${indent}]`,
          };
  } else {
    container = root;
    node = 'hooks';
    created = ['hooks', 'event'];
    make = (indent, inline) =>
      inline
        ? { pre: `${key('hooks')}{${key(desired.event)}[`, core: render(group, style, '', true), post: ']}' }
        : {
            pre: `${key('hooks')}{${eol}${indent}${unit}${key(desired.event)}[${eol}${indent}${unit}${unit}`,
            core: render(group, style, indent + unit + unit, false),
            post: `${eol}${indent}${unit}]${eol}${indent}}`,
          };
  }
  const insertion = appendChild(text, container, style, inlineFile, make);
  return {
    text: edit(text, insertion.edits, where),
    created,
    splice: { node, before: insertion.before, after: insertion.after, comma: insertion.comma },
  };
}

/** The safety net: the planned text parses, holds exactly the desired managed hook, and the user's entries as before.
 * */
function verifyInstalled(out: string, input: string, inputRoot: Node, desired: Wanted, where: Where): void {
  const root = parseOwn(out, where);
  const scanned = scan(root, where.managed);
  if (scanned.managed.length !== 1)
    internal(where, `${scanned.managed.length} managed hooks after planning, expected 1`);
  const event = scanned.events.find((e) => e.groups.some((g) => g.hooks.some((h) => h.managed)));
  const group = event?.groups.find((g) => g.hooks.some((h) => h.managed));
  if (event?.name !== desired.event || group === undefined || !group.own)
    internal(where, 'the managed hook is not in its own group');
  if (!hookIsRight(scanned.managed[0]!.node, desired) || !matcherIsRight(group.node))
    internal(where, 'the managed hook is not as desired');
  if (userView(out, root, where.managed) !== userView(input, inputRoot, where.managed))
    internal(where, "the plan would change the user's entries");
}

/** Installing the managed hook in a matcher-hooks settings file: minimal edits, then a check of the result. */
import {
  appendChild,
  detectStyle,
  kids,
  lastNamed,
  propertyParts,
  propsNamed,
  render,
  spansLines,
  valueOf,
  type Edit,
  type JsonValue,
  type NewChild,
  type Node,
  type Style,
} from './json-splice.js';
import type { Container, MatcherHooksOwnership } from './matcher-hooks-ownership.js';
import { lineIndent } from './text.js';
import { type Where, parseUser, parseOwn, internal, edit, scan, checkAddable } from './matcher-hooks-scan.js';
import { userView } from './matcher-hooks-user-view.js';
import { removalEdits, removeEmptyContainers } from './matcher-hooks-removal.js';

/** The managed hook object as written: each key once, in this order, with a string or number value. */
export type HookEntry = { [key: string]: string | number };

/** The managed hook as the planner works with it: its event and the hook object the dialect writes. */
export interface Wanted {
  event: string;
  entry: HookEntry;
}

export function groupValue(desired: Wanted): { [key: string]: JsonValue } {
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
export function keeperEdits(text: string, group: Node, hook: Node, desired: Wanted, style: Style): Edit[] {
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

export interface InstallResult {
  text: string;
  found: number;
  insertion?: { created: Container[]; splice: NonNullable<MatcherHooksOwnership['splice']> };
}

export function planInstall(
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

/** Removing managed hooks from a matcher-hooks settings file; the user's bytes come back where the ledger kept them. */
import { parseTree, type ParseError } from 'jsonc-parser';
import { endOf, isBareEmpty, kids, removeChildrenEdits, valueOf, type Edit, type Node } from './json-splice.js';
import type { MatcherHooksOwnership } from './matcher-hooks-ownership.js';
import { type Where, type Scan, parseUser, parseOwn, internal, edit, scan } from './matcher-hooks-scan.js';
import { userView } from './matcher-hooks-user-view.js';

/** Edits that remove the given managed hooks: whole own groups when all their hooks go, else single hooks. */
export function removalEdits(
  text: string,
  scanned: Scan,
  doomed: ReadonlySet<Node>,
): { edits: Edit[]; emptied: Set<string> } {
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
export function removeEmptyContainers(
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

export function planRemoval(text: string, record: MatcherHooksOwnership | undefined, where: Where): RemovalResult {
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

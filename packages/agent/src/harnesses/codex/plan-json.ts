/**
 * hooks.json planning on the JSON splice engine (src/harness-kit/json-splice.ts): whole members appended and cut, so
 * that the cut of an inserted member is exactly the text that was inserted. Codex reads this file as strict JSON with
 * root keys `hooks` and `description` only (codex-rs/hooks/src/engine/discovery.rs, `load_hooks_json`).
 */
import { findNodeAtOffset, parseTree, printParseErrorCode, type Edit, type Node, type ParseError } from 'jsonc-parser';
import { appendMember, applyAll, cutChild, kids, lastNamed, nodeValue } from '../../harness-kit/json-splice.js';
import type { HookPlan, HookPlanInput, ManagedHook, OwnershipRecord } from '../types.js';
import {
  checkOutcome,
  conflictError,
  isRecord,
  listHandlers,
  managedHandlerValue,
  parseError,
  type ParsedHandler,
} from './model.js';

/** What the ledger keeps for hooks.json: which container the agent created and what was inside it before. */
type JsonRecord = {
  format: 'json';
  created: boolean;
  /** The member the agent inserted: the `hooks` key (root), the event key (hooks) or a group (event). */
  container?: 'root' | 'hooks' | 'event';
  event?: string;
  /** Whitespace that was inside the container when it was empty. */
  inner?: string;
  /** The whitespace-only text the file had before the agent wrote a whole document into it. */
  emptyOriginal?: string;
};

const PARSE_HINT =
  'Fix the JSON (Codex reads hooks.json as strict JSON: no comments, no trailing commas); blue-agent leaves the ' +
  'file untouched until it parses.';

interface JsonDoc {
  root: Node | undefined;
  value: Record<string, unknown>;
}

interface LocatedJson {
  parsed: ParsedHandler;
  handler: Node;
  handlers: Node;
  group: Node;
  events: Node;
  eventProp: Node;
  hooksProp: Node;
}

function readJsonRecord(owned: OwnershipRecord | undefined): JsonRecord | undefined {
  if (!isRecord(owned) || owned.format !== 'json') return undefined;
  const record: JsonRecord = { format: 'json', created: owned.created === true };
  if (
    (owned.container === 'root' || owned.container === 'hooks' || owned.container === 'event') &&
    typeof owned.event === 'string'
  ) {
    record.container = owned.container;
    record.event = owned.event;
    if (typeof owned.inner === 'string' && /^\s*$/.test(owned.inner)) record.inner = owned.inner;
  }
  if (typeof owned.emptyOriginal === 'string' && /^\s*$/.test(owned.emptyOriginal))
    record.emptyOriginal = owned.emptyOriginal;
  return record;
}

export function parseJsonText(text: string, file: string): JsonDoc {
  if (text.trim() === '') return { root: undefined, value: {} };
  const errors: ParseError[] = [];
  let root: Node | undefined;
  try {
    root = parseTree(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  } catch (error) {
    throw parseError(
      file,
      text,
      undefined,
      `invalid JSON: ${error instanceof Error ? error.message : String(error)}`,
      PARSE_HINT,
    );
  }
  const first = errors[0];
  if (first !== undefined)
    throw parseError(file, text, first.offset, `invalid JSON: ${printParseErrorCode(first.error)}`, PARSE_HINT);
  if (root === undefined) throw parseError(file, text, 0, 'invalid JSON: no value', PARSE_HINT);
  if (root.type !== 'object') {
    throw conflictError(
      file,
      text,
      root.offset,
      'hooks.json must hold a JSON object',
      'Make the file a JSON object with a "hooks" key (or delete it), then run reconcile again.',
    );
  }
  return { root, value: nodeValue(root) as Record<string, unknown> };
}

/**
 * The nodes of every handler. `doc.value` is `nodeValue(doc.root)`: the same tree read as values, the last of repeated
 * keys winning as in `lastNamed`, so every handler `listHandlers` finds in it has its nodes at the same names and
 * indices.
 */
function locate(doc: JsonDoc): LocatedJson[] {
  return listHandlers(doc.value.hooks).map((parsed) => {
    const hooksProp = lastNamed(doc.root, 'hooks')!;
    const eventProp = lastNamed(hooksProp.children![1], parsed.event)!;
    const events = eventProp.children![1]!;
    const group = events.children![parsed.group]!;
    const handlers = lastNamed(group, 'hooks')!.children![1]!;
    const handler = handlers.children![parsed.handler]!;
    return { parsed, handler, handlers, group, events, eventProp, hooksProp };
  });
}

function groupValue(desired: ManagedHook): Record<string, unknown> {
  return { hooks: [managedHandlerValue(desired)] };
}

function chooseKeeper(managed: LocatedJson[], desired: ManagedHook): LocatedJson | undefined {
  const candidates = managed.filter((m) => m.parsed.event === desired.event);
  return candidates.find((m) => m.parsed.ownGroup && kids(m.handlers).length === 1) ?? candidates[0];
}

/** One removal: the victim, its whole group when the group is the agent's, its event key when that empties it. */
function removalEdit(
  doc: JsonDoc,
  victim: LocatedJson,
  keeper: LocatedJson | undefined,
  record: JsonRecord | undefined,
): Edit {
  const sameGroup = keeper !== undefined && keeper.group === victim.group;
  if (!victim.parsed.ownGroup || sameGroup) {
    return cutChild(victim.handlers, kids(victim.handlers).indexOf(victim.handler), '');
  }
  const ours = record?.event === victim.parsed.event ? record : undefined;
  const groups = kids(victim.events);
  if (groups.length > 1 || ours?.container === 'event') {
    return cutChild(victim.events, groups.indexOf(victim.group), ours?.container === 'event' ? (ours.inner ?? '') : '');
  }
  const hooks = victim.hooksProp.children![1]!;
  const events = kids(hooks);
  if (events.length === 1 && ours?.container === 'root') {
    const root = doc.root!;
    return cutChild(root, kids(root).indexOf(victim.hooksProp), ours.inner ?? '');
  }
  return cutChild(hooks, events.indexOf(victim.eventProp), ours?.container === 'hooks' ? (ours.inner ?? '') : '');
}

/** The text with the kept managed handler brought to `desired`, value by value (a right value keeps its spelling). */
function updateKeeper(text: string, keeper: LocatedJson, desired: ManagedHook): string {
  const wanted = managedHandlerValue(desired);
  let handler = keeper.handler;
  let current = text;
  for (const key of ['type', 'command', 'timeout'] as const) {
    const node = lastNamed(handler, key)?.children?.[1];
    if (node !== undefined && nodeValue(node) === wanted[key]) continue;
    const edit: Edit =
      node !== undefined
        ? { offset: node.offset, length: node.length, content: JSON.stringify(wanted[key]) }
        : appendMember(current, handler, key, wanted[key]).edit;
    current = applyAll(current, [edit]);
    // Re-read the handler so later edits see the new offsets: every edit lies inside it, so its `{` has not moved.
    handler = findNodeAtOffset(parseTree(current)!, handler.offset)!;
  }
  return current;
}

export function planJson(input: HookPlanInput): HookPlan {
  const { text, file, desired } = input;
  const record = readJsonRecord(input.owned);
  const original = parseJsonText(text ?? '', file);
  const managedFound = locate(original).filter((l) => l.parsed.managed).length;
  if (text === null && desired === null) return { text: null, owned: undefined, managedFound: 0 };

  let current = text ?? '';
  let doc = original;
  // Removals one at a time, re-reading the tree after each, so separators are always computed on the real text.
  for (let round = 0; round <= managedFound; round++) {
    const managed = locate(doc).filter((l) => l.parsed.managed);
    const keeper = desired === null ? undefined : chooseKeeper(managed, desired);
    const victim = managed.filter((m) => m !== keeper).at(-1);
    if (victim === undefined) break;
    current = applyAll(current, [removalEdit(doc, victim, keeper, record)]);
    doc = parseJsonText(current, file);
  }

  let owned: OwnershipRecord | undefined;
  if (desired === null) {
    owned = undefined;
    const emptied = current.trim() === '{}';
    if (emptied && record?.created === true) {
      checkOutcome(file, original.value, {}, null);
      return { text: null, owned: undefined, managedFound };
    }
    if (emptied && record?.emptyOriginal !== undefined) current = record.emptyOriginal;
  } else {
    const keeper = chooseKeeper(
      locate(doc).filter((l) => l.parsed.managed),
      desired,
    );
    if (keeper !== undefined) {
      current = updateKeeper(current, keeper, desired);
      owned = record ?? { format: 'json', created: false };
    } else {
      const inserted = insertManaged(current, file, doc, desired);
      current = inserted.text;
      const fresh: JsonRecord = { format: 'json', created: text === null, ...inserted.record };
      if (text !== null && doc.root === undefined) fresh.emptyOriginal = text;
      owned = fresh;
    }
  }

  if (current === text) return { text, owned, managedFound };
  checkOutcome(file, original.value, parseJsonText(current, file).value, desired);
  return { text: current, owned, managedFound };
}

function insertManaged(
  text: string,
  file: string,
  doc: JsonDoc,
  desired: ManagedHook,
): { text: string; record: Omit<JsonRecord, 'format' | 'created'> } {
  const event = desired.event;
  if (doc.root === undefined) {
    const fresh = `${JSON.stringify({ hooks: { [event]: [groupValue(desired)] } }, null, 2)}\n`;
    return { text: fresh, record: { container: 'root', event, inner: '' } };
  }
  const hooksProp = lastNamed(doc.root, 'hooks');
  if (hooksProp === undefined) {
    const { edit, inner } = appendMember(text, doc.root, 'hooks', { [event]: [groupValue(desired)] });
    return {
      text: applyAll(text, [edit]),
      record: { container: 'root', event, ...(inner === undefined ? {} : { inner }) },
    };
  }
  const hooks = hooksProp.children![1]!;
  if (hooks.type !== 'object') {
    throw conflictError(
      file,
      text,
      hooksProp.offset,
      '"hooks" is not an object',
      'Make "hooks" an object of event arrays, then run reconcile again. The file was left unchanged.',
    );
  }
  const eventProp = lastNamed(hooks, event);
  if (eventProp === undefined) {
    const { edit, inner } = appendMember(text, hooks, event, [groupValue(desired)]);
    return {
      text: applyAll(text, [edit]),
      record: { container: 'hooks', event, ...(inner === undefined ? {} : { inner }) },
    };
  }
  const events = eventProp.children![1]!;
  if (events.type !== 'array') {
    throw conflictError(
      file,
      text,
      eventProp.offset,
      `"hooks.${event}" is not an array`,
      `Make "${event}" an array of hook groups, then run reconcile again. The file was left unchanged.`,
    );
  }
  const { edit, inner } = appendMember(text, events, undefined, groupValue(desired));
  return {
    text: applyAll(text, [edit]),
    record: { container: 'event', event, ...(inner === undefined ? {} : { inner }) },
  };
}

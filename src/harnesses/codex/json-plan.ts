/**
 * hooks.json planning on the JSON splice engine (src/harness-kit/json-splice.ts): whole members appended and cut, so
 * that the cut of an inserted member is exactly the text that was inserted. Codex reads this file as strict JSON with root
 * keys `hooks` and `description` only (codex-rs/hooks/src/engine/discovery.rs, `load_hooks_json`).
 */
import { parseTree, printParseErrorCode, type Edit, type Node, type ParseError } from 'jsonc-parser';
import { BlueError } from '../../errors.js';
import { appendMember, applyAll, cutChild, endOf, lastNamed, nodeValue } from '../../harness-kit/json-splice.js';
import type { HookPlan, HookPlanInput, ManagedHook, OwnershipRecord } from '../types.js';
import {
  checkOutcome,
  conflictError,
  handlerIsRight,
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
  'Fix the JSON (Codex reads hooks.json as strict JSON: no comments, no trailing commas); blue-agent leaves the file untouched until it parses.';

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
  if ((owned.container === 'root' || owned.container === 'hooks' || owned.container === 'event') && typeof owned.event === 'string') {
    record.container = owned.container;
    record.event = owned.event;
    if (typeof owned.inner === 'string' && /^\s*$/.test(owned.inner)) record.inner = owned.inner;
  }
  if (typeof owned.emptyOriginal === 'string' && /^\s*$/.test(owned.emptyOriginal)) record.emptyOriginal = owned.emptyOriginal;
  return record;
}

export function parseJsonText(text: string, file: string): JsonDoc {
  if (text.trim() === '') return { root: undefined, value: {} };
  const errors: ParseError[] = [];
  let root: Node | undefined;
  try {
    root = parseTree(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  } catch (error) {
    throw parseError(file, text, undefined, `invalid JSON: ${error instanceof Error ? error.message : String(error)}`, PARSE_HINT);
  }
  const first = errors[0];
  if (first !== undefined) throw parseError(file, text, first.offset, `invalid JSON: ${printParseErrorCode(first.error)}`, PARSE_HINT);
  if (root === undefined) throw parseError(file, text, 0, 'invalid JSON: no value', PARSE_HINT);
  if (root.type !== 'object') {
    throw conflictError(file, text, root.offset, 'hooks.json must hold a JSON object', 'Make the file a JSON object with a "hooks" key (or delete it), then run reconcile again.');
  }
  return { root, value: nodeValue(root) as Record<string, unknown> };
}

function locate(doc: JsonDoc): LocatedJson[] {
  const hooksProp = lastNamed(doc.root, 'hooks');
  const hooks = hooksProp?.children?.[1];
  if (hooksProp === undefined || hooks?.type !== 'object') return [];
  const out: LocatedJson[] = [];
  for (const parsed of listHandlers(doc.value.hooks)) {
    const eventProp = lastNamed(hooks, parsed.event);
    const events = eventProp?.children?.[1];
    const group = events?.children?.[parsed.group];
    const handlers = lastNamed(group, 'hooks')?.children?.[1];
    const handler = handlers?.children?.[parsed.handler];
    if (eventProp === undefined || events === undefined || group === undefined || handlers === undefined || handler === undefined) continue;
    out.push({ parsed, handler, handlers, group, events, eventProp, hooksProp });
  }
  return out;
}

function groupValue(desired: ManagedHook): Record<string, unknown> {
  return { hooks: [managedHandlerValue(desired)] };
}

function chooseKeeper(managed: LocatedJson[], desired: ManagedHook): LocatedJson | undefined {
  const candidates = managed.filter((m) => m.parsed.event === desired.event);
  return candidates.find((m) => m.parsed.ownGroup && (m.handlers.children ?? []).length === 1) ?? candidates[0];
}

/** One removal: the victim, its whole group when the group is the agent's, its event key when that empties it. */
function removalEdit(text: string, doc: JsonDoc, victim: LocatedJson, keeper: LocatedJson | undefined, record: JsonRecord | undefined): Edit {
  const sameGroup = keeper !== undefined && keeper.group === victim.group;
  if (!victim.parsed.ownGroup || sameGroup) {
    const index = (victim.handlers.children ?? []).indexOf(victim.handler);
    return cutChild(victim.handlers, index, '');
  }
  const ours = record?.event === victim.parsed.event ? record : undefined;
  const groups = victim.events.children ?? [];
  if (groups.length > 1 || ours?.container === 'event') {
    return cutChild(victim.events, groups.indexOf(victim.group), ours?.container === 'event' ? (ours.inner ?? '') : '');
  }
  const hooks = victim.hooksProp.children![1]!;
  const events = hooks.children ?? [];
  if (events.length === 1 && ours?.container === 'root' && doc.root !== undefined) {
    const rootKids = doc.root.children ?? [];
    return cutChild(doc.root, rootKids.indexOf(victim.hooksProp), ours.inner ?? '');
  }
  return cutChild(hooks, events.indexOf(victim.eventProp), ours?.container === 'hooks' ? (ours.inner ?? '') : '');
}

/** Edits that bring the kept managed handler to `desired`, value by value. */
function keeperEdits(text: string, keeper: LocatedJson, desired: ManagedHook): Edit[] {
  if (handlerIsRight(keeper.parsed.value, desired)) return [];
  const wanted = managedHandlerValue(desired);
  const edits: Edit[] = [];
  let handler = keeper.handler;
  let current = text;
  for (const key of ['type', 'command', 'timeout'] as const) {
    const prop = lastNamed(handler, key);
    const node = prop?.children?.[1];
    if (node !== undefined && nodeValue(node) === wanted[key]) continue;
    const edit: Edit =
      node !== undefined
        ? { offset: node.offset, length: node.length, content: JSON.stringify(wanted[key]) }
        : appendMember(current, handler, key, wanted[key]).edit;
    current = applyAll(current, [edit]);
    edits.push(edit);
    // Re-read the handler so later edits see the new offsets.
    handler = reparseAt(current, handler.offset);
  }
  return edits.length === 0 ? [] : [{ offset: 0, length: text.length, content: current }];
}

function reparseAt(text: string, offset: number): Node {
  const root = parseTree(text)!;
  const find = (node: Node): Node | undefined => {
    if (node.offset === offset && node.type === 'object') return node;
    for (const child of node.children ?? []) {
      if (child.offset <= offset && offset < endOf(child)) {
        const hit = find(child);
        if (hit !== undefined) return hit;
      }
    }
    return undefined;
  };
  const hit = find(root);
  if (hit === undefined) throw new BlueError('INTERNAL', 'lost track of the managed hook while editing hooks.json');
  return hit;
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
    current = applyAll(current, [removalEdit(current, doc, victim, keeper, record)]);
    doc = parseJsonText(current, file);
  }

  let owned: OwnershipRecord | undefined;
  if (desired === null) {
    owned = undefined;
    const emptied = doc.root !== undefined && (doc.root.children ?? []).length === 0 && current.trim() === '{}';
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
      const edits = keeperEdits(current, keeper, desired);
      if (edits.length > 0) current = applyAll(current, edits);
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
  const after = current.trim() === '' ? {} : parseJsonText(current, file).value;
  checkOutcome(file, original.value, after, desired);
  return { text: current, owned, managedFound };
}

function insertManaged(text: string, file: string, doc: JsonDoc, desired: ManagedHook): { text: string; record: Omit<JsonRecord, 'format' | 'created'> } {
  const event = desired.event;
  if (doc.root === undefined) {
    const fresh = `${JSON.stringify({ hooks: { [event]: [groupValue(desired)] } }, null, 2)}\n`;
    return { text: fresh, record: { container: 'root', event, inner: '' } };
  }
  const hooksProp = lastNamed(doc.root, 'hooks');
  if (hooksProp === undefined) {
    const { edit, inner } = appendMember(text, doc.root, 'hooks', { [event]: [groupValue(desired)] });
    return { text: applyAll(text, [edit]), record: { container: 'root', event, ...(inner === undefined ? {} : { inner }) } };
  }
  const hooks = hooksProp.children?.[1];
  if (hooks?.type !== 'object') {
    throw conflictError(file, text, hooksProp.offset, '"hooks" is not an object', 'Make "hooks" an object of event arrays, then run reconcile again. The file was left unchanged.');
  }
  const eventProp = lastNamed(hooks, event);
  if (eventProp === undefined) {
    const { edit, inner } = appendMember(text, hooks, event, [groupValue(desired)]);
    return { text: applyAll(text, [edit]), record: { container: 'hooks', event, ...(inner === undefined ? {} : { inner }) } };
  }
  const events = eventProp.children?.[1];
  if (events?.type !== 'array') {
    throw conflictError(file, text, eventProp.offset, `"hooks.${event}" is not an array`, `Make "${event}" an array of hook groups, then run reconcile again. The file was left unchanged.`);
  }
  const { edit, inner } = appendMember(text, events, undefined, groupValue(desired));
  return { text: applyAll(text, [edit]), record: { container: 'event', event, ...(inner === undefined ? {} : { inner }) } };
}


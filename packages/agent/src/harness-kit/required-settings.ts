/**
 * Settings a harness needs before it runs hooks at all (an early version's enabling switch, such as
 * `tools.enableHooks: true`), in a JSON settings file. The profile names them (`capture.hook.requires`); they belong to
 * the managed entry: added with it when absent, taken out with it, byte for byte.
 *
 *   - A setting the file already holds with the wanted value is the user's: left alone, never recorded.
 *   - One the file holds with another value (or a parent that is not an object) is the user's choice: refused, never
 *     overridden.
 *   - One that is absent is appended at the end of its object (creating the missing parent objects); the ledger
 *     keeps the key, which of its keys the agent created and the exact bytes inserted around it, so that removal cuts
 *     exactly those bytes. When the file changed around it since, only a property still holding the agent's value is
 *     removed, with the parents the agent created once they are empty again.
 *
 * Pure: text in, text out. The caller parses with comments allowed (JSON with comments); every result is parsed again
 * and compared with what was meant before it is returned.
 */
import { parseTree, type ParseError } from 'jsonc-parser';
import { BlueError, errorAt, lineColumnAt } from '@blue-agent/contract/errors.js';
import type { RequiredSetting } from '../harnesses/types.js';
import {
  appendChild,
  applyAll,
  canonical,
  detectStyle,
  endOf,
  isBareEmpty,
  kids,
  propsNamed,
  removeChildrenEdits,
  render,
  spansLines,
  valueOf,
  type Edit,
  type JsonValue,
  type Node,
} from './json-splice.js';

/** What the ledger keeps of one setting the agent added. */
export type AddedSetting = {
  key: string[];
  value: boolean | number | string;
  /** Index into `key` of the outermost property the agent inserted (0: it created `key[0]` and everything below). */
  top: number;
  before: string;
  after: string;
  comma: 'joined' | 'separate' | 'none';
};

interface Where {
  file: string;
  /** The harness's name, for messages. */
  name: string;
  /** The whole file as read (for line and column), and where this text starts in it. */
  full: string;
  shift: number;
}

const MAX_SETTINGS = 8;
const MAX_KEY_DEPTH = 8;

/** Reads the ledger's list defensively: anything unexpected counts as nothing recorded. */
export function readAddedSettings(value: unknown): AddedSetting[] | undefined {
  if (!Array.isArray(value) || value.length > MAX_SETTINGS) return undefined;
  const out: AddedSetting[] = [];
  for (const item of value) {
    if (item === null || typeof item !== 'object') return undefined;
    const r = item as Record<string, unknown>;
    if (
      !Array.isArray(r.key) ||
      r.key.length === 0 ||
      r.key.length > MAX_KEY_DEPTH ||
      !r.key.every((k) => typeof k === 'string')
    )
      return undefined;
    if (!['boolean', 'number', 'string'].includes(typeof r.value)) return undefined;
    if (!Number.isInteger(r.top) || (r.top as number) < 0 || (r.top as number) >= r.key.length) return undefined;
    if (
      typeof r.before !== 'string' ||
      typeof r.after !== 'string' ||
      (r.comma !== 'joined' && r.comma !== 'separate' && r.comma !== 'none')
    )
      return undefined;
    out.push({
      key: [...(r.key as string[])],
      value: r.value as AddedSetting['value'],
      top: r.top as number,
      before: r.before,
      after: r.after,
      comma: r.comma,
    });
  }
  return out;
}

function parse(text: string, where: Where): Node {
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, { allowTrailingComma: false, disallowComments: false });
  if (errors.length > 0 || root === undefined) {
    throw new BlueError('INTERNAL', `${where.file}: the planned change failed its own check: the text does not parse`, {
      file: where.file,
      hint: 'This is a bug in blue-agent; the file was not changed. Please report it with the command you ran.',
    });
  }
  return root;
}

function internal(where: Where, why: string): never {
  throw new BlueError('INTERNAL', `${where.file}: the planned change failed its own check: ${why}`, {
    file: where.file,
    hint: 'This is a bug in blue-agent; the file was not changed. Please report it with the command you ran.',
  });
}

/** The property nodes along `key` as far as they exist (the last of each name, as a JSON reader takes it). */
function walk(
  root: Node,
  key: readonly string[],
): { props: Node[]; blocked?: { node: Node; at: number; why: string } } {
  const props: Node[] = [];
  let object: Node = root;
  for (let i = 0; i < key.length; i++) {
    if (object.type !== 'object')
      return { props, blocked: { node: object, at: i, why: `"${key.slice(0, i).join('.')}" is not an object` } };
    const named = propsNamed(object, key[i]!);
    if (named.length > 1)
      return {
        props,
        blocked: { node: named[1]!, at: i, why: `"${key.slice(0, i + 1).join('.')}" appears more than once` },
      };
    const prop = named[0];
    if (prop === undefined) return { props };
    props.push(prop);
    object = valueOf(prop)!;
  }
  return { props };
}

const dotted = (key: readonly string[]) => key.join('.');

/**
 * Refuses when the user's file keeps a setting from the value the harness needs (the user turned hooks off), or when
 * its parent is not an object. Nothing is refused for a setting that is absent.
 */
export function checkRequiredSettings(text: string, settings: readonly RequiredSetting[], where: Where): void {
  const root = parse(text, where);
  for (const setting of settings) {
    const { props, blocked } = walk(root, setting.key);
    if (blocked !== undefined) {
      throw errorAt(
        'NATIVE_CONFIG_CONFLICT',
        where.file,
        lineColumnAt(where.full, blocked.node.offset + where.shift),
        blocked.why,
        `${where.name} needs ${dotted(setting.key)} = ${JSON.stringify(setting.value)} to run hooks; fix ` +
          `${where.file} so blue-agent can set it, then run reconcile again.`,
      );
    }
    if (props.length !== setting.key.length) continue;
    const value = valueOf(props.at(-1)!)!;
    if (canonical(text, value) !== JSON.stringify(setting.value)) {
      throw errorAt(
        'NATIVE_CONFIG_CONFLICT',
        where.file,
        lineColumnAt(where.full, value.offset + where.shift),
        `${dotted(setting.key)} is ${canonical(text, value)}, which keeps ${where.name} from running hooks (the ` +
          `capture hook among them)`,
        `blue-agent does not override a setting you made: set ${dotted(setting.key)} to ` +
          `${JSON.stringify(setting.value)} (or remove it) and run reconcile again, or ask your administrator to ` +
          `leave ${where.name} out of the policy.`,
      );
    }
  }
}

/** Appends every absent setting; returns the text and what was added (in order). */
export function addRequiredSettings(
  text: string,
  settings: readonly RequiredSetting[],
  where: Where,
): { text: string; added: AddedSetting[] } {
  checkRequiredSettings(text, settings, where);
  const added: AddedSetting[] = [];
  for (const setting of settings) {
    const root = parse(text, where);
    const { props } = walk(root, setting.key);
    if (props.length === setting.key.length) continue;
    const top = props.length;
    const container = top === 0 ? root : valueOf(props.at(-1)!)!;
    const style = detectStyle(text, root);
    const inlineFile = kids(root).length > 0 && !spansLines(text, root);
    // `{"a": {"b": value}}` below the last existing object: the first missing key with the rest nested in it.
    let value: JsonValue = setting.value;
    for (const k of setting.key.slice(top + 1).reverse()) value = { [k]: value };
    const name = setting.key[top]!;
    const insertion = appendChild(text, container, style, inlineFile, (indent, inline) => ({
      pre: '',
      core: `${JSON.stringify(name)}${style.colon}${render(value, style, indent, inline)}`,
      post: '',
    }));
    text = applyAll(text, insertion.edits);
    added.push({
      key: [...setting.key],
      value: setting.value,
      top,
      before: insertion.before,
      after: insertion.after,
      comma: insertion.comma,
    });
  }
  const after = parse(text, where);
  for (const setting of settings) {
    const { props } = walk(after, setting.key);
    if (
      props.length !== setting.key.length ||
      canonical(text, valueOf(props.at(-1)!)!) !== JSON.stringify(setting.value)
    )
      internal(where, `${dotted(setting.key)} is not set after planning`);
  }
  return { text, added };
}

/**
 * Takes out what the agent added (latest first). A setting whose value the user changed since is theirs now: it stays.
 */
export function removeAddedSettings(text: string, added: readonly AddedSetting[], where: Where): string {
  for (const setting of [...added].reverse()) text = removeOne(text, setting, where);
  return text;
}

function removeOne(text: string, setting: AddedSetting, where: Where): string {
  const root = parse(text, where);
  const { props, blocked } = walk(root, setting.key);
  if (blocked !== undefined || props.length !== setting.key.length) return text;
  const leafValue = valueOf(props.at(-1)!)!;
  if (canonical(text, leafValue) !== JSON.stringify(setting.value)) return text;

  // Exactly the inserted bytes, when the outermost inserted property still holds only what was inserted.
  const outer = props[setting.top]!;
  let inserted: JsonValue = setting.value;
  for (const k of setting.key.slice(setting.top + 1).reverse()) inserted = { [k]: inserted };
  const container = setting.top === 0 ? root : valueOf(props[setting.top - 1]!)!;
  const siblings = kids(container);
  const index = siblings.indexOf(outer);
  const start = outer.offset - setting.before.length;
  const end = endOf(outer) + setting.after.length;
  const exact =
    canonical(text, valueOf(outer)!) === JSON.stringify(inserted) &&
    start >= 0 &&
    text.slice(start, outer.offset) === setting.before &&
    text.slice(endOf(outer), end) === setting.after &&
    (setting.comma === 'none'
      ? siblings.length === 1
      : index === siblings.length - 1 &&
        index > 0 &&
        (setting.comma === 'joined' || text[endOf(siblings[index - 1]!)] === ','));
  if (exact) {
    const edits: Edit[] = [{ offset: start, length: end - start, content: '' }];
    if (setting.comma === 'separate') edits.push({ offset: endOf(siblings[index - 1]!), length: 1, content: '' });
    const cut = applyAll(text, edits);
    const errors: ParseError[] = [];
    if (
      parseTree(cut, errors, { allowTrailingComma: false, disallowComments: false }) !== undefined &&
      errors.length === 0
    )
      return cut;
  }

  // The file changed around it: the leaf goes, then each object the agent created that is left empty.
  const leafParent = setting.key.length === 1 ? root : valueOf(props.at(-2)!)!;
  let out = applyAll(text, removeChildrenEdits(text, leafParent, new Set([kids(leafParent).indexOf(props.at(-1)!)])));
  for (let depth = setting.key.length - 1; depth > setting.top; depth--) {
    const now = parse(out, where);
    const path = walk(now, setting.key.slice(0, depth)).props;
    if (path.length !== depth) break;
    const object = valueOf(path.at(-1)!)!;
    if (object.type !== 'object' || !isBareEmpty(out, object)) break;
    const parent = depth === 1 ? now : valueOf(path.at(-2)!)!;
    out = applyAll(out, removeChildrenEdits(out, parent, new Set([kids(parent).indexOf(path.at(-1)!)])));
  }
  return out;
}

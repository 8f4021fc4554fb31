/** Parsing a matcher-hooks settings file and finding every hook under `hooks.<event>[].hooks[]`, unjudged. */
import { parseTree, printParseErrorCode, type ParseError } from 'jsonc-parser';
import { BlueError, errorAt, lineColumnAt } from '@blue-agent/contract/errors.js';
import {
  applyAll,
  kids,
  lastNamed,
  nestingBeyond,
  propertyParts,
  propsNamed,
  valueOf,
  type Edit,
  type Node,
} from './json-splice.js';

/** The test for a managed command, as the scan uses it. */
export type Managed = (command: string) => boolean;

/** Real settings nest a handful of levels; far deeper input is refused before the (recursive) parser sees it. */
export const MAX_DEPTH = 256;
export const BOM = '\uFEFF';
/** What a missing or whitespace-only file is planned as: an empty object, written the default way. */
export const EMPTY_DOCUMENT = '{}\n';

export interface Where {
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

export interface Scan {
  root: Node;
  hooksProps: Node[];
  events: EventRef[];
  managed: HookRef[];
}

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

export function at(where: Where, offset: number): { line: number; column: number } {
  return lineColumnAt(where.full, offset + where.shift);
}

export function parseUser(text: string, where: Where): Node {
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
export function parseOwn(text: string, where: Where): Node {
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, { allowTrailingComma: false, disallowComments: false });
  if (errors.length > 0 || root === undefined) internal(where, 'the planned text does not parse');
  return root;
}

export function internal(where: Where, why: string): never {
  throw new BlueError('INTERNAL', `${where.file}: the planned change failed its own check: ${why}`, {
    file: where.file,
    hint: 'This is a bug in blue-agent; the file was not changed. Please report it with the command you ran.',
  });
}

export function edit(text: string, edits: readonly Edit[], where: Where): string {
  try {
    return applyAll(text, edits);
  } catch (error) {
    return internal(where, error instanceof Error ? error.message : String(error));
  }
}

/** An object whose last `command` is a managed command string (`lastNamed` finds nothing in any other node). */
export function isManagedHookNode(hook: Node, managed: Managed): boolean {
  const last = lastNamed(hook, 'command');
  const value = last === undefined ? undefined : valueOf(last);
  return value?.type === 'string' && managed(value.value);
}

/**
 * The agent's own group: one `hooks` array, not empty, every hook managed. (In a `hooks` object instead of an array
 * the children are properties, which are never managed hooks.)
 */
export function isOwnGroup(group: Node, managed: Managed): boolean {
  const arrays = propsNamed(group, 'hooks');
  if (arrays.length !== 1) return false;
  const hooks = kids(valueOf(arrays[0]!));
  return hooks.length > 0 && hooks.every((hook) => isManagedHookNode(hook, managed));
}

/** Finds every hook under `hooks.<event>[].hooks[]`, whatever the event, without judging the shape. */
export function scan(root: Node, managed: Managed): Scan {
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

export function kindOf(node: Node): string {
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

export function conflict(where: Where, node: Node, what: string, hint: string): never {
  throw errorAt('NATIVE_CONFIG_CONFLICT', where.file, at(where, node.offset), what, hint);
}

/** Adding the managed group needs `hooks` to be an object and `hooks.<event>` an array of groups. */
export function checkAddable(scanned: Scan, event: string, where: Where): void {
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

/**
 * The JSON splice engine every JSON planner uses. Reading jsonc-parser syntax trees against their text (where nodes
 * end, which properties an object holds) and text-level helpers for splicing JSON-with-comments: every change is an
 * explicit insertion or deletion of a byte range, so whatever lies outside those ranges (formatting, comments, key
 * order) is kept exactly.
 *
 * jsonc-parser's `modify` re-formats the whole lines around an edit; that is fine for an editor but not for a
 * file whose bytes must come back unchanged, so the edits here are computed from the parse tree and the scanner.
 */
import { applyEdits, createScanner, type Edit, type Node } from 'jsonc-parser';
import { eolOf, lineIndent } from './text.js';

/** jsonc-parser's SyntaxKind values (a const enum in its typings, which isolated modules cannot import). */
export const Token = {
  OpenBrace: 1,
  CloseBrace: 2,
  OpenBracket: 3,
  CloseBracket: 4,
  Comma: 5,
  LineComment: 12,
  BlockComment: 13,
  LineBreak: 14,
  Trivia: 15,
  EOF: 17,
} as const;

export type { Edit, Node };

export function endOf(node: Node): number {
  return node.offset + node.length;
}

/** Children of an object (property nodes) or array (element nodes); empty for anything else. */
export function kids(node: Node | undefined): Node[] {
  return node !== undefined && (node.type === 'object' || node.type === 'array') && Array.isArray(node.children)
    ? node.children
    : [];
}

/** Key and value of a property node, or undefined for a malformed one. */
export function propertyParts(prop: Node): { key: string; keyNode: Node; value: Node } | undefined {
  const [keyNode, value] = prop.children ?? [];
  if (prop.type !== 'property' || keyNode === undefined || value === undefined || typeof keyNode.value !== 'string') {
    return undefined;
  }
  return { key: keyNode.value, keyNode, value };
}

/** Every property of `object` named `name`, in document order (JSON allows duplicates; the last one wins). */
export function propsNamed(object: Node, name: string): Node[] {
  if (object.type !== 'object') return [];
  return kids(object).filter((prop) => propertyParts(prop)?.key === name);
}

/** The property named `name` that a JSON reader keeps when the key repeats: the last one. */
export function lastNamed(object: Node | undefined, name: string): Node | undefined {
  return object === undefined ? undefined : propsNamed(object, name).at(-1);
}

/** The value node of a property node. */
export function valueOf(prop: Node): Node | undefined {
  return propertyParts(prop)?.value;
}

/** Offset of the closing bracket or brace of an object or array node. */
export function closeOf(container: Node): number {
  return endOf(container) - 1;
}

/**
 * The first offset at which `{`/`[` nesting exceeds `limit`, or -1. Uses the scanner (a loop), because the parser
 * recurses per level and a hostile file nested thousands deep would overflow the stack.
 */
export function nestingBeyond(text: string, limit: number): number {
  const scanner = createScanner(text, true);
  let depth = 0;
  for (let kind = scanner.scan(); kind !== Token.EOF; kind = scanner.scan()) {
    if (kind === Token.OpenBrace || kind === Token.OpenBracket) {
      depth++;
      if (depth > limit) return scanner.getTokenOffset();
    } else if (kind === Token.CloseBrace || kind === Token.CloseBracket) {
      depth = Math.max(0, depth - 1);
    }
  }
  return -1;
}

/** The next token at or after `pos` that is not whitespace, a line break or a comment. */
function nextSignificant(text: string, pos: number): { kind: number; offset: number } {
  const scanner = createScanner(text, true);
  scanner.setPosition(pos);
  const kind = scanner.scan();
  return { kind, offset: scanner.getTokenOffset() };
}

/** Offset of the comma that follows `pos` (across whitespace and comments), or -1. */
export function commaAfter(text: string, pos: number): number {
  const next = nextSignificant(text, pos);
  return next.kind === Token.Comma ? next.offset : -1;
}

/** True when a comment lies in [from, to). */
export function hasComment(text: string, from: number, to: number): boolean {
  const scanner = createScanner(text, false);
  scanner.setPosition(from);
  for (let kind = scanner.scan(); kind !== Token.EOF && scanner.getTokenOffset() < to; kind = scanner.scan()) {
    if (kind === Token.LineComment || kind === Token.BlockComment) return true;
  }
  return false;
}

/** Offsets of the line breaks in [from, to) that are not inside comments. */
function lineBreaksIn(text: string, from: number, to: number): number[] {
  const scanner = createScanner(text, false);
  scanner.setPosition(from);
  const found: number[] = [];
  for (let kind = scanner.scan(); kind !== Token.EOF && scanner.getTokenOffset() < to; kind = scanner.scan()) {
    if (kind === Token.LineBreak) found.push(scanner.getTokenOffset());
  }
  return found;
}

/**
 * Where to append after the last child of a multi-line container: right after the child, or after comments that
 * trail it on the same line (so `"a": 1 // note` keeps its note on its own line).
 */
function appendPoint(text: string, last: Node): number {
  const scanner = createScanner(text, false);
  scanner.setPosition(endOf(last));
  let point = endOf(last);
  for (let kind = scanner.scan(); kind !== Token.EOF; kind = scanner.scan()) {
    if (kind === Token.Trivia) continue;
    if (kind === Token.LineComment) return scanner.getTokenOffset() + scanner.getTokenLength();
    if (kind === Token.BlockComment && !/[\r\n]/.test(text.slice(scanner.getTokenOffset(), scanner.getPosition()))) {
      point = scanner.getPosition();
      continue;
    }
    break;
  }
  return point;
}

function isSpace(ch: string | undefined): boolean {
  return ch === ' ' || ch === '\t' || ch === '\r' || ch === '\n';
}

function skipSpaceForward(text: string, pos: number): number {
  while (pos < text.length && isSpace(text[pos])) pos++;
  return pos;
}

function skipSpaceBackward(text: string, pos: number): number {
  while (pos > 0 && isSpace(text[pos - 1])) pos--;
  return pos;
}

export function spansLines(text: string, node: Node): boolean {
  const br = text.indexOf('\n', node.offset);
  return br >= 0 && br < endOf(node);
}

/**
 * Edits that delete the children at `remove` (indices into `kids(container)`), with the comma and the whitespace
 * that separated each, leaving neighbours and their comments in place. Ranges never overlap one another.
 */
export function removeChildrenEdits(text: string, container: Node, remove: ReadonlySet<number>): Edit[] {
  const children = kids(container);
  const edits: Edit[] = [];
  const keptIdx = children.map((_, i) => i).filter((i) => !remove.has(i));
  if (keptIdx.length === 0) {
    const open = container.offset + 1;
    const close = closeOf(container);
    if (!hasComment(text, open, close)) return [{ offset: open, length: close - open, content: '' }];
    // Comments inside are the user's: delete the children and their commas around them.
    children.forEach((child) => {
      // The last child's comma too, when the file allows a trailing one: `[ /* c */ ,]` would not parse.
      const comma = commaAfter(text, endOf(child));
      const end = comma >= 0 ? comma + 1 : endOf(child);
      edits.push({ offset: child.offset, length: end - child.offset, content: '' });
    });
    return edits;
  }
  const lastKept = keptIdx[keptIdx.length - 1]!;
  for (const i of [...remove].filter((n) => n >= 0 && n < children.length).sort((a, b) => a - b)) {
    const child = children[i]!;
    if (i < lastKept) {
      // A later sibling exists: delete up to where it (or the comment before it) starts.
      const comma = commaAfter(text, endOf(child));
      const end = comma >= 0 ? skipSpaceForward(text, comma + 1) : endOf(child);
      edits.push({ offset: child.offset, length: end - child.offset, content: '' });
    } else {
      // Trailing run: the comma after the last kept sibling goes, then each child with the space before it.
      if (i === lastKept + 1) {
        const comma = commaAfter(text, endOf(children[lastKept]!));
        if (comma >= 0) edits.push({ offset: comma, length: 1, content: '' });
      }
      const start = skipSpaceBackward(text, child.offset);
      const comma = commaAfter(text, endOf(child));
      const end = comma >= 0 ? comma + 1 : endOf(child);
      edits.push({ offset: start, length: end - start, content: '' });
    }
  }
  return edits;
}

/** Applies non-overlapping edits; throws when they overlap (a planning bug, never the user's file). */
export function applyAll(text: string, edits: readonly Edit[]): string {
  return edits.length === 0 ? text : applyEdits(text, [...edits]);
}

/** How new text is written so that it looks like the text around it. */
export interface Style {
  eol: string;
  unit: string;
  colon: string;
  /** Separator after a comma when items share a line. */
  comma: string;
}

export function detectStyle(text: string, root: Node): Style {
  const eol = eolOf(text);
  let colon = ': ';
  let comma = ', ';
  let unit: string | undefined;
  // Breadth-first over the first nodes: enough to see the user's habits without walking a huge file.
  const queue: Node[] = [root];
  let colonSeen = false;
  let commaSeen = false;
  for (let visited = 0; queue.length > 0 && visited < 2000; visited++) {
    const node = queue.shift()!;
    const children = kids(node);
    if (unit === undefined && children.length > 0 && lineBreaksIn(text, node.offset, children[0]!.offset).length > 0) {
      const outer = lineIndent(text, node.offset);
      const inner = lineIndent(text, children[0]!.offset);
      const step = inner.startsWith(outer) ? inner.slice(outer.length) : '';
      if (/^(?: +|\t+)$/.test(step)) unit = step;
    }
    if (!commaSeen && children.length > 1) {
      const between = text.slice(endOf(children[0]!), children[1]!.offset);
      const m = /^,([ \t]*)$/.exec(between);
      if (m) {
        comma = ',' + m[1];
        commaSeen = true;
      }
    }
    for (const child of children) {
      if (child.type === 'property') {
        const parts = propertyParts(child);
        if (parts === undefined) continue;
        if (!colonSeen) {
          const between = text.slice(endOf(parts.keyNode), parts.value.offset);
          if (/^[ \t]*:[ \t]*$/.test(between)) {
            colon = between;
            colonSeen = true;
          }
        }
        queue.push(parts.value);
      } else {
        queue.push(child);
      }
    }
    if (unit !== undefined && colonSeen && commaSeen) break;
  }
  if (!commaSeen && !colon.endsWith(' ')) comma = ',';
  return { eol, unit: unit ?? '  ', colon, comma };
}

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** Writes a value the way the surrounding file is written: one line, or one item per line at `indent`. */
export function render(value: JsonValue, style: Style, indent: string, inline: boolean): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  const entries: string[] = Array.isArray(value)
    ? value.map((item) => render(item, style, indent + style.unit, inline))
    : Object.entries(value).map(
        ([key, item]) => `${JSON.stringify(key)}${style.colon}${render(item, style, indent + style.unit, inline)}`,
      );
  const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
  if (entries.length === 0) return open + close;
  if (inline) return open + entries.join(style.comma) + close;
  const inner = indent + style.unit;
  return `${open}${style.eol}${inner}${entries.join(`,${style.eol}${inner}`)}${style.eol}${indent}${close}`;
}

/** A child to add: the text before and after the piece whose position is tracked (`core`), and the core itself. */
export interface NewChild {
  pre: string;
  core: string;
  post: string;
}

export interface Insertion {
  edits: Edit[];
  /** Inserted bytes immediately before and after `core`. */
  before: string;
  after: string;
  /** `joined`: the comma opens `before`; `separate`: it sits right after the previous sibling; `none`: no comma. */
  comma: 'joined' | 'separate' | 'none';
}

/**
 * Appends a child to `container` (an object or array), written at `indent` unless the container is laid out on one
 * line. `make(indent, inline)` renders the child for the chosen layout. Only insertions: no byte of the input goes.
 */
export function appendChild(
  text: string,
  container: Node,
  style: Style,
  inlineFile: boolean,
  make: (indent: string, inline: boolean) => NewChild,
): Insertion {
  const children = kids(container);
  const last = children[children.length - 1];
  if (last === undefined) {
    const open = container.offset + 1;
    const close = closeOf(container);
    if (inlineFile) {
      const child = make('', true);
      return {
        edits: [{ offset: close, length: 0, content: child.pre + child.core + child.post }],
        before: child.pre,
        after: child.post,
        comma: 'none',
      };
    }
    const outer = lineIndent(text, container.offset);
    const inner = outer + style.unit;
    const child = make(inner, false);
    const breaks = lineBreaksIn(text, open, close);
    const lastBreak = breaks[breaks.length - 1];
    if (lastBreak !== undefined) {
      // `{\n}` or `{ // note\n}`: the new line goes before the line break that precedes the closing brace.
      const before = style.eol + inner + child.pre;
      return {
        edits: [{ offset: lastBreak, length: 0, content: before + child.core + child.post }],
        before,
        after: child.post,
        comma: 'none',
      };
    }
    const before = style.eol + inner + child.pre;
    const after = child.post + style.eol + outer;
    return {
      edits: [{ offset: close, length: 0, content: before + child.core + after }],
      before,
      after,
      comma: 'none',
    };
  }
  if (inlineFile || !spansLines(text, container)) {
    const child = make('', true);
    const before = style.comma + child.pre;
    return {
      edits: [{ offset: endOf(last), length: 0, content: before + child.core + child.post }],
      before,
      after: child.post,
      comma: 'joined',
    };
  }
  const indent = lineIndent(text, last.offset);
  const child = make(indent, false);
  const point = appendPoint(text, last);
  if (point === endOf(last)) {
    const before = ',' + style.eol + indent + child.pre;
    return {
      edits: [{ offset: point, length: 0, content: before + child.core + child.post }],
      before,
      after: child.post,
      comma: 'joined',
    };
  }
  const before = style.eol + indent + child.pre;
  return {
    edits: [
      { offset: endOf(last), length: 0, content: ',' },
      { offset: point, length: 0, content: before + child.core + child.post },
    ],
    before,
    after: child.post,
    comma: 'separate',
  };
}

/** True when the object or array has no children and nothing but whitespace between its brackets. */
export function isBareEmpty(text: string, container: Node): boolean {
  return kids(container).length === 0 && text.slice(container.offset + 1, closeOf(container)).trim() === '';
}

/**
 * A canonical rendering of a node: the tokens of the source without whitespace or comments, so two trees compare
 * equal exactly when they hold the same keys, order and literal spellings.
 */
export function canonical(text: string, node: Node): string {
  switch (node.type) {
    case 'object':
      return `{${kids(node)
        .map((prop) => {
          const parts = propertyParts(prop);
          return parts === undefined ? '?' : `${JSON.stringify(parts.key)}:${canonical(text, parts.value)}`;
        })
        .join(',')}}`;
    case 'array':
      return `[${kids(node)
        .map((item) => canonical(text, item))
        .join(',')}]`;
    default:
      return text.slice(node.offset, endOf(node));
  }
}

/** The value a JSON node holds, built without the prototype pitfalls of plain assignment. */
export function nodeValue(node: Node): unknown {
  switch (node.type) {
    case 'object':
      return Object.fromEntries(
        (node.children ?? []).map((p) => [
          String(p.children?.[0]?.value),
          p.children?.[1] ? nodeValue(p.children[1]) : null,
        ]),
      );
    case 'array':
      return (node.children ?? []).map(nodeValue);
    default:
      return node.value as unknown;
  }
}

/** The edit that removes child `index` of `container` with its separator; the last child leaves `inner` behind. */
export function cutChild(container: Node, index: number, inner: string): Edit {
  const kids = container.children ?? [];
  const child = kids[index]!;
  if (kids.length === 1) return { offset: container.offset + 1, length: container.length - 2, content: inner };
  if (index > 0) {
    const prev = kids[index - 1]!;
    return { offset: endOf(prev), length: endOf(child) - endOf(prev), content: '' };
  }
  return { offset: child.offset, length: kids[1]!.offset - child.offset, content: '' };
}

function indentUnit(text: string): string {
  const m = /\n([ \t]+)\S/.exec(text);
  if (m === null) return '  ';
  return m[1]!.startsWith('\t') ? '\t' : m[1]!;
}

/**
 * For strict JSON (no comments): the edit that appends a member (`"key": value` in an object, `value` in an array) as
 * the container's last child, separated like the members before it. `cutChild` of the new member gives back exactly
 * the input; `inner` is what an empty container held, for that cut.
 */
export function appendMember(
  text: string,
  container: Node,
  key: string | undefined,
  value: unknown,
): { edit: Edit; inner?: string } {
  const kids = container.children ?? [];
  const eol = eolOf(text);
  const unit = indentUnit(text);
  const render = (indent: string, multiline: boolean) => {
    const body = multiline
      ? JSON.stringify(value, null, unit)
          .split('\n')
          .join(eol + indent)
      : JSON.stringify(value);
    const colon = multiline || /"\s*:\s/.test(text) ? ': ' : ':';
    return key === undefined ? body : `${JSON.stringify(key)}${colon}${body}`;
  };
  if (kids.length > 0) {
    const last = kids.at(-1)!;
    let sep: string;
    if (kids.length >= 2) {
      const between = text.slice(endOf(kids.at(-2)!), last.offset);
      sep = between.slice(between.indexOf(',') + 1);
    } else {
      sep = text.slice(container.offset + 1, last.offset);
    }
    const multiline = sep.includes('\n');
    const indent = multiline ? sep.slice(sep.lastIndexOf('\n') + 1) : '';
    return { edit: { offset: endOf(last), length: 0, content: `,${sep}${render(indent, multiline)}` } };
  }
  const inner = text.slice(container.offset + 1, endOf(container) - 1);
  const multiline = text.includes('\n');
  const outer = lineIndent(text, container.offset);
  const content = multiline ? `${eol}${outer}${unit}${render(outer + unit, true)}${eol}${outer}` : render('', false);
  return { edit: { offset: container.offset + 1, length: inner.length, content }, inner };
}

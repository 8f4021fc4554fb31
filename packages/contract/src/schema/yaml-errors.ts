/**
 * A YAML syntax error placed on the line a person must change. The parser reports where it noticed the problem,
 * which is often elsewhere: a key indented too deep under a key that already has a value is reported at that value,
 * on the line above; an unclosed quote or bracket at the end of the text. These are moved to the line to fix, and
 * said in words.
 */
import { isScalar, Parser, Scalar, visit, type CST, type Document, type LineCounter, type YAMLError } from 'yaml';

export interface YamlProblem {
  line: number;
  column: number;
  message: string;
  hint: string;
}

/** The first error of `doc` (which has at least one), where it must be fixed. */
export function yamlProblem(text: string, doc: Document, lines: LineCounter): YamlProblem {
  const first = doc.errors[0]!;
  return (
    overIndented(text, doc.errors, first, lines) ??
    unclosed(text, doc, first, lines) ??
    duplicateKey(doc, first, lines) ??
    asReported(first, lines)
  );
}

function asReported(error: YAMLError, lines: LineCounter): YamlProblem {
  const at = lines.linePos(error.pos[0]);
  const tabs = error.code === 'TAB_AS_INDENT';
  return {
    line: at.line,
    column: at.col,
    message: tabs ? 'a tab indents this line, and YAML indents with spaces only' : error.message.split('\n')[0]!,
    hint: tabs
      ? `Replace the tabs at the start of line ${at.line} with spaces.`
      : `Fix the syntax error on line ${at.line}.`,
  };
}

/**
 * `key: value` followed by a line indented deeper: the parser reads the deeper line as the value going on, then
 * finds a key in it. The line to fix is the deeper one.
 */
function overIndented(
  text: string,
  errors: readonly YAMLError[],
  first: YAMLError,
  lines: LineCounter,
): YamlProblem | undefined {
  const multiline = errors.find((e) => e.code === 'MULTILINE_IMPLICIT_KEY' && e.pos[0] === first.pos[0]);
  if (multiline === undefined) return undefined;
  const start = lines.linePos(multiline.pos[0]).line;
  const end = lines.linePos(multiline.pos[1]).line;
  if (end <= start) return undefined;
  const indent = (line: number) => /^ */.exec(lineText(text, lines, line))![0].length;
  if (indent(end) <= indent(start)) return undefined;
  return {
    line: end,
    column: indent(end) + 1,
    message:
      `line ${end} is indented deeper than line ${start}, whose key already has a value, so it cannot be ` +
      `nested under it`,
    hint: `Indent line ${end} like the keys it belongs with (YAML nests by indentation).`,
  };
}

/** A quote, bracket or brace never closed: reported where it opens. */
function unclosed(text: string, doc: Document, error: YAMLError, lines: LineCounter): YamlProblem | undefined {
  const pos = error.pos[0];
  let opening: { start: number; what: string } | undefined;
  if (error.code === 'MISSING_CHAR' && /quote/.test(error.message)) {
    visit(doc, {
      Scalar(_key, node) {
        const range = node.range;
        if (
          range &&
          range[0] < pos &&
          pos <= range[2] &&
          (node.type === Scalar.QUOTE_DOUBLE || node.type === Scalar.QUOTE_SINGLE)
        ) {
          opening = { start: range[0], what: node.type === Scalar.QUOTE_DOUBLE ? 'the " quote' : "the ' quote" };
        }
      },
    });
  } else if (/^Flow (sequence|map)\b/.test(error.message)) {
    opening = unclosedFlow(text, pos);
  }
  if (opening === undefined) return undefined;
  const at = lines.linePos(opening.start);
  return {
    line: at.line,
    column: at.col,
    message: `${opening.what} opened here is never closed`,
    hint: `Close ${opening.what} on line ${at.line} (or indent the lines inside it more than its key).`,
  };
}

/** The innermost flow collection opened before `pos` and never closed, from the parser's tokens (walked without
 * recursion). */
function unclosedFlow(text: string, pos: number): { start: number; what: string } | undefined {
  let found: { start: number; what: string } | undefined;
  const stack: unknown[] = [...new Parser().parse(text)];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || typeof node !== 'object') continue;
    if (Array.isArray(node)) {
      stack.push(...node);
      continue;
    }
    const token = node as Partial<CST.FlowCollection>;
    if (
      token.type === 'flow-collection' &&
      token.offset! < pos &&
      !token.end!.some((e) => e.source === ']' || e.source === '}')
    ) {
      if (found === undefined || token.offset! > found.start)
        found = { start: token.offset!, what: token.start!.source === '[' ? 'the [' : 'the {' };
    }
    for (const value of Object.values(node)) if (value !== null && typeof value === 'object') stack.push(value);
  }
  return found;
}

/** The same key twice in one mapping: reported at the second, naming the first. */
function duplicateKey(doc: Document, error: YAMLError, lines: LineCounter): YamlProblem | undefined {
  if (error.code !== 'DUPLICATE_KEY') return undefined;
  let found: { key: string; first: number } | undefined;
  visit(doc, {
    Map(_key, map) {
      const index = map.items.findIndex((pair) => isScalar(pair.key) && pair.key.range?.[0] === error.pos[0]);
      if (index < 0) return;
      const key = map.items[index]!.key as Scalar;
      const earlier = map.items.slice(0, index).find((pair) => isScalar(pair.key) && pair.key.value === key.value);
      if (earlier !== undefined && isScalar(earlier.key) && earlier.key.range)
        found = { key: String(key.value), first: earlier.key.range[0] };
      return visit.BREAK;
    },
  });
  if (found === undefined) return undefined;
  const at = lines.linePos(error.pos[0]);
  const first = lines.linePos(found.first).line;
  return {
    line: at.line,
    column: at.col,
    message: `the key "${found.key.slice(0, 64)}" appears twice in one mapping (first on line ${first})`,
    hint: `Keep one of lines ${first} and ${at.line}: YAML keys must be unique.`,
  };
}

function lineText(text: string, lines: LineCounter, line: number): string {
  const start = lines.lineStarts[line - 1] ?? text.length;
  const end = lines.lineStarts[line] ?? text.length;
  return text.slice(start, end);
}

import { parseTree, type Node } from 'jsonc-parser';
import { describe, expect, it } from 'vitest';
import {
  appendChild,
  appendMember,
  applyAll,
  canonical,
  closeOf,
  commaAfter,
  cutChild,
  detectStyle,
  endOf,
  hasComment,
  isBareEmpty,
  kids,
  lastNamed,
  nestingBeyond,
  nodeValue,
  propertyParts,
  propsNamed,
  removeChildrenEdits,
  render,
  spansLines,
  valueOf,
  type NewChild,
  type Style,
} from '../../src/harness-kit/json-splice.js';

function tree(text: string): Node {
  return parseTree(text, [], { allowTrailingComma: true })!;
}

/** The value node at a path of keys and indices. */
function at(root: Node, ...path: Array<string | number>): Node {
  let node = root;
  for (const step of path) {
    node = typeof step === 'number' ? kids(node)[step]! : valueOf(lastNamed(node, step)!)!;
  }
  return node;
}

const LF: Style = { eol: '\n', unit: '  ', colon: ': ', comma: ', ' };

describe('reading nodes', () => {
  it('endOf, closeOf and kids', () => {
    const text = '{"a": [1, 2], "b": "x"}';
    const root = tree(text);
    expect(endOf(root)).toBe(text.length);
    expect(closeOf(root)).toBe(text.length - 1);
    expect(kids(root)).toHaveLength(2);
    expect(kids(at(root, 'a'))).toHaveLength(2);
    expect(kids(at(root, 'b'))).toEqual([]);
    expect(kids(undefined)).toEqual([]);
    expect(kids({ ...root, children: undefined })).toEqual([]);
    expect(kids(kids(root)[0])).toEqual([]);
  });

  it('propertyParts, propsNamed, lastNamed and valueOf', () => {
    const text = '{"a": 1, "b": 2, "a": 3}';
    const root = tree(text);
    const [first, second, third] = kids(root);
    expect(propertyParts(first!)).toMatchObject({ key: 'a', keyNode: { value: 'a' }, value: { value: 1 } });
    expect(propsNamed(root, 'a')).toEqual([first, third]);
    expect(propsNamed(root, 'c')).toEqual([]);
    expect(lastNamed(root, 'a')).toBe(third);
    expect(lastNamed(undefined, 'a')).toBeUndefined();
    expect(valueOf(second!)?.value).toBe(2);
    // Not an object, or not a property: nothing.
    expect(propsNamed(tree('[{"a": 1}]'), 'a')).toEqual([]);
    expect(propertyParts(kids(tree('[1]'))[0]!)).toBeUndefined();
    // An array holding a string and a value has the children of a property, but is not one.
    expect(propertyParts(tree('["a", 1]'))).toBeUndefined();
    // A property the parser could not finish has no value.
    const broken = parseTree('{"a"}', [])!;
    expect(propertyParts(kids(broken)[0]!)).toBeUndefined();
    expect(valueOf(kids(broken)[0]!)).toBeUndefined();
    expect(propsNamed(broken, 'a')).toEqual([]);
    expect(
      propertyParts({
        type: 'property',
        offset: 0,
        length: 1,
        children: [
          { type: 'number', value: 1, offset: 0, length: 1 },
          { type: 'number', value: 1, offset: 0, length: 1 },
        ],
      }),
    ).toBeUndefined();
  });

  it('spansLines and isBareEmpty', () => {
    const text = '{"a": [\n], "b": [], "c": [ ], "d": [1], "e": [/* c */]}';
    const root = tree(text);
    expect(spansLines(text, root)).toBe(true);
    expect(spansLines(text, at(root, 'b'))).toBe(false);
    expect(spansLines('[1]\n', tree('[1]\n'))).toBe(false);
    expect(['a', 'b', 'c', 'd', 'e'].map((k) => isBareEmpty(text, at(root, k)))).toEqual([
      true,
      true,
      true,
      false,
      false,
    ]);
  });

  it('nodeValue builds plain values, own keys included', () => {
    expect(nodeValue(tree('{"a": [1, "x", null, true, {"b": {}}], "__proto__": 1}'))).toEqual(
      Object.fromEntries([
        ['a', [1, 'x', null, true, { b: {} }]],
        ['__proto__', 1],
      ]),
    );
    expect(Object.hasOwn(nodeValue(tree('{"__proto__": 1}')) as object, '__proto__')).toBe(true);
    expect(nodeValue(parseTree('{"a"}', [])!)).toEqual({ a: null });
    expect(nodeValue({ type: 'object', offset: 0, length: 2 })).toEqual({});
    expect(nodeValue({ type: 'array', offset: 0, length: 2 })).toEqual([]);
    expect(
      nodeValue({ type: 'object', offset: 0, length: 2, children: [{ type: 'property', offset: 1, length: 0 }] }),
    ).toEqual({ undefined: null });
    expect(
      nodeValue({
        type: 'object',
        offset: 0,
        length: 2,
        children: [{ type: 'property', offset: 1, length: 0, children: [] }],
      }),
    ).toEqual({ undefined: null });
  });

  it('canonical drops whitespace and comments but keeps order and spelling', () => {
    const text = '{ "a" : [1.0, /* c */ "x" ], // n\n "b": {"c": null}, "d": [], "e": {} }';
    expect(canonical(text, tree(text))).toBe('{"a":[1.0,"x"],"b":{"c":null},"d":[],"e":{}}');
    expect(canonical('{"a"}', parseTree('{"a"}', [])!)).toBe('{?}');
  });
});

describe('scanning', () => {
  it('nestingBeyond finds the first bracket past the limit, outside strings and comments', () => {
    expect(nestingBeyond('[[{}]]', 2)).toBe(2);
    expect(nestingBeyond('[[{}]]', 3)).toBe(-1);
    expect(nestingBeyond('[{"a": [1]}]', 2)).toBe(7);
    expect(nestingBeyond('[] [[]]', 1)).toBe(4);
    expect(nestingBeyond('"[[[" // [[[\n/* [[ */ [', 0)).toBe(22);
    // Stray closers do not lower the depth below zero.
    expect(nestingBeyond(']]][[', 1)).toBe(4);
    expect(nestingBeyond('}}}{{', 1)).toBe(4);
    expect(nestingBeyond('', 0)).toBe(-1);
  });

  it('commaAfter looks across whitespace and comments only', () => {
    expect(commaAfter('1 /* c */ // d\n , 2', 1)).toBe(16);
    expect(commaAfter('1 ]', 1)).toBe(-1);
    expect(commaAfter('1', 1)).toBe(-1);
  });

  it('hasComment looks in [from, to) only', () => {
    const text = '[1, /* c */ 2] // d';
    expect(hasComment(text, 0, text.length)).toBe(true);
    expect(hasComment(text, 0, 4)).toBe(false);
    expect(hasComment(text, 0, 5)).toBe(true);
    expect(hasComment(text, 11, 14)).toBe(false);
    expect(hasComment(text, 11, 15)).toBe(false);
    expect(hasComment(text, 11, 16)).toBe(true);
    expect(hasComment('[1]', 0, 3)).toBe(false);
  });
});

describe('removeChildrenEdits', () => {
  const remove = (text: string, indices: number[], ...path: Array<string | number>) =>
    applyAll(text, removeChildrenEdits(text, at(tree(text), ...path), new Set(indices)));

  it('removes leading, middle and trailing children with their separators', () => {
    expect(remove('[1, 2, 3]', [0])).toBe('[2, 3]');
    expect(remove('[1, 2, 3]', [1])).toBe('[1, 3]');
    expect(remove('[1, 2, 3]', [2])).toBe('[1, 2]');
    expect(remove('[1, 2, 3]', [1, 2])).toBe('[1]');
    expect(remove('[1, 2, 3]', [0, 2])).toBe('[2]');
    expect(remove('[1, 2, 3]', [0, 1])).toBe('[3]');
    expect(remove('[\n  1,\n  2,\n  3\n]', [2])).toBe('[\n  1,\n  2\n]');
    expect(remove('[\n  1,\n  2,\n  3\n]', [0])).toBe('[\n  2,\n  3\n]');
    expect(remove('{"a": 1, "b": 2}', [1])).toBe('{"a": 1}');
    expect(remove('[1,\t2]', [0])).toBe('[2]');
  });

  it('takes a trailing comma with the last child, where the file allows one', () => {
    expect(remove('[1, 2,]', [1])).toBe('[1]');
    expect(remove('[1, 2, 3,]', [1, 2])).toBe('[1]');
    expect(remove('[1, /* c */ 2,]', [0, 1])).toBe('[ /* c */ ]');
  });

  it('ignores indices that are not children', () => {
    expect(remove('[1, 2]', [-1, 5])).toBe('[1, 2]');
    expect(remove('[1, 2]', [1, 5])).toBe('[1]');
    expect(remove('[1, 2]', [2])).toBe('[1, 2]');
  });

  it('keeps comments next to what stays', () => {
    // A comment before the next sibling is that sibling's.
    expect(remove('[1, // one\n 2, /* two */ 3]', [1])).toBe('[1, // one\n /* two */ 3]');
    expect(remove('[1 /* a */, 2 /* b */, 3]', [2])).toBe('[1 /* a */, 2 /* b */]');
    expect(remove('[1, 2 /* b */ ,3]', [1, 2])).toBe('[1]');
  });

  it('empties a container, keeping comments inside it', () => {
    expect(remove('[1, 2]', [0, 1])).toBe('[]');
    expect(remove('[\n  1\n]', [0])).toBe('[]');
    expect(remove('[ /* c */ 1, 2 ]', [0, 1])).toBe('[ /* c */   ]');
    expect(remove('[1, /* c */ 2]', [0, 1])).toBe('[ /* c */ ]');
    // A comment between a child and its comma trails that child, and goes with it.
    expect(remove('[1 /* c */ , 2]', [0, 1])).toBe('[ ]');
    expect(remove('[1 /* a */, 2]', [0])).toBe('[2]');
  });
});

describe('applyAll', () => {
  it('applies nothing as nothing and edits in any order', () => {
    expect(applyAll('abc', [])).toBe('abc');
    expect(
      applyAll('abc', [
        { offset: 2, length: 1, content: 'Z' },
        { offset: 0, length: 1, content: 'X' },
      ]),
    ).toBe('XbZ');
  });
});

describe('detectStyle', () => {
  it('reads line break, indent unit, colon and comma from the text', () => {
    const pretty = '{\r\n    "a" :  1,\r\n    "b": [1,  2]\r\n}';
    expect(detectStyle(pretty, tree(pretty))).toEqual({ eol: '\r\n', unit: '    ', colon: ' :  ', comma: ',  ' });
    const tabs = '{\n\t"a": {\n\t\t"b": 1\n\t}\n}';
    expect(detectStyle(tabs, tree(tabs))).toEqual({ eol: '\n', unit: '\t', colon: ': ', comma: ', ' });
    const compact = '{"a":1,"b":2}';
    expect(detectStyle(compact, tree(compact))).toEqual({ eol: '\n', unit: '  ', colon: ':', comma: ',' });
    const spaced = '{"a": 1}';
    expect(detectStyle(spaced, tree(spaced))).toEqual({ eol: '\n', unit: '  ', colon: ': ', comma: ', ' });
    const noColon = '{"a":\n1}';
    expect(detectStyle(noColon, tree(noColon)).colon).toBe(': ');
  });

  it('looks past the first nodes for a layout they do not show', () => {
    const text = '{"a": {"b": [\n   1\n  ]}, "c": 1}';
    expect(detectStyle(text, tree(text)).unit).toBe('   ');
    const mixed = '{\n  \t"a": 1}';
    expect(detectStyle(mixed, tree(mixed)).unit).toBe('  ');
    const nested = '[[1,2],\n{\n    "x": 1}]';
    expect(detectStyle(nested, tree(nested))).toEqual({ eol: '\n', unit: '    ', colon: ': ', comma: ',' });
    const inner = '{"a": {"b" :1}, "c": 2}';
    expect(detectStyle(inner, tree(inner)).colon).toBe(': ');
    const broken = parseTree('{"x", "a" : 1}', [])!;
    expect(detectStyle('{"x", "a" : 1}', broken).colon).toBe(' : ');
  });

  it('keeps the first indent, comma and colon it sees, and only a clean one', () => {
    const deeper = '{\n  "a": {\n      "b": 1}}';
    expect(detectStyle(deeper, tree(deeper)).unit).toBe('  ');
    // A line break inside a comment does not put the first child on a line of its own.
    const comment = '{ /*\n   */ "a": 1}';
    expect(detectStyle(comment, tree(comment)).unit).toBe('  ');
    const inner = '[1,\n\t{\n\t   "a": 1}]';
    expect(detectStyle(inner, tree(inner)).unit).toBe('   ');
    const tabs = '{\n\t\t"a": 1}';
    expect(detectStyle(tabs, tree(tabs)).unit).toBe('\t\t');
    expect(detectStyle('[1 ,2]', tree('[1 ,2]')).comma).toBe(', ');
    expect(detectStyle('[[1,  2], [3,4]]', tree('[[1,  2], [3,4]]')).comma).toBe(', ');
    const commented = '{"a" /* c */ : 1}';
    expect(detectStyle(commented, tree(commented)).colon).toBe(': ');
  });

  it('looks at the first 2000 nodes only', () => {
    const arrays = (n: number) => `[${'[0], '.repeat(n)}[\n    0]]`;
    expect(detectStyle(arrays(1998), tree(arrays(1998))).unit).toBe('    ');
    expect(detectStyle(arrays(1999), tree(arrays(1999))).unit).toBe('  ');
  });
});

describe('render', () => {
  it('writes scalars as JSON, and containers inline or one item a line', () => {
    expect(render(null, LF, '', false)).toBe('null');
    expect(render('a"b', LF, '', false)).toBe('"a\\"b"');
    expect(render([], LF, '', false)).toBe('[]');
    expect(render({}, LF, '', false)).toBe('{}');
    const value = { a: [1, { b: true }], c: {} };
    expect(render(value, LF, '', true)).toBe('{"a": [1, {"b": true}], "c": {}}');
    expect(render(value, { ...LF, colon: ':', comma: ',' }, '', true)).toBe('{"a":[1,{"b":true}],"c":{}}');
    expect(render(value, { eol: '\r\n', unit: '\t', colon: ': ', comma: ', ' }, '  ', false)).toBe(
      '{\r\n  \t"a": [\r\n  \t\t1,\r\n  \t\t{\r\n  \t\t\t"b": true\r\n  \t\t}\r\n  \t],\r\n  \t"c": {}\r\n  }',
    );
  });
});

describe('appendChild', () => {
  const child =
    (core: string) =>
    (indent: string, inline: boolean): NewChild => ({
      pre: inline ? '' : `<${indent.length}>`,
      core,
      post: inline ? '' : '!',
    });
  const append = (text: string, inlineFile = false, ...path: Array<string | number>) => {
    const insertion = appendChild(text, at(tree(text), ...path), detectStyle(text, tree(text)), inlineFile, child('X'));
    return {
      text: applyAll(text, insertion.edits),
      before: insertion.before,
      after: insertion.after,
      comma: insertion.comma,
    };
  };

  it('into an empty container', () => {
    expect(append('[]', true)).toEqual({ text: '[X]', before: '', after: '', comma: 'none' });
    expect(append('{"a": []}', false, 'a')).toEqual({
      text: '{"a": [\n  <2>X!\n]}',
      before: '\n  <2>',
      after: '!\n',
      comma: 'none',
    });
    expect(append('{\n  "a": [\n  ]\n}', false, 'a')).toEqual({
      text: '{\n  "a": [\n    <4>X!\n  ]\n}',
      before: '\n    <4>',
      after: '!',
      comma: 'none',
    });
    expect(append('[ // c\n]')).toEqual({ text: '[ // c\n  <2>X!\n]', before: '\n  <2>', after: '!', comma: 'none' });
    // A line break just before the container is not inside it.
    expect(append('{"a":\n[]}', false, 'a')).toEqual({
      text: '{"a":\n[\n  <2>X!\n]}',
      before: '\n  <2>',
      after: '!\n',
      comma: 'none',
    });
  });

  it('asks for a one-line child with no indent', () => {
    for (const [text, inlineFile] of [
      ['[]', true],
      ['[1]', false],
      ['[\n  1\n]', true],
    ] as const) {
      const asked: Array<[string, boolean]> = [];
      appendChild(text, tree(text), LF, inlineFile, (indent, inline) => {
        asked.push([indent, inline]);
        return { pre: '', core: 'X', post: '' };
      });
      expect(asked, text).toEqual([['', true]]);
    }
  });

  it('after the last child of a one-line container', () => {
    expect(append('[1, 2]')).toEqual({ text: '[1, 2, X]', before: ', ', after: '', comma: 'joined' });
    expect(append('{\n"a": [1,2]}', false, 'a')).toEqual({
      text: '{\n"a": [1,2,X]}',
      before: ',',
      after: '',
      comma: 'joined',
    });
    expect(append('[\n  1\n]', true)).toEqual({ text: '[\n  1, X\n]', before: ', ', after: '', comma: 'joined' });
  });

  it('after the last child of a multi-line container, past a comment on its line', () => {
    expect(append('[\n  1\n]')).toEqual({
      text: '[\n  1,\n  <2>X!\n]',
      before: ',\n  <2>',
      after: '!',
      comma: 'joined',
    });
    expect(append('[\n  1 // one\n]')).toEqual({
      text: '[\n  1, // one\n  <2>X!\n]',
      before: '\n  <2>',
      after: '!',
      comma: 'separate',
    });
    expect(append('[\n  1 /* a */ /* b */\n]')).toEqual({
      text: '[\n  1, /* a */ /* b */\n  <2>X!\n]',
      before: '\n  <2>',
      after: '!',
      comma: 'separate',
    });
    expect(append('[\n  1 /* a\n */\n]')).toEqual({
      text: '[\n  1,\n  <2>X! /* a\n */\n]',
      before: ',\n  <2>',
      after: '!',
      comma: 'joined',
    });
    expect(append('[\n  1 /* a */, 2 ]')).toEqual({
      text: '[\n  1 /* a */, 2,\n  <2>X! ]',
      before: ',\n  <2>',
      after: '!',
      comma: 'joined',
    });
  });
});

describe('cutChild', () => {
  const cut = (text: string, index: number, inner = '', ...path: Array<string | number>) =>
    applyAll(text, [cutChild(at(tree(text), ...path), index, inner)]);

  it('takes a child out with the separator on its side', () => {
    expect(cut('[1, 2, 3]', 0)).toBe('[2, 3]');
    expect(cut('[1, 2, 3]', 1)).toBe('[1, 3]');
    expect(cut('[1, 2, 3]', 2)).toBe('[1, 2]');
    expect(cut('{"a": 1,\n "b": 2}', 1)).toBe('{"a": 1}');
  });

  it('leaves `inner` in place of an only child', () => {
    expect(cut('[ 1 ]', 0)).toBe('[]');
    expect(cut('[ 1 ]', 0, '\n ')).toBe('[\n ]');
  });
});

describe('appendMember', () => {
  const add = (text: string, key: string | undefined, value: unknown, ...path: Array<string | number>) => {
    const { edit, inner } = appendMember(text, at(tree(text), ...path), key, value);
    return { text: applyAll(text, [edit]), inner };
  };

  it('follows the separator between the last members', () => {
    expect(add('{"a": 1, "b": 2}', 'c', [3])).toEqual({ text: '{"a": 1, "b": 2, "c": [3]}', inner: undefined });
    expect(add('{"a":1,"b":2}', 'c', { d: 3 })).toEqual({ text: '{"a":1,"b":2,"c":{"d":3}}', inner: undefined });
    expect(add('{ "a":1 }', 'c', 3)).toEqual({ text: '{ "a":1, "c":3 }', inner: undefined });
    expect(add('[1 , 2]', undefined, 3)).toEqual({ text: '[1 , 2, 3]', inner: undefined });
    expect(add('[1]', undefined, { a: 1 })).toEqual({ text: '[1,{"a":1}]', inner: undefined });
    expect(add('{"a" : 1}', 'c', 2)).toEqual({ text: '{"a" : 1,"c": 2}', inner: undefined });
  });

  it('writes one item a line in a multi-line container, at its indent', () => {
    const text = '{\n    "a": 1,\n    "b": 2\n}';
    expect(add(text, 'c', { d: [1] }).text).toBe(
      '{\n    "a": 1,\n    "b": 2,\n    "c": {\n        "d": [\n            1\n        ]\n    }\n}',
    );
    const tabs = '[\r\n\t{"x": 1}\r\n]';
    expect(add(tabs, undefined, { y: 2 }).text).toBe('[\r\n\t{"x": 1},\r\n\t{\r\n\t\t"y": 2\r\n\t}\r\n]');
    // An indent that starts with a tab is a tab.
    expect(add('{\n\t "a": 1\n}', 'c', { d: 1 }).text).toBe('{\n\t "a": 1,\n\t "c": {\n\t \t"d": 1\n\t }\n}');
  });

  it('fills an empty container and reports what it held', () => {
    expect(add('{}', 'a', 1)).toEqual({ text: '{"a":1}', inner: '' });
    expect(add('{"x": 1, "h": { }}', 'a', 1, 'h')).toEqual({ text: '{"x": 1, "h": {"a": 1}}', inner: ' ' });
    expect(add('{\n  "h": {}\n}', 'a', [1], 'h')).toEqual({
      text: '{\n  "h": {\n    "a": [\n      1\n    ]\n  }\n}',
      inner: '',
    });
    expect(add('{\n\t"h": [\n\t]\n}', undefined, 1, 'h')).toEqual({
      text: '{\n\t"h": [\n\t\t1\n\t]\n}',
      inner: '\n\t',
    });
    expect(add('{ }\n', 'a', 1)).toEqual({ text: '{\n  "a": 1\n}\n', inner: ' ' });
    expect(appendMember('{}', { type: 'object', offset: 0, length: 2 }, 'a', 1)).toEqual({
      edit: { offset: 1, length: 0, content: '"a":1' },
      inner: '',
    });
  });

  it('an appended member cuts back out to the exact input', () => {
    for (const [text, key] of [
      ['{"a": 1, "b": 2}', 'c'],
      ['{\n    "a": 1\n}', 'c'],
      ['{ }', 'c'],
      ['{\n}\n', 'c'],
      ['[1,2]', undefined],
    ] as const) {
      const container = tree(text);
      const { edit, inner } = appendMember(text, container, key, { v: [1, 2] });
      const added = applyAll(text, [edit]);
      const grown = tree(added);
      expect(applyAll(added, [cutChild(grown, kids(grown).length - 1, inner ?? '')])).toBe(text);
    }
  });
});

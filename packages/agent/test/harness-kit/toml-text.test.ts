import { describe, expect, it } from 'vitest';
import { TomlError } from 'smol-toml';
import {
  parseTomlOr,
  pathStartsWith,
  samePath,
  scanToml,
  statementAt,
  TomlScanError,
  tomlString,
  type TomlRejection,
} from '../../src/harness-kit/toml-text.js';

/** Each section as text slices, so a test reads what the scanner located rather than raw offsets. */
function layout(text: string) {
  return scanToml(text).map((s) => ({
    path: s.path,
    array: s.array,
    header: text.slice(s.start, s.headerEnd),
    body: text.slice(s.headerEnd, s.contentEnd),
    entries: s.entries.map((e) => [
      e.key,
      text.slice(e.start, e.valueStart),
      text.slice(e.valueStart, e.valueEnd),
      text.slice(e.valueEnd, e.lineEnd),
    ]),
  }));
}

function scanFailure(text: string): [string, number] {
  try {
    scanToml(text);
  } catch (error) {
    expect(error).toBeInstanceOf(TomlScanError);
    return [(error as TomlScanError).message, (error as TomlScanError).offset];
  }
  throw new Error(`expected a TomlScanError for ${JSON.stringify(text)}`);
}

describe('parseTomlOr', () => {
  it('returns the parsed document, with the options given', () => {
    expect(parseTomlOr('a = 1\n', () => new Error('no'))).toEqual({ a: 1 });
    expect(parseTomlOr('a = 1\n', () => new Error('no'), { integersAsBigInt: true })).toEqual({ a: 1n });
  });

  it('hands the first line of the reason, without the prefix, and the position to `reject`', () => {
    let seen: TomlRejection | undefined;
    const made = new Error('made');
    expect(() =>
      parseTomlOr('a = 1\nb = \n', (rejection) => {
        seen = rejection;
        return made;
      }),
    ).toThrow(made);
    expect(seen?.reason).toBe('invalid value');
    expect(seen?.at).toEqual({ line: 2, column: 5 });
    expect(seen?.error).toBeInstanceOf(TomlError);
  });

  it('a failure that is not a TomlError has no position', () => {
    let seen: TomlRejection | undefined;
    const deep = `a = ${'['.repeat(200_000)}${']'.repeat(200_000)}`;
    expect(() =>
      parseTomlOr(
        deep,
        (rejection) => {
          seen = rejection;
          return new Error('made');
        },
        { maxDepth: Number.POSITIVE_INFINITY },
      ),
    ).toThrow('made');
    expect(seen?.at).toBeUndefined();
    expect(seen?.error).toBeInstanceOf(RangeError);
    expect(seen?.reason).toMatch(/call stack/i);
  });
});

describe('tomlString', () => {
  it('escapes what a basic string cannot hold, in the hex case asked for', () => {
    expect(tomlString('"\\\n\t\r\b\f')).toBe('"\\"\\\\\\n\\t\\r\\b\\f"');
    expect(tomlString('\u0000\u001f\u007f')).toBe('"\\u0000\\u001f\\u007f"');
    expect(tomlString('\u001b\u007f', 'lower')).toBe('"\\u001b\\u007f"');
    expect(tomlString('\u001b\u007f', 'upper')).toBe('"\\u001B\\u007F"');
    expect(tomlString(" ~é😀'\u0080")).toBe(`" ~é😀'\u0080"`);
    expect(tomlString('')).toBe('""');
  });
});

describe('scanToml', () => {
  it('locates the root entries, each header and each key/value line', () => {
    const text = 'a = 1\n\n# note\n[t] # c\nb = "x" # y\n  c.d = [1, 2]\n[[arr]]\n\n';
    expect(layout(text)).toEqual([
      { path: null, array: false, header: '', body: 'a = 1\n', entries: [[['a'], 'a = ', '1', '\n']] },
      {
        path: ['t'],
        array: false,
        header: '[t] # c\n',
        body: 'b = "x" # y\n  c.d = [1, 2]\n',
        entries: [
          [['b'], 'b = ', '"x"', ' # y\n'],
          [['c', 'd'], '  c.d = ', '[1, 2]', '\n'],
        ],
      },
      { path: ['arr'], array: true, header: '[[arr]]\n', body: '', entries: [] },
    ]);
  });

  it('handles CRLF, a missing final line break and a byte-order mark', () => {
    expect(layout('\uFEFFa = 1\r\n[t]\r\nb = 2')).toEqual([
      { path: null, array: false, header: '', body: '\uFEFFa = 1\r\n', entries: [[['a'], 'a = ', '1', '\r\n']] },
      { path: ['t'], array: false, header: '[t]\r\n', body: 'b = 2', entries: [[['b'], 'b = ', '2', '']] },
    ]);
    expect(layout('\r\n\t\r\n[t]')).toEqual([
      { path: null, array: false, header: '', body: '', entries: [] },
      { path: ['t'], array: false, header: '[t]', body: '', entries: [] },
    ]);
    expect(layout('# c')).toEqual([{ path: null, array: false, header: '', body: '', entries: [] }]);
    expect(layout('')).toEqual([{ path: null, array: false, header: '', body: '', entries: [] }]);
  });

  it('decodes quoted and dotted keys and spaced headers', () => {
    const text = [
      `"a\\u0041\\U0001F600\\x41\\e\\n\\"" = 1`,
      `'lit\\eral' = 2`,
      `x . "y.z" . 'w' = 3`,
      `[ a . "b" ]`,
      `[[ "q" . r ]] # c`,
      `"" = 4`,
      '',
    ].join('\n');
    const sections = scanToml(text);
    expect(sections[0]!.entries.map((e) => e.key)).toEqual([['aA😀A\u001b\n"'], ['lit\\eral'], ['x', 'y.z', 'w']]);
    expect(sections.slice(1).map((s) => [s.path, s.array])).toEqual([
      [['a', 'b'], false],
      [['q', 'r'], true],
    ]);
    expect(sections[2]!.entries.map((e) => e.key)).toEqual([['']]);
    // Every short escape, and the highest code point a \U escape may name.
    expect(scanToml('"\\b\\t\\f\\r\\\\" = 1\n"\\U0010FFFF" = 2\n')[0]!.entries.map((e) => e.key)).toEqual([
      ['\b\t\f\r\\'],
      ['\u{10FFFF}'],
    ]);
  });

  it('gives offsets that end at the end of the text, not past it', () => {
    const text = 'a = 1 # c\n[t] # c';
    const [root, table] = scanToml(text);
    expect(root!.entries[0]!.lineEnd).toBe(10);
    expect([table!.headerEnd, table!.contentEnd]).toEqual([text.length, text.length]);
    const last = scanToml('a = 1 # c')[0]!;
    expect([last.entries[0]!.lineEnd, last.contentEnd]).toEqual([9, 9]);
  });

  it('skips over every kind of value, whatever it holds', () => {
    const values = [
      '"a#b\\"c"',
      "'a#b\"c'",
      '"""x\n[fake]\n" "" \\""""',
      '"""a""""',
      '"""a"""""',
      "'''x\n'a'' '''",
      "'''a''''",
      // A backslash escapes a quote in a basic string, not in a literal one.
      '"""a\\""" b"""',
      "'''a\\'''",
      '[\n  1, # one ] }\n  "]", \'[\', [2],\n]',
      '{ b = "}", c = [3], d = { e = 1 } }',
      '1979-05-27 07:32:00Z',
      '+inf',
      '0x1F',
      'true',
    ];
    for (const value of values) {
      const text = `k = ${value} # trailing\nnext = 1\n`;
      expect(layout(text)[0]!.entries).toEqual([
        [['k'], 'k = ', value, ' # trailing\n'],
        [['next'], 'next = ', '1', '\n'],
      ]);
    }
    expect(layout('k = 1 \t\r\n')[0]!.entries).toEqual([[['k'], 'k = ', '1', ' \t\r\n']]);
    expect(layout('k =\t1')[0]!.entries).toEqual([[['k'], 'k =\t', '1', '']]);
  });

  it('reports text it does not follow, and where', () => {
    expect(scanFailure('a = "x" b')).toEqual(['unexpected text after a value', 8]);
    expect(scanFailure('a = 1\r')).toEqual(['unexpected text after a value', 5]);
    expect(scanFailure('a = "x\n"')).toEqual(['unterminated string', 6]);
    expect(scanFailure('a = "x')).toEqual(['unterminated string', 4]);
    expect(scanFailure('a = "\\q"')).toEqual(['invalid escape', 5]);
    expect(scanFailure('a = "\\u12"')).toEqual(['invalid escape', 5]);
    expect(scanFailure('a = "\\u12G4"')).toEqual(['invalid escape', 5]);
    expect(scanFailure('a = "\\u12')).toEqual(['invalid escape', 5]);
    expect(scanFailure('a = "\\UFFFFFFFF"')).toEqual(['invalid escape', 5]);
    expect(scanFailure('a = "\\')).toEqual(['invalid escape', 5]);
    expect(scanFailure('a = "\\q41"')).toEqual(['invalid escape', 5]);
    expect(scanFailure('a = "\\U00110000"')).toEqual(['invalid escape', 5]);
    expect(scanFailure("'a = 1")).toEqual(['unterminated key', 0]);
    expect(scanFailure("'a\n' = 1")).toEqual(['unterminated key', 0]);
    expect(scanFailure('= 1')).toEqual(['expected a key', 0]);
    expect(scanFailure('a. = 1')).toEqual(['expected a key', 3]);
    expect(scanFailure('a = """x')).toEqual(['unterminated multi-line string', 4]);
    expect(scanFailure("a = '''x")).toEqual(['unterminated multi-line string', 4]);
    expect(scanFailure("a = 'x")).toEqual(['unterminated string', 4]);
    expect(scanFailure('a = ')).toEqual(['expected a value', 4]);
    expect(scanFailure('a = # c')).toEqual(['expected a value', 4]);
    expect(scanFailure('a = [1')).toEqual(['unterminated array or inline table', 4]);
    expect(scanFailure('a = {')).toEqual(['unterminated array or inline table', 4]);
    expect(scanFailure('a = [1 # c')).toEqual(['unterminated array or inline table', 4]);
    expect(scanFailure('a = \r\n')).toEqual(['expected a value', 4]);
    // At most two quotes may precede the closing delimiter.
    expect(scanFailure('a = """x""""""')).toEqual(['unexpected text after a value', 13]);
    expect(scanFailure("a = '''x''''''")).toEqual(['unexpected text after a value', 13]);
    expect(scanFailure('[a')).toEqual(['malformed table header', 2]);
    expect(scanFailure('[[a]')).toEqual(['malformed table header', 3]);
    expect(scanFailure('[a] x')).toEqual(['unexpected text after a value', 4]);
    expect(scanFailure('a 1')).toEqual(['expected "=" after a key', 2]);
    expect(scanFailure('a')).toEqual(['expected "=" after a key', 1]);
    expect(scanFailure('a\n')).toEqual(['expected "=" after a key', 1]);
    expect(scanFailure('\rx')).toEqual(['expected a key', 0]);
  });
});

describe('statementAt, samePath, pathStartsWith', () => {
  it('finds where a statement begins on its line', () => {
    expect(statementAt(' \t[a]', 0)).toBe(2);
    expect(statementAt('x\n  a = 1', 2)).toBe(4);
    expect(statementAt('   ', 0)).toBe(3);
    expect(statementAt('a\n', 1)).toBe(1);
  });

  it('compares paths exactly, or by prefix', () => {
    expect(samePath(['a', 'b'], ['a', 'b'])).toBe(true);
    expect(samePath(['a', 'b'], ['a', 'c'])).toBe(false);
    expect(samePath(['a'], ['a', 'b'])).toBe(false);
    expect(samePath(['a', 'b'], ['a'])).toBe(false);
    expect(samePath(null, [])).toBe(false);
    expect(samePath([], [])).toBe(true);
    expect(pathStartsWith(['a', 'b'], ['a'])).toBe(true);
    expect(pathStartsWith(['a'], ['a'])).toBe(true);
    expect(pathStartsWith(['a'], ['a', 'b'])).toBe(false);
    expect(pathStartsWith(['b', 'a'], ['a'])).toBe(false);
    expect(pathStartsWith(['a', 'c'], ['a', 'b'])).toBe(false);
    expect(pathStartsWith(null, [])).toBe(false);
    expect(pathStartsWith([], [])).toBe(true);
  });
});

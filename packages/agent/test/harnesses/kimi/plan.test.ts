import { describe, expect, it } from 'vitest';
import { planKimiHook } from '../../../src/harnesses/kimi/plan.js';
import { buildManagedHook } from '../../../src/harness-kit/signature.js';
import type { HookPlan, ManagedHook, OwnershipRecord } from '../../../src/harnesses/types.js';
import { thrown } from '../../../../../test/support/errors.js';

const FILE = '/home/me/.kimi/config.toml';
const desired = buildManagedHook(
  { node: '/usr/local/bin/node', entry: '/opt/blue agent/bin/blue-agent.js' },
  'kimi',
  'kimi-v1_28_0',
  'SessionEnd',
  5,
);
const C = desired.command;
const lines = (timeout: number | string = 5) => [
  '[[hooks]] # managed by blue-agent',
  'event = "SessionEnd"',
  'matcher = ""',
  `command = "${C}"`,
  `timeout = ${timeout}`,
];
/** The managed table as the planner writes it, with a final line break. */
const T = `${lines().join('\n')}\n`;
const USER = '[[hooks]]\nevent = "Stop"\ncommand = "x"\n';

function plan(text: string | null, hook: ManagedHook | null = desired, owned?: OwnershipRecord): HookPlan {
  return planKimiHook({ text, file: FILE, desired: hook, owned });
}

describe('kimi planner: appending', () => {
  it('puts one blank line before the table, none when there is one, and no final break when the file had none', () => {
    expect(plan('')).toStrictEqual({ text: T, owned: { separator: '' }, managedFound: 0 });
    expect(plan('  \n')).toStrictEqual({ text: `  \n${T}`, owned: { separator: '' }, managedFound: 0 });
    expect(plan('  ')).toStrictEqual({
      text: `  \n\n${T.slice(0, -1)}`,
      owned: { separator: '\n\n' },
      managedFound: 0,
    });
    expect(plan('a = 1')).toStrictEqual({
      text: `a = 1\n\n${T.slice(0, -1)}`,
      owned: { separator: '\n\n' },
      managedFound: 0,
    });
    expect(plan('a = 1\n')).toStrictEqual({ text: `a = 1\n\n${T}`, owned: { separator: '\n' }, managedFound: 0 });
    expect(plan('a = 1\n\n')).toStrictEqual({ text: `a = 1\n\n${T}`, owned: { separator: '' }, managedFound: 0 });
    expect(plan('a = 1\n \t\n')).toStrictEqual({ text: `a = 1\n \t\n${T}`, owned: { separator: '' }, managedFound: 0 });
    expect(plan('a = 1\r\n')).toStrictEqual({
      text: `a = 1\r\n\r\n${T.replaceAll('\n', '\r\n')}`,
      owned: { separator: '\r\n' },
      managedFound: 0,
    });
  });

  it('writes Kimi’s default timeout for one that is not a number, and rounds up', () => {
    for (const timeoutSeconds of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      expect(plan('', { ...desired, timeoutSeconds }).text).toBe(`${lines(30).join('\n')}\n`);
    }
    expect(plan('', { ...desired, timeoutSeconds: 4.01 }).text).toBe(`${lines(5).join('\n')}\n`);
    expect(plan('', { ...desired, timeoutSeconds: -3 }).text).toBe(`${lines(1).join('\n')}\n`);
    expect(plan('', { ...desired, timeoutSeconds: 600.5 }).text).toBe(`${lines(600).join('\n')}\n`);
  });

  it('appends next to user tables, sub-tables and a hooks key inside another table', () => {
    const withSub = `${USER}[hooks.env]\nA = "1"\n`;
    expect(plan(withSub).text).toBe(`${withSub}\n${T}`);
    const dotted = 'a = 1\n[other]\nhooks.x = 1\n';
    expect(plan(dotted).text).toBe(`${dotted}\n${T}`);
  });
});

describe('kimi planner: the table already there', () => {
  it('is up to date without a timeout when the default is wanted, and without a matcher', () => {
    const noTimeout = T.replace('timeout = 5\n', '');
    expect(plan(noTimeout, { ...desired, timeoutSeconds: 30 })).toStrictEqual({
      text: noTimeout,
      owned: {},
      managedFound: 1,
    });
    expect(plan(noTimeout).text).toBe(T);
    const noMatcher = T.replace('matcher = ""\n', '');
    expect(plan(noMatcher)).toStrictEqual({ text: noMatcher, owned: {}, managedFound: 1 });
  });

  it('rewrites a timeout that only looks right', () => {
    expect(plan(T.replace('timeout = 5', 'timeout = 99999999999999999999')).text).toBe(T);
    expect(plan(T.replace('timeout = 5', 'timeout = 6')).text).toBe(T);
  });

  it('keeps the record as it was, minus a separator the cut of a duplicate used', () => {
    const record = { created_file: true, separator: '\n', replaced: { text: 'hooks = []\n', offset: 0 } };
    expect(plan(T, desired, record)).toStrictEqual({ text: T, owned: record, managedFound: 1 });
    expect(plan(`a = 1\n\n${T}\n${T}`, desired, { separator: '\n' })).toStrictEqual({
      text: `a = 1\n\n${T}`,
      owned: {},
      managedFound: 2,
    });
    expect(plan(`${T}\n${USER}\n${T}`, desired, { separator: 'x' })).toStrictEqual({
      text: `${T}\n${USER}`,
      owned: {},
      managedFound: 2,
    });
    expect(plan(T, desired, { created_file: 'yes', separator: 'x', other: 1 })).toStrictEqual({
      text: T,
      owned: {},
      managedFound: 1,
    });
  });

  it('rewrites a stale table that ended the file without a final line break, still without one', () => {
    const stale = `a = 1\n\n${lines(9).join('\n')}`;
    expect(plan(stale).text).toBe(`a = 1\n\n${lines(5).join('\n')}`);
  });

  it('knows its table by the command on any event (a copy `kimi migrate` made), and repairs it in place', () => {
    const other = T.replace('"SessionEnd"', '"Stop"');
    expect(plan(other)).toStrictEqual({ text: T, owned: {}, managedFound: 1 });
    expect(plan(other, null)).toStrictEqual({ text: '', owned: undefined, managedFound: 1 });
  });

  it('leaves an inline array of user hooks, and an empty one, to the user', () => {
    const inline = 'hooks = [{ event = "Stop", command = "x" }]\n';
    expect(plan(inline, null)).toStrictEqual({ text: inline, owned: undefined, managedFound: 0 });
    expect(plan('[hooks]\nx = 1\n', null)).toStrictEqual({
      text: '[hooks]\nx = 1\n',
      owned: undefined,
      managedFound: 0,
    });
    expect(plan('hooks = []\n', null)).toStrictEqual({ text: 'hooks = []\n', owned: undefined, managedFound: 0 });
  });

  it('refuses hooks written as a plain table under its first statement', () => {
    const error = thrown(() => plan('a = 1\n[hooks.x]\ny = 1\n'));
    expect([error.code, error.line, error.column]).toEqual(['NATIVE_CONFIG_CONFLICT', 2, 1]);
    expect(error.hint).toContain('[[hooks]]');
    const dotted = thrown(() => plan('a = 1\n  hooks.x = 1\n'));
    expect([dotted.line, dotted.column]).toEqual([2, 3]);
  });
});

describe('kimi planner: removal', () => {
  it('cuts a table it found without leaving a double blank line', () => {
    expect(plan(`a = 1\n\n${T}\n[b]\nc = 2\n`, null)).toStrictEqual({
      text: 'a = 1\n\n[b]\nc = 2\n',
      owned: undefined,
      managedFound: 1,
    });
    expect(plan(`${T}\n[b]\nc = 2\n`, null).text).toBe('[b]\nc = 2\n');
    expect(plan(`${T}\r\n[b]\r\n`, null).text).toBe('[b]\r\n');
    expect(plan(`a = 1\n\n${T}`, null).text).toBe('a = 1\n');
    expect(plan(`a = 1\r\n\r\n${T.replaceAll('\n', '\r\n')}`, null).text).toBe('a = 1\r\n');
    expect(plan(`${T}\n${USER}\n${T}`, null)).toStrictEqual({ text: USER, owned: undefined, managedFound: 2 });
    expect(plan(`${T}[hooks.env]\nA = "1"\n\n${USER}`, null).text).toBe(USER);
  });

  it('takes the recorded separator back only as recorded', () => {
    expect(plan(`a = 1\n\n${T}`, null, { separator: '\n' }).text).toBe('a = 1\n');
    expect(plan(`a = 1\n${T}`, null, { separator: '\n' }).text).toBe('a = 1');
    expect(plan(`a = 1\n${T}`, null, { separator: 'x\n' }).text).toBe('a = 1\n');
    expect(plan(`a = 1\n${T}`, null, { separator: 5 }).text).toBe('a = 1\n');
    expect(plan(`a = 1\n${T}`, null, { separator: '\r\n' }).text).toBe('a = 1\n');
  });

  it('deletes the file only when the record says the agent created it', () => {
    expect(plan(T, null, { created_file: true })).toStrictEqual({ text: null, owned: undefined, managedFound: 1 });
    expect(plan(T, null, { created_file: 'yes' })).toStrictEqual({ text: '', owned: undefined, managedFound: 1 });
    expect(plan(`a = 1\n${T}`, null, { created_file: true }).text).toBe('a = 1\n');
  });
});

describe('kimi planner: putting back the `hooks = []` it replaced', () => {
  const replaced = (text: unknown, offset: unknown) => ({ replaced: { text, offset } });

  it('at the recorded line start in the top-level table, with a line break when needed', () => {
    expect(plan(`y = 1\n${T}`, null, replaced('hooks = []\n', 0)).text).toBe('hooks = []\ny = 1\n');
    expect(plan(`y = 1\n${T}`, null, replaced('"hooks" = []\n', 0)).text).toBe('"hooks" = []\ny = 1\n');
    expect(plan(`y = 1\nz = 2\n${T}`, null, replaced('hooks = []', 6)).text).toBe('y = 1\nhooks = []\nz = 2\n');
    expect(plan(`y = 1\n${T}`, null, replaced('hooks = []', 6)).text).toBe('y = 1\nhooks = []');
    expect(plan(`y = 1\r\n${T.replaceAll('\n', '\r\n')}`, null, replaced('hooks = []', 0)).text).toBe(
      'hooks = []\r\ny = 1\r\n',
    );
    expect(plan(`[t]\nx = 1\n${T}`, null, replaced('hooks = []\n', 0)).text).toBe('hooks = []\n[t]\nx = 1\n');
  });

  it('not at all when that place moved, is inside a table, or hooks are defined again', () => {
    expect(plan(`y = 1\nz = 2\n${T}`, null, replaced('hooks = []\n', 7)).text).toBe('y = 1\nz = 2\n');
    expect(plan(`y = 1\n${T}`, null, replaced('hooks = []\n', 7)).text).toBe('y = 1\n');
    expect(plan(`[t]\nx = 1\n${T}`, null, replaced('hooks = []\n', 8)).text).toBe('[t]\nx = 1\n');
    expect(plan(`${USER}${T}`, null, replaced('hooks = []\n', 0)).text).toBe(USER);
  });

  it('only a record that holds one whole empty `hooks` statement of at most 1024 characters', () => {
    const longest = `hooks = []${' '.repeat(1013)}\n`;
    expect(longest).toHaveLength(1024);
    expect(plan(`y = 1\n${T}`, null, replaced(longest, 0)).text).toBe(`${longest}y = 1\n`);
    for (const [text, offset] of [
      [` ${longest}`, 0],
      ['# x\nhooks = []\n', 0],
      ['hooks = [1]\n', 0],
      ['hooks = {}\n', 0],
      ['hooks = []\nx = 1\n', 0],
      ['other = []\n', 0],
      ['hooks = [\n', 0],
      ['x.hooks = []\n', 0],
      [5, 0],
      ['hooks = []\n', -1],
      ['hooks = []\n', 0.5],
      ['hooks = []\n', '0'],
    ] as const) {
      expect(plan(`y = 1\n${T}`, null, replaced(text, offset)).text).toBe('y = 1\n');
    }
    expect(plan(`y = 1\n${T}`, null, { replaced: null }).text).toBe('y = 1\n');
    expect(plan(`y = 1\n${T}`, null, { replaced: 'hooks = []' }).text).toBe('y = 1\n');
  });

  it('records the replaced statement and its offset when the table takes its place', () => {
    expect(plan('a = 1\n  hooks = [ ] # k\nb = 2\n')).toStrictEqual({
      text: `a = 1\nb = 2\n\n${T}`,
      owned: { separator: '\n', replaced: { text: '  hooks = [ ] # k\n', offset: 6 } },
      managedFound: 0,
    });
    expect(plan('hooks = []', desired, { created_file: true }).owned).toStrictEqual({
      created_file: true,
      separator: '',
      replaced: { text: 'hooks = []', offset: 0 },
    });
  });
});

describe('kimi planner: edge by edge', () => {
  const crlf = (text: string) => text.replaceAll('\n', '\r\n');
  const replaced = (text: unknown, offset: unknown) => ({ replaced: { text, offset } });

  it('keeps only a record it understands when the table stays', () => {
    for (const owned of [
      { separator: ['\n'] },
      replaced('hooks = []\n', -1),
      replaced('hooks = []\nx = 1\n', 0),
      replaced('hooks = [1]\n', 0),
      replaced('hooks = {}\n', 0),
      replaced('other = []\n', 0),
      replaced('hooks = [\n', 0),
    ]) {
      expect(plan(T, desired, owned)).toStrictEqual({ text: T, owned: {}, managedFound: 1 });
    }
  });

  it('with nothing managed in the file, puts nothing back and deletes nothing, whatever the record says', () => {
    expect(plan('y = 1\n', null, { ...replaced('hooks = []\n', 0), created_file: true })).toStrictEqual({
      text: 'y = 1\n',
      owned: undefined,
      managedFound: 0,
    });
    expect(plan('', null, { created_file: true })).toStrictEqual({ text: '', owned: undefined, managedFound: 0 });
  });

  it('leaves an inline array of values that are not tables to the user', () => {
    expect(plan('hooks = [1, "x"]\n', null)).toStrictEqual({
      text: 'hooks = [1, "x"]\n',
      owned: undefined,
      managedFound: 0,
    });
  });

  it('treats a SessionEnd table whose command is not a string as the user’s', () => {
    const odd = '[[hooks]]\nevent = "SessionEnd"\ncommand = 5\n';
    expect(plan(odd, null)).toStrictEqual({ text: odd, owned: undefined, managedFound: 0 });
    expect(plan(odd).text).toBe(`${odd}\n${T}`);
  });

  it('appends next to arrays of other tables', () => {
    expect(plan('[[other]]\nx = 1\n').text).toBe(`[[other]]\nx = 1\n\n${T}`);
  });

  it('rewrites a table whose command or matcher alone is stale', () => {
    const older = buildManagedHook(
      { node: '/usr/local/bin/node', entry: '/opt/blue agent/bin/blue-agent.js' },
      'kimi',
      'kimi-v1_20_0',
      'SessionEnd',
      5,
    );
    expect(plan(T.replace(C, older.command)).text).toBe(T);
    expect(plan(T.replace('matcher = ""', 'matcher = "x"')).text).toBe(T);
  });

  it(
    'rewrites a stale table before more text that has no final line break, and shifts the cut of duplicates after ' +
      'it',
    () => {
      expect(plan(`${lines(9).join('\n')}\n[b]\nc = 2`).text).toBe(`${T}[b]\nc = 2`);
      expect(plan(`${lines(600).join('\n')}\n\n${T}\n[b]\nc = 2\n`).text).toBe(`${T}\n[b]\nc = 2\n`);
      expect(plan(`${lines(1).join('\n')}\n\n${T}\n[b]\nc = 2\n`).text).toBe(`${T}\n[b]\nc = 2\n`);
    },
  );

  it('cuts a table followed directly by the next statement', () => {
    expect(plan(`a = 1\n\n${T}[b]\nc = 2\n`, null).text).toBe('a = 1\n\n[b]\nc = 2\n');
    expect(plan(crlf(`a = 1\n\n${T}[b]\nc = 2\n`), null).text).toBe(crlf('a = 1\n\n[b]\nc = 2\n'));
  });

  it('gives back the line break the table had taken when text was appended right after it', () => {
    expect(plan(`a = 1\n\n${T}[b]\nc = 2\n`, null, { separator: '\n\n' }).text).toBe('a = 1\n[b]\nc = 2\n');
    expect(plan(crlf(`a = 1\n\n${T}[b]\nc = 2\n`), null, { separator: '\r\n\r\n' }).text).toBe(
      crlf('a = 1\n[b]\nc = 2\n'),
    );
  });

  it('takes the recorded separator once, for the last table that has it', () => {
    expect(plan(`a = 1\n\n${T}\n\n${T}`, null, { separator: '\n\n' }).text).toBe('a = 1\n');
  });

  it('puts the `hooks = []` line back only where the file reads the same with it', () => {
    // Inside a multi-line string, inside a multi-line array, at the end of a comment line: left out.
    expect(plan(`a = """\nx\n"""\n${T}`, null, replaced('hooks = []\n', 8)).text).toBe('a = """\nx\n"""\n');
    expect(plan(`a = [\n1,\n]\n${T}`, null, replaced('hooks = []\n', 6)).text).toBe('a = [\n1,\n]\n');
    expect(plan(`y = 1 # c\n${T}`, null, replaced('hooks = []\n', 9)).text).toBe('y = 1 # c\n');
    expect(plan(`y = 1\n${T}`, null, replaced('hooks = []\n', 99)).text).toBe('y = 1\n');
  });

  it('names what is wrong in its errors', () => {
    expect(thrown(() => plan('a = ')).message).toContain('Kimi config is not valid TOML: ');
    expect(thrown(() => plan('hooks = [1]\n')).message).toContain('is not written as [[hooks]] tables');
  });

  it('points at the header that makes hooks a plain table, not at a hooks key inside another table', () => {
    const error = thrown(() => plan('[other]\nhooks.x = 1\n[hooks]\ny = 1\n'));
    expect([error.code, error.line, error.column]).toEqual(['NATIVE_CONFIG_CONFLICT', 3, 1]);
  });
});

import { describe, expect, it } from 'vitest';
import { parseJsonText, planJson } from '../../../src/harnesses/codex/plan-json.js';
import { buildManagedHook } from '../../../src/harness-kit/signature.js';
import type { HookPlan, ManagedHook, OwnershipRecord } from '../../../src/harnesses/types.js';
import { thrown } from '../../../../../test/support/errors.js';

const FILE = '/home/me/.codex/hooks.json';
const SELF = { node: '/usr/bin/node', entry: '/opt/blue-agent/bin/blue-agent.js' };
const desired = buildManagedHook(SELF, 'codex', 'codex-v0_145_0', 'SessionEnd', 3);
const C = JSON.stringify(desired.command);
// A managed command an earlier install wrote (another Node.js, another path, an older profile).
const OLD = JSON.stringify(
  `'/usr/local/bin/node' '/opt/old/blue-agent/bin/blue-agent.js' capture --harness codex --profile codex-v0_140_0`,
);
const RIGHT = `{"type": "command", "command": ${C}, "timeout": 3}`;
const STALE = `{"type": "command", "command": ${OLD}, "timeout": 3}`;
const USER = `{"type": "command", "command": "echo user"}`;

function plan(text: string | null, hook: ManagedHook | null = desired, owned?: OwnershipRecord): HookPlan {
  return planJson({ text, file: FILE, desired: hook, owned });
}

/** `{"hooks": {"SessionEnd": [<groups>]}}`, each group given as its handlers. */
function doc(...groups: string[][]): string {
  return `{"hooks": {"SessionEnd": [${groups.map((g) => `{"hooks": [${g.join(', ')}]}`).join(', ')}]}}`;
}

const PRETTY =
  JSON.stringify(
    { hooks: { SessionEnd: [{ hooks: [{ type: 'command', command: desired.command, timeout: 3 }] }] } },
    null,
    2,
  ) + '\n';

describe('parseJsonText', () => {
  it('reads blank text as an empty document', () => {
    expect(parseJsonText(' \n\t', FILE)).toEqual({ root: undefined, value: {} });
  });

  it('reports a syntax error with its position', () => {
    const error = thrown(() => parseJsonText('{"a": 1,}', FILE));
    expect(error.code).toBe('NATIVE_CONFIG_PARSE');
    expect([error.line, error.column]).toEqual([1, 9]);
    expect(error.message).toContain('invalid JSON: PropertyNameExpected');
    expect(error.hint).toContain('strict JSON');
  });

  it('reports nesting too deep to parse as a parse error, not a crash', () => {
    const error = thrown(() => parseJsonText('['.repeat(200_000), FILE));
    expect(error.code).toBe('NATIVE_CONFIG_PARSE');
    expect(error.line).toBeUndefined();
    expect(error.message).toMatch(/invalid JSON: .*call stack/i);
    expect(error.hint).toContain('strict JSON');
  });

  it('refuses a document that is not an object, pointing at it', () => {
    for (const text of ['[]', '\n  "x"']) {
      const error = thrown(() => parseJsonText(text, FILE));
      expect(error.code).toBe('NATIVE_CONFIG_CONFLICT');
      expect(error.message).toContain('hooks.json must hold a JSON object');
      expect(error.hint).toContain('"hooks" key');
    }
    expect(thrown(() => parseJsonText('\n  "x"', FILE)).line).toBe(2);
  });
});

describe('planJson: inserting', () => {
  it('leaves a missing file missing when nothing is wanted', () => {
    expect(plan(null, null)).toStrictEqual({ text: null, owned: undefined, managedFound: 0 });
  });

  it('creates a missing or blank file as a whole document, remembering a blank one', () => {
    expect(plan(null)).toStrictEqual({
      text: PRETTY,
      owned: { format: 'json', created: true, container: 'root', event: 'SessionEnd', inner: '' },
      managedFound: 0,
    });
    expect(plan('  \n')).toStrictEqual({
      text: PRETTY,
      owned: {
        format: 'json',
        created: false,
        container: 'root',
        event: 'SessionEnd',
        inner: '',
        emptyOriginal: '  \n',
      },
      managedFound: 0,
    });
    expect(
      plan(PRETTY, null, { format: 'json', created: true, container: 'root', event: 'SessionEnd', inner: '' }),
    ).toStrictEqual({ text: null, owned: undefined, managedFound: 1 });
    expect(
      plan(PRETTY, null, {
        format: 'json',
        created: false,
        container: 'root',
        event: 'SessionEnd',
        inner: '',
        emptyOriginal: '  \n',
      }),
    ).toStrictEqual({
      text: '  \n',
      owned: undefined,
      managedFound: 1,
    });
  });

  it('appends the hooks key, the event key or a group, recording which', () => {
    const hook = `{"hooks":[{"type":"command","command":${C},"timeout":3}]}`;
    expect(plan('{}')).toStrictEqual({
      text: `{"hooks":{"SessionEnd":[${hook}]}}`,
      owned: { format: 'json', created: false, container: 'root', event: 'SessionEnd', inner: '' },
      managedFound: 0,
    });
    expect(plan('{ "a": 1, "b": 2 }')).toStrictEqual({
      text: `{ "a": 1, "b": 2, "hooks": {"SessionEnd":[${hook}]} }`,
      owned: { format: 'json', created: false, container: 'root', event: 'SessionEnd' },
      managedFound: 0,
    });
    expect(plan('{"hooks": { }}')).toStrictEqual({
      text: `{"hooks": {"SessionEnd": [${hook}]}}`,
      owned: { format: 'json', created: false, container: 'hooks', event: 'SessionEnd', inner: ' ' },
      managedFound: 0,
    });
    expect(plan('{"hooks": {"Stop": []}}').owned).toStrictEqual({
      format: 'json',
      created: false,
      container: 'hooks',
      event: 'SessionEnd',
    });
    expect(plan(doc([USER]))).toStrictEqual({
      text: `{"hooks": {"SessionEnd": [{"hooks": [${USER}]},${hook}]}}`,
      owned: { format: 'json', created: false, container: 'event', event: 'SessionEnd' },
      managedFound: 0,
    });
    expect(plan('{"hooks": {"SessionEnd": []}}').owned).toStrictEqual({
      format: 'json',
      created: false,
      container: 'event',
      event: 'SessionEnd',
      inner: '',
    });
  });

  it('refuses hooks or an event that has the wrong shape, pointing at it', () => {
    const notObject = thrown(() => plan('{\n  "hooks": 1\n}'));
    expect([notObject.code, notObject.line, notObject.column]).toEqual(['NATIVE_CONFIG_CONFLICT', 2, 3]);
    expect(notObject.message).toContain('"hooks" is not an object');
    expect(notObject.hint).toContain('object of event arrays');
    const notArray = thrown(() => plan('{"hooks": {\n "SessionEnd": {}}}'));
    expect([notArray.code, notArray.line, notArray.column]).toEqual(['NATIVE_CONFIG_CONFLICT', 2, 2]);
    expect(notArray.message).toContain('"hooks.SessionEnd" is not an array');
    expect(notArray.hint).toContain('Make "SessionEnd" an array of hook groups');
  });
});

describe('planJson: the kept managed handler', () => {
  it('is left alone when right, keeping any record', () => {
    const record = { format: 'json', created: true, container: 'root', event: 'SessionEnd' };
    expect(plan(doc([RIGHT]), desired, record)).toStrictEqual({ text: doc([RIGHT]), owned: record, managedFound: 1 });
    expect(plan(doc([RIGHT]))).toStrictEqual({
      text: doc([RIGHT]),
      owned: { format: 'json', created: false },
      managedFound: 1,
    });
  });

  it('is brought up to date value by value, adding missing keys in the file’s layout', () => {
    expect(plan(doc([`{"command": ${OLD}}`])).text).toBe(doc([`{"command": ${C},"type": "command","timeout": 3}`]));
    expect(plan(doc([`{"type": "x", "command": ${C}, "timeout": 9}`])).text).toBe(doc([RIGHT]));
    const multi = [
      '{',
      '  "hooks": {',
      '    "SessionEnd": [',
      '      {',
      '        "hooks": [',
      '          {',
      `            "command": ${OLD}`,
      '          }',
      '        ]',
      '      }',
      '    ]',
      '  }',
      '}',
      '',
    ];
    const expected = [...multi];
    expected.splice(6, 1, `            "command": ${C},`, '            "type": "command",', '            "timeout": 3');
    expect(plan(multi.join('\n')).text).toBe(expected.join('\n'));
  });

  it('prefers the agent’s own single-handler group, and cuts the others', () => {
    expect(plan(doc([USER, STALE], [RIGHT])).text).toBe(doc([USER], [RIGHT]));
    expect(plan(doc([STALE, RIGHT], [RIGHT])).text).toBe(doc([RIGHT]));
    // Two managed handlers sharing a group: the first is kept and brought up to date, the second cut.
    expect(plan(doc([STALE, RIGHT]))).toStrictEqual({
      text: doc([RIGHT]),
      owned: { format: 'json', created: false },
      managedFound: 2,
    });
  });
});

describe('planJson: removal', () => {
  const one = doc([RIGHT]);

  it('takes out what the record says the agent inserted, putting back what was inside', () => {
    expect(plan(one, null, { format: 'json', container: 'root', event: 'SessionEnd', inner: ' ' }).text).toBe('{ }');
    expect(plan(one, null, { format: 'json', container: 'hooks', event: 'SessionEnd', inner: ' ' }).text).toBe(
      '{"hooks": { }}',
    );
    expect(plan(one, null, { format: 'json', container: 'event', event: 'SessionEnd', inner: ' ' }).text).toBe(
      '{"hooks": {"SessionEnd": [ ]}}',
    );
    expect(plan(one, null, { format: 'json', container: 'event', event: 'SessionEnd' }).text).toBe(
      '{"hooks": {"SessionEnd": []}}',
    );
    expect(plan(one, null, { format: 'json', container: 'hooks', event: 'SessionEnd' }).text).toBe('{"hooks": {}}');
    expect(plan(one, null, { format: 'json', container: 'root', event: 'SessionEnd' }).text).toBe('{}');
  });

  it('without a usable record, takes out the event key the managed group emptied', () => {
    expect(plan(one, null)).toStrictEqual({ text: '{"hooks": {}}', owned: undefined, managedFound: 1 });
    for (const owned of [
      { format: 'json', container: 'event', event: 'Stop', inner: ' ' },
      { format: 'json', container: 'event', inner: ' ' },
      { format: 'json', container: 'other', event: 'SessionEnd', inner: ' ' },
      { format: 'toml', container: 'event', event: 'SessionEnd', inner: ' ' },
    ]) {
      expect(plan(one, null, owned).text).toBe('{"hooks": {}}');
    }
    // A recorded inner text that is not whitespace is not put back.
    expect(plan(one, null, { format: 'json', container: 'event', event: 'SessionEnd', inner: 'x' }).text).toBe(
      '{"hooks": {"SessionEnd": []}}',
    );
  });

  it('keeps other events, other groups and the user’s handlers', () => {
    const root = { format: 'json', container: 'root', event: 'SessionEnd', inner: ' ' };
    expect(plan(`{"hooks": {"Stop": [], "SessionEnd": [{"hooks": [${RIGHT}]}]}}`, null, root).text).toBe(
      '{"hooks": {"Stop": []}}',
    );
    expect(plan(`{"a": 1, "hooks": {"SessionEnd": [{"hooks": [${RIGHT}]}]}}`, null, root).text).toBe('{"a": 1}');
    expect(plan(doc([USER], [RIGHT]), null, root).text).toBe(doc([USER]));
    expect(plan(doc([RIGHT], [USER]), null).text).toBe(doc([USER]));
    expect(plan(doc([USER, RIGHT]), null).text).toBe(doc([USER]));
    expect(plan(doc([RIGHT, USER]), null).text).toBe(doc([USER]));
    expect(plan(doc([RIGHT, STALE], [STALE]), null)).toStrictEqual({
      text: '{"hooks": {}}',
      owned: undefined,
      managedFound: 3,
    });
  });

  it('deletes or empties the file only as the record says, and never a file that holds more', () => {
    // A file the agent created, emptied by hand: it goes, as it would have with the agent's entry in it.
    expect(plan('{}', null, { format: 'json', created: true })).toStrictEqual({
      text: null,
      owned: undefined,
      managedFound: 0,
    });
    expect(plan('{"a": 1}', null, { format: 'json', created: true })).toStrictEqual({
      text: '{"a": 1}',
      owned: undefined,
      managedFound: 0,
    });
    expect(plan('{"a": 1}', null, { format: 'json', emptyOriginal: '' })).toStrictEqual({
      text: '{"a": 1}',
      owned: undefined,
      managedFound: 0,
    });
    expect(plan('{ }', null, { format: 'json', emptyOriginal: '' }).text).toBe('{ }');
    expect(plan(one, null, { format: 'json', created: 'yes', container: 'root', event: 'SessionEnd' }).text).toBe('{}');
    expect(plan(one, null, { format: 'json', container: 'root', event: 'SessionEnd', emptyOriginal: '\n' }).text).toBe(
      '\n',
    );
    expect(plan(one, null, { format: 'json', container: 'root', event: 'SessionEnd', emptyOriginal: 'x' }).text).toBe(
      '{}',
    );
    expect(plan(one, null, { format: 'json', container: 'root', event: 'SessionEnd', emptyOriginal: 1 }).text).toBe(
      '{}',
    );
  });
});

describe('planJson: the record and the keeper, edge by edge', () => {
  it('keeps only the record fields it understands when the handler stays', () => {
    const right = doc([RIGHT]);
    const keptAs = (owned: OwnershipRecord) => plan(right, desired, owned).owned;
    expect(keptAs({ format: 'json', created: false, container: 'other', event: 'SessionEnd' })).toStrictEqual({
      format: 'json',
      created: false,
    });
    expect(keptAs({ format: 'json', created: false, container: 'root' })).toStrictEqual({
      format: 'json',
      created: false,
    });
    expect(keptAs({ format: 'json', container: 'event', event: 'SessionEnd', inner: 'x' })).toStrictEqual({
      format: 'json',
      created: false,
      container: 'event',
      event: 'SessionEnd',
    });
    expect(keptAs({ format: 'json', container: 'event', event: 'SessionEnd', inner: '' })).toStrictEqual({
      format: 'json',
      created: false,
      container: 'event',
      event: 'SessionEnd',
      inner: '',
    });
    expect(keptAs({ format: 'json', container: 'hooks', event: 'SessionEnd', inner: ' \n ' })).toStrictEqual({
      format: 'json',
      created: false,
      container: 'hooks',
      event: 'SessionEnd',
      inner: ' \n ',
    });
    expect(keptAs({ format: 'json', emptyOriginal: 'x' })).toStrictEqual({ format: 'json', created: false });
    // An array reads as '' to a regular expression; only strings count.
    expect(keptAs({ format: 'json', container: 'event', event: 'SessionEnd', inner: [] })).toStrictEqual({
      format: 'json',
      created: false,
      container: 'event',
      event: 'SessionEnd',
    });
    expect(keptAs({ format: 'json', emptyOriginal: [] })).toStrictEqual({ format: 'json', created: false });
    expect(keptAs({ format: 'json', emptyOriginal: '' })).toStrictEqual({
      format: 'json',
      created: false,
      emptyOriginal: '',
    });
  });

  it('keeps a handler only on the wanted event, moving one found on another', () => {
    const hook = `{"hooks":[{"type":"command","command":${C},"timeout":3}]}`;
    expect(plan(`{"hooks": {"Stop": [{"hooks": [${RIGHT}]}]}}`)).toStrictEqual({
      text: `{"hooks": {"SessionEnd": [${hook}]}}`,
      owned: { format: 'json', created: false, container: 'hooks', event: 'SessionEnd', inner: '' },
      managedFound: 1,
    });
  });

  it('keeps the single-handler group of its own over an earlier group of two managed handlers', () => {
    const text = `{"hooks": {"SessionEnd": [{"hooks": [${STALE}, ${STALE}]}, {"matcher": "", "hooks": [${RIGHT}]}]}}`;
    expect(plan(text).text).toBe(`{"hooks": {"SessionEnd": [{"matcher": "", "hooks": [${RIGHT}]}]}}`);
  });

  it('rewrites only the values that are wrong, keeping the spelling of the right ones', () => {
    const spelled = `{"type": "comm\\u0061nd", "command": ${C}, "timeout": 3.0}`;
    expect(plan(doc([spelled]))).toStrictEqual({
      text: doc([spelled]),
      owned: { format: 'json', created: false },
      managedFound: 1,
    });
    expect(plan(doc([`{"type": "comm\\u0061nd", "command": ${OLD}, "timeout": 3.0}`])).text).toBe(doc([spelled]));
  });

  it('leaves a blank file or an empty object alone when nothing is wanted and no record says more', () => {
    expect(plan('  \n', null)).toStrictEqual({ text: '  \n', owned: undefined, managedFound: 0 });
    expect(plan('{}', null)).toStrictEqual({ text: '{}', owned: undefined, managedFound: 0 });
    expect(plan(' { } ', null, { format: 'json' })).toStrictEqual({ text: ' { } ', owned: undefined, managedFound: 0 });
  });

  it('refuses a removal that would bring back the user’s hooks under a repeated "hooks" key', () => {
    const hidden = `{"hooks": {"Stop": [{"hooks": [${USER}]}]}, "hooks": {"SessionEnd": [{"hooks": [${RIGHT}]}]}}`;
    const error = thrown(() =>
      plan(hidden, null, { format: 'json', container: 'root', event: 'SessionEnd', inner: '' }),
    );
    expect(error.code).toBe('NATIVE_CONFIG_CONFLICT');
    expect(error.message).toContain('without changing your own entries');
  });
});

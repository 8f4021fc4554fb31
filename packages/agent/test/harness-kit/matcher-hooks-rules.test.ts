/**
 * The matcher-group hooks planner's rules one by one, with the example seconds dialect: every parse and conflict
 * message, what counts as the agent's own hook and group, which managed hook is kept and how it is repaired, and what
 * the ownership record says.
 */
import { describe, expect, it } from 'vitest';
import type { OwnershipRecord } from '../../src/harness-kit/matcher-hooks-ownership.js';
import {
  planMatcherHooks,
  type MatcherHook,
  type MatcherHooksPlan as HookPlan,
} from '../../src/harness-kit/matcher-hooks.js';
import { thrown } from '../../../../test/support/errors.js';
import { EXAMPLE_HOOK, SECONDS_DIALECT } from '../../../../test/support/matcher-hooks.js';

const desired: MatcherHook = EXAMPLE_HOOK;
const C = JSON.stringify(desired.command);
const RIGHT = `{"type":"command","command":${C},"timeout":10}`;

const install = (text: string | null, owned?: OwnershipRecord, want: MatcherHook = desired): HookPlan =>
  planMatcherHooks({ text, file: 's.json', desired: want, owned }, SECONDS_DIALECT);
const remove = (text: string | null, owned?: OwnershipRecord): HookPlan =>
  planMatcherHooks({ text, file: 's.json', desired: null, owned }, SECONDS_DIALECT);
/** A one-line settings file whose SessionEnd array holds `groups`. */
const sessionEnd = (...groups: string[]) => `{"hooks":{"SessionEnd":[${groups.join(',')}]}}`;
const own = (...hooks: string[]) => `{"matcher":"","hooks":[${hooks.join(',')}]}`;

describe('parse errors', () => {
  const HINT = 'Fix the JSON syntax at that position in s.json; blue-agent leaves a file it cannot parse untouched.';
  const cases: [string, string][] = [
    ['{"a": @}', '1:7: unexpected character'],
    ['{"a":1,}', '1:8: property name expected (a trailing comma?)'],
    ['{"a":}', '1:6: value expected'],
    ['{"a" 1}', "1:6: ':' expected"],
    ['{"a":1 "b":2}', "1:8: ',' expected"],
    ['{"a":1', "1:7: '}' expected"],
    ['{"a":[1', "1:8: ']' expected"],
    ['{}}', '1:3: unexpected content after the end of the settings object'],
    ['{} /* ', '1:4: unterminated comment'],
    ['{"a', '1:2: unterminated string'],
    ['{"a": 1e}', '1:7: unterminated number'],
    ['{"a":"\\u12"}', '1:6: invalid unicode escape'],
    ['{"a":"\\q"}', '1:6: invalid escape character in string'],
    ['{"a":"\u0001"}', '1:6: invalid character in string'],
    ['// only a comment', '1:18: value expected'],
  ];
  for (const [text, message] of cases) {
    it(`${JSON.stringify(text)}: ${message}`, () => {
      for (const plan of [() => install(text), () => remove(text)]) {
        const error = thrown(plan);
        expect([error.code, error.message, error.hint]).toEqual(['NATIVE_CONFIG_PARSE', `s.json:${message}`, HINT]);
      }
    });
  }

  it('allows comments and positions errors after a byte-order mark in the file as it is', () => {
    expect(install('{/* mine */}').managedFound).toBe(0);
    expect(thrown(() => install('\uFEFF{"a":}')).message).toBe('s.json:1:7: value expected');
  });

  it('accepts 256 levels of nesting and refuses 257, at the first level too deep', () => {
    const nest = (n: number) => `{"a":${'['.repeat(n - 1)}${']'.repeat(n - 1)}}`;
    expect(install(nest(256)).managedFound).toBe(0);
    const error = thrown(() => install(nest(257)));
    expect([error.code, error.message]).toEqual(['NATIVE_CONFIG_PARSE', 's.json:1:261: nested deeper than 256 levels']);
    expect(error.hint).toBe(
      'Example CLI settings are not expected to nest this deep; check the file for corruption, fix it, and run ' +
        'reconcile again.',
    );
    expect(thrown(() => remove(nest(257))).code).toBe('NATIVE_CONFIG_PARSE');
  });
});

describe('shapes the hook cannot be added to', () => {
  const cases: [string, string, string][] = [
    [
      '[]',
      '1:1: the top level is an array, not an object',
      'Example CLI settings must be a JSON object ({ ... }); fix s.json so blue-agent can add its SessionEnd hook.',
    ],
    ['5', '1:1: the top level is a number, not an object', ''],
    ['"s"', '1:1: the top level is a string, not an object', ''],
    ['null', '1:1: the top level is null, not an object', ''],
    ['true', '1:1: the top level is a boolean, not an object', ''],
    [
      '{"hooks":{},"hooks":{}}',
      '1:13: "hooks" appears more than once',
      'Merge the duplicate "hooks" objects into one; only the last one takes effect.',
    ],
    [
      '{"hooks":[]}',
      '1:10: "hooks" is an array, not an object',
      'Make "hooks" an object keyed by event name, for example {"SessionEnd": []}.',
    ],
    [
      '{"hooks":{"SessionEnd":[],"SessionEnd":[]}}',
      '1:27: "hooks.SessionEnd" appears more than once',
      'Merge the duplicate "SessionEnd" arrays into one; only the last one takes effect.',
    ],
    [
      '{"hooks":{"SessionEnd":{}}}',
      '1:24: "hooks.SessionEnd" is an object, not an array',
      'Make "hooks.SessionEnd" an array of matcher groups: [{"matcher": "", "hooks": [...]}].',
    ],
    [
      '{"hooks":{"SessionEnd":[{"hooks":[],"hooks":[]}]}}',
      '1:37: "hooks.SessionEnd[0].hooks" appears more than once',
      'Merge the duplicate "hooks" arrays of that matcher group into one.',
    ],
    [
      '{"hooks":{"SessionEnd":[{"hooks":"x"}]}}',
      '1:34: "hooks.SessionEnd[0].hooks" is a string, not an array',
      'Make the "hooks" of each matcher group an array of hook objects: [{"type": "command", "command": "..."}].',
    ],
    ['{"hooks":{"SessionEnd":[5,{"hooks":null}]}}', '1:36: "hooks.SessionEnd[1].hooks" is null, not an array', ''],
  ];
  for (const [text, message, hint] of cases) {
    it(`${text}: ${message}`, () => {
      const error = thrown(() => install(text));
      expect([error.code, error.message]).toEqual(['NATIVE_CONFIG_CONFLICT', `s.json:${message}`]);
      if (hint !== '') expect(error.hint).toBe(hint);
    });
  }

  it('a duplicate or odd "hooks" elsewhere than the event is no obstacle', () => {
    expect(install('{"hooks":{"Stop":{},"Stop":[]}}').text).toContain('"SessionEnd"');
    expect(install(sessionEnd('5', '"x"', '{"matcher":"a"}')).text).toBe(
      `{"hooks":{"SessionEnd":[5,"x",{"matcher":"a"},${own(RIGHT)}]}}`,
    );
  });

  it('removal leaves a document that is not an object as it is', () => {
    for (const text of ['[]', '5', 'null']) expect(remove(text)).toEqual({ text, owned: undefined, managedFound: 0 });
  });
});

describe('what is managed', () => {
  it('a hook is managed by its last command, when that is a managed command string', () => {
    const lastWins = `{"type":"command","command":"~/mine.sh","command":${C}}`;
    expect(remove(sessionEnd(`{"hooks":[${lastWins}]}`)).managedFound).toBe(1);
    const mineLast = `{"type":"command","command":${C},"command":"~/mine.sh"}`;
    expect(remove(sessionEnd(`{"hooks":[${mineLast}]}`)).managedFound).toBe(0);
    for (const odd of ['{"type":"command","command":7}', '{"type":"command"}', `[${C}]`, C, 'null']) {
      const text = sessionEnd(`{"hooks":[${odd}]}`);
      expect(remove(text)).toEqual({ text, owned: undefined, managedFound: 0 });
    }
  });

  it('finds managed hooks under every event, in every hooks array of a group, but not outside hooks arrays', () => {
    const text =
      `{"hooks":{"Stop":[{"hooks":[${RIGHT}]},{"hooks":{"x":${RIGHT}}},{"other":[${RIGHT}]}],"Odd":{"hooks":[` +
      `${RIGHT}]}},"top":[${RIGHT}]}`;
    const plan = remove(text);
    expect(plan.managedFound).toBe(1);
    expect(plan.text).toBe(
      `{"hooks":{"Stop":[{"hooks":{"x":${RIGHT}}},{"other":[${RIGHT}]}],"Odd":{"hooks":[${RIGHT}]}},"top":[${RIGHT}]}`,
    );
  });

  it("a group is the agent's own only with one non-empty hooks array of managed hooks", () => {
    // Own: removed whole.
    expect(remove(sessionEnd(own(RIGHT, RIGHT), '{"hooks":["keep"]}')).text).toBe(sessionEnd('{"hooks":["keep"]}'));
    // A group with a user hook too, or extra matcher keys, stays without the managed hook.
    expect(remove(sessionEnd(`{"matcher":"","hooks":[${RIGHT},"u"]}`)).text).toBe(
      sessionEnd('{"matcher":"","hooks":["u"]}'),
    );
    // Empty hooks array: the user's.
    expect(remove(sessionEnd('{"hooks":[]}')).text).toBe(sessionEnd('{"hooks":[]}'));
  });
});

describe('repairing the kept managed hook', () => {
  const one = (hook: string, matcher = '""') => sessionEnd(`{"matcher":${matcher},"hooks":[${hook}]}`);

  it('leaves a right hook alone, whatever its key order', () => {
    for (const hook of [RIGHT, `{"timeout":10,"command":${C},"type":"command"}`]) {
      const text = one(hook);
      expect(install(text).text).toBe(text);
    }
    const noMatcher = sessionEnd(`{"hooks":[${RIGHT}]}`);
    expect(install(noMatcher).text).toBe(noMatcher);
  });

  it('rewrites a hook with an extra key', () => {
    expect(install(one(`{"type":"command","command":${C},"timeout":10,"extra":1}`)).text).toBe(one(RIGHT));
    expect(install(one(`{"type":"command","command":${C},"extra":1}`)).text).toBe(one(RIGHT));
  });

  it('rewrites a hook with a repeated key', () => {
    expect(install(one(`{"type":"command","command":${C},"command":${C}}`)).text).toBe(one(RIGHT));
  });

  it('corrects only the wrong value: a "prompt" type, a string or other timeout', () => {
    expect(install(one(`{"type":"prompt","command":${C},"timeout":10}`)).text).toBe(one(RIGHT));
    expect(install(one(`{"type":"command","command":${C},"timeout":"10"}`)).text).toBe(one(RIGHT));
    expect(install(one(`{"type":"command","command":${C},"timeout":3}`)).text).toBe(one(RIGHT));
    expect(install(one(`{"type":["command"],"command":${C},"timeout":null}`)).text).toBe(one(RIGHT));
  });

  it('resets any matcher that is not the empty string, every one of them', () => {
    for (const matcher of ['"x"', 'null', '0', '[""]']) expect(install(one(RIGHT, matcher)).text).toBe(one(RIGHT));
    expect(install(sessionEnd(`{"matcher":"a","matcher":"","hooks":[${RIGHT}]}`)).text).toBe(
      sessionEnd(`{"matcher":"","matcher":"","hooks":[${RIGHT}]}`),
    );
  });

  it('keeps the right hook with the right matcher, then a right hook, then the first', () => {
    const stale = `{"type":"command","command":${C},"timeout":3}`;
    expect(install(sessionEnd(own(stale), own(RIGHT))).text).toBe(sessionEnd(own(RIGHT)));
    expect(install(sessionEnd(`{"matcher":"x","hooks":[${RIGHT}]}`, own(RIGHT))).text).toBe(sessionEnd(own(RIGHT)));
    expect(install(sessionEnd(`{"matcher":"x","hooks":[${RIGHT}]}`, own(stale))).text).toBe(sessionEnd(own(RIGHT)));
    expect(install(sessionEnd(own(stale), own(stale))).text).toBe(sessionEnd(own(RIGHT)));
  });

  it('does not keep a managed hook that sits in a user group, or under another event', () => {
    expect(install(sessionEnd(`{"hooks":[${RIGHT},"u"]}`)).text).toBe(sessionEnd('{"hooks":["u"]}', own(RIGHT)));
    expect(install(`{"hooks":{"Stop":[${own(RIGHT)}],"SessionEnd":[]}}`).text).toBe(
      `{"hooks":{"SessionEnd":[${own(RIGHT)}]}}`,
    );
  });

  it('keeps an event array the user had, emptied by taking a managed group out of it', () => {
    // The SessionEnd array is the user's; Stop loses its only (managed) group and goes.
    expect(install(`{"hooks":{"Stop":[${own(RIGHT)}],"PreToolUse":[]}}`).text).toBe(
      `{"hooks":{"PreToolUse":[],"SessionEnd":[${own(RIGHT)}]}}`,
    );
  });
});

describe('byte-order mark, blank files and the ownership record', () => {
  it('keeps a byte-order mark on install and removal, and gives back a blank file untouched on removal', () => {
    const text = `\uFEFF${sessionEnd(own(RIGHT))}`;
    expect(install(text).text).toBe(text);
    expect(remove(text).text).toBe('\uFEFF{}');
    for (const blank of ['', '  \n', '\uFEFF'])
      expect(remove(blank)).toEqual({ text: blank, owned: undefined, managedFound: 0 });
    expect(remove(null)).toEqual({ text: null, owned: undefined, managedFound: 0 });
  });

  it('records a blank file with its whitespace up to 4096 characters, and gives it back', () => {
    const small = ' \n'.repeat(2048);
    const a = install(small);
    expect(a.owned).toMatchObject({ base: 'empty', baseText: small });
    expect(remove(a.text, a.owned).text).toBe(small);
    const big = ' \n'.repeat(2048) + ' ';
    const b = install(big);
    expect(b.owned).toMatchObject({ base: 'empty' });
    expect((b.owned as Record<string, unknown>).baseText).toBeUndefined();
    expect(remove(b.text, b.owned).text).toBe('');
  });

  it('a missing file comes back missing; an existing one keeps its base across installs', () => {
    const a = install(null);
    expect(a.owned).toMatchObject({ base: 'missing', created: ['hooks', 'event'] });
    expect(remove(a.text, a.owned).text).toBeNull();
    const b = install('{"theme":"dark"}');
    expect(b.owned).toMatchObject({ base: 'existing', created: ['hooks', 'event'] });
    expect(remove(b.text, b.owned).text).toBe('{"theme":"dark"}');
  });

  it('an entry found in place with no record gets a record without containers or splice', () => {
    const plan = install(sessionEnd(own(RIGHT)));
    expect(plan.owned).toEqual({ v: 1, base: 'existing', event: 'SessionEnd' });
  });

  it('a record for another event is not reused: the new insertion is recorded on its own', () => {
    const old = { v: 1, base: 'existing', event: 'Stop', created: ['hooks'] } as OwnershipRecord;
    const plan = install('{"hooks":{}}', old);
    expect(plan.owned).toMatchObject({ v: 1, base: 'existing', event: 'SessionEnd', created: ['event'] });
    const same = { v: 1, base: 'existing', event: 'SessionEnd', created: ['hooks'] } as OwnershipRecord;
    expect(install('{"hooks":{}}', same).owned).toMatchObject({ created: ['hooks', 'event'] });
  });

  it('a kept entry keeps the record it came with, unchanged', () => {
    const first = install('{}');
    const again = install(first.text, first.owned);
    expect(again.owned).toBe(first.owned);
  });
});

describe('removal with a ledger record that no longer describes the file', () => {
  const OWN = own(RIGHT);
  type Splice = {
    node: 'group' | 'event' | 'hooks';
    before: string;
    after: string;
    comma: 'joined' | 'separate' | 'none';
  };
  const record = (splice: Splice, created?: string[]) =>
    ({
      v: 1,
      base: 'existing',
      event: 'SessionEnd',
      ...(created === undefined ? {} : { created }),
      splice,
    }) as OwnershipRecord;
  const cases: [string, string, Splice, (string[] | undefined)[], string[]][] = [
    [
      'a splice that claims a user key',
      `{"a":1,"hooks":{"SessionEnd":[${OWN}]}}`,
      { node: 'hooks', before: '"a":1,"hooks":{"SessionEnd":[', after: ']}', comma: 'joined' },
      [undefined, [], ['hooks', 'event']],
      ['{"a":1}', '{"a":1,"hooks":{"SessionEnd":[]}}', '{"a":1}'],
    ],
    [
      'a splice that claims a user event',
      `{"hooks":{"Stop":["u"],"SessionEnd":[${OWN}]}}`,
      { node: 'event', before: '"Stop":["u"],"SessionEnd":[', after: ']', comma: 'joined' },
      [undefined, [], ['hooks', 'event']],
      ['{"hooks":{"Stop":["u"]}}', '{"hooks":{"Stop":["u"],"SessionEnd":[]}}', '{"hooks":{"Stop":["u"]}}'],
    ],
    [
      'a splice that claims a user group',
      `{"hooks":{"SessionEnd":[{"matcher":"x","hooks":["u"]},${OWN}]}}`,
      { node: 'group', before: '{"matcher":"x","hooks":["u"]},', after: '', comma: 'joined' },
      [undefined, []],
      [
        '{"hooks":{"SessionEnd":[{"matcher":"x","hooks":["u"]}]}}',
        '{"hooks":{"SessionEnd":[{"matcher":"x","hooks":["u"]}]}}',
      ],
    ],
    [
      'a separate comma that is not where the record says',
      `{"hooks":{"SessionEnd":[{"matcher":"x","hooks":["u"]} , ${OWN}]}}`,
      { node: 'group', before: ' ', after: '', comma: 'separate' },
      [undefined],
      ['{"hooks":{"SessionEnd":[{"matcher":"x","hooks":["u"]} ]}}'],
    ],
    [
      'bytes after the group that differ',
      `{"hooks":{"SessionEnd":[${OWN} ]}}`,
      { node: 'hooks', before: '{"hooks":{"SessionEnd":[', after: ']}}', comma: 'none' },
      [undefined, ['hooks', 'event']],
      ['{}', '{}'],
    ],
    [
      'a "none" comma with siblings',
      `{"a":1,"hooks":{"SessionEnd":[${OWN}]}}`,
      { node: 'hooks', before: ',"hooks":{"SessionEnd":[', after: ']}', comma: 'none' },
      [[]],
      ['{"a":1,"hooks":{"SessionEnd":[]}}'],
    ],
    [
      'a joined splice for an entry that is not the last',
      `{"hooks":{"SessionEnd":[${OWN}],"Stop":[]},"a":1}`,
      { node: 'event', before: '{"hooks":{"SessionEnd":[', after: ']', comma: 'joined' },
      [[]],
      ['{"hooks":{"SessionEnd":[],"Stop":[]},"a":1}'],
    ],
  ];
  for (const [name, text, splice, createds, outs] of cases) {
    it(`${name}: only managed bytes go`, () => {
      createds.forEach((created, i) => {
        const plan = remove(text, record(splice, created));
        expect(plan.text, JSON.stringify(created)).toBe(outs[i]);
        expect(plan.managedFound).toBe(1);
      });
    });
  }

  it("a record for another event cuts nothing by its splice, and says nothing of this event's array", () => {
    const text = `{"a":1,"hooks":{"SessionEnd":[${OWN}]}}`;
    const other = {
      v: 1,
      base: 'existing',
      event: 'Stop',
      created: [],
      splice: { node: 'hooks', before: ',"hooks":{"SessionEnd":[', after: ']}', comma: 'joined' },
    } as OwnershipRecord;
    expect(remove(text, other).text).toBe('{"a":1,"hooks":{}}');
  });

  it('a record is not used for a cut when there are two managed hooks or two hooks objects', () => {
    const splice = { node: 'group', before: ',', after: '', comma: 'joined' } as const;
    const two = `{"hooks":{"SessionEnd":[{"hooks":["u"]},${OWN},${OWN}]}}`;
    expect(remove(two, record(splice, [])).text).toBe('{"hooks":{"SessionEnd":[{"hooks":["u"]}]}}');
    const mixed = `{"hooks":{"SessionEnd":[{"hooks":["u"]},{"matcher":"","hooks":[${RIGHT},${RIGHT}]}]}}`;
    expect(remove(mixed, record(splice, [])).text).toBe('{"hooks":{"SessionEnd":[{"hooks":["u"]}]}}');
    const inUser = `{"hooks":{"SessionEnd":[{"hooks":["u"]},{"hooks":[${RIGHT},"v"]}]}}`;
    expect(remove(inUser, record(splice, [])).text).toBe('{"hooks":{"SessionEnd":[{"hooks":["u"]},{"hooks":["v"]}]}}');
  });
});

describe('containers left empty by removal', () => {
  it('without a record, an event array and hooks object emptied by the removal go; ones left empty stay', () => {
    expect(remove(`{"hooks":{"SessionEnd":[${own(RIGHT)}]}}`).text).toBe('{}');
    expect(remove(`{"hooks":{"SessionEnd":[${own(RIGHT)}],"Stop":[]}}`).text).toBe('{"hooks":{"Stop":[]}}');
    expect(remove(`{"hooks":{"SessionEnd":[${own(RIGHT)}]},"hooks2":{}}`).text).toBe('{"hooks2":{}}');
    expect(remove(`{"hooks":{"SessionEnd":[{"hooks":[${RIGHT},"u"]}]}}`).text).toBe(
      '{"hooks":{"SessionEnd":[{"hooks":["u"]}]}}',
    );
    expect(remove(`{"hooks":{"SessionEnd":[/* keep */${own(RIGHT)}]}}`).text).toBe(
      '{"hooks":{"SessionEnd":[/* keep */]}}',
    );
  });

  it('with a record, the containers it created go and the others stay, even when emptied', () => {
    const text = `{"hooks":{"SessionEnd":[${own(RIGHT)}]}}`;
    const rec = (created: string[]) => ({ v: 1, base: 'existing', event: 'SessionEnd', created }) as OwnershipRecord;
    expect(remove(text, rec([])).text).toBe('{"hooks":{"SessionEnd":[]}}');
    expect(remove(text, rec(['event'])).text).toBe('{"hooks":{}}');
    expect(remove(text, rec(['hooks', 'event'])).text).toBe('{}');
    expect(remove(`{"hooks":{"SessionEnd":[${own(RIGHT)}],"Stop":[${own(RIGHT)}]}}`, rec(['event'])).text).toBe(
      '{"hooks":{}}',
    );
  });

  it("installing removes other events' managed groups and the arrays they leave, but not the hooks object", () => {
    expect(install(`{"hooks":{"Stop":[${own(RIGHT)}]}}`).text).toBe(`{"hooks":{"SessionEnd":[${own(RIGHT)}]}}`);
    expect(install(`{"hooks":{"Stop":[${own(RIGHT)},{"hooks":["u"]}]}}`).text).toBe(
      `{"hooks":{"Stop":[{"hooks":["u"]}],"SessionEnd":[${own(RIGHT)}]}}`,
    );
  });

  it('a restored base needs nothing but an empty object left', () => {
    const created = install('  ');
    expect(remove(created.text, created.owned).text).toBe('  ');
    expect(remove(`{"a":1,${created.text!.slice(1)}`, created.owned).text).toMatch(/^\{"a":1/);
  });
});

describe('install then remove gives back the bytes', () => {
  const shapes: [string, string][] = [
    ['an empty object', '{}'],
    ['one line with a key', '{"a":1}'],
    ['one line with an empty hooks object', '{"hooks":{}}'],
    ['one line with an empty event array', '{"hooks":{"SessionEnd":[]}}'],
    ['one line with a user group', '{"hooks":{"SessionEnd":[{"hooks":["u"]}]}}'],
    ['one line with another event', '{"hooks":{"Stop":[]},"z":0}'],
    ['pretty, with a trailing comment', '{\n  "a": 1 // mine\n}\n'],
    ['pretty, a comment after the hooks object', '{\n  "hooks": {\n    "Stop": []\n  } /* c */\n}\n'],
    [
      'pretty, an event array with a trailing comment',
      '{\n  "hooks": {\n    "SessionEnd": [\n      {"hooks": ["u"]} // c\n    ]\n  }\n}\n',
    ],
    ['CRLF', '{\r\n  "a": 1\r\n}\r\n'],
    ['tabs', '{\n\t"a": [\n\t\t1\n\t]\n}'],
    ['an empty object on many lines', '{\n}\n'],
    ['a byte-order mark', '\uFEFF{"a":1}\n'],
  ];
  for (const [name, text] of shapes) {
    it(name, () => {
      const a = install(text);
      expect(a.text).toContain(C);
      expect(install(a.text, a.owned).text).toBe(a.text);
      expect(remove(a.text, a.owned).text).toBe(text);
      // Without the record the entry goes too, leaving the user's entries.
      const lost = remove(a.text);
      expect(lost.managedFound).toBe(1);
      expect(lost.text).not.toContain('capture --harness example');
    });
  }

  it('inline insertions: the event array into an inline hooks object, the hooks object into an inline file', () => {
    expect(install('{"hooks":{}}').text).toBe(`{"hooks":{"SessionEnd":[${own(RIGHT)}]}}`);
    expect(install('{"hooks":{"Stop":[]}}').text).toBe(`{"hooks":{"Stop":[],"SessionEnd":[${own(RIGHT)}]}}`);
    expect(install('{"a":1}').text).toBe(`{"a":1,"hooks":{"SessionEnd":[${own(RIGHT)}]}}`);
    expect(install('{"hooks":{"SessionEnd":[]}}').text).toBe(sessionEnd(own(RIGHT)));
  });
});

describe('repairs touch only what is wrong', () => {
  it('a hook with the right keys is edited value by value, keeping its spacing and right values as spelled', () => {
    const text = sessionEnd(`{"matcher":"","hooks":[{ "type": "prompt", "command": ${C}, "timeout": 1e1 }]}`);
    expect(install(text).text).toBe(
      sessionEnd(`{"matcher":"","hooks":[{ "type": "command", "command": ${C}, "timeout": 1e1 }]}`),
    );
    const stale = sessionEnd(`{"matcher":"","hooks":[{ "timeout": 3, "type": "command", "command": ${C} }]}`);
    expect(install(stale).text).toBe(
      sessionEnd(`{"matcher":"","hooks":[{ "timeout": 10, "type": "command", "command": ${C} }]}`),
    );
  });
});

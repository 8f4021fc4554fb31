/**
 * The matcher-group hooks planner (example seconds dialect) against ledger records that no longer describe the file,
 * each crafted so that one of the cut's conditions is all that stands between the file and a cut that would take more
 * than the agent's bytes.
 * A record's splice that names a comment shows the difference: the exact cut would take the comment with it, the
 * general removal leaves it where the user put it.
 */
import { describe, expect, it } from 'vitest';
import type { OwnershipRecord } from '../../src/harness-kit/matcher-hooks-ownership.js';
import {
  planMatcherHooks,
  type MatcherHook,
  type MatcherHooksPlan as HookPlan,
} from '../../src/harness-kit/matcher-hooks.js';
import { EXAMPLE_HOOK, SECONDS_DIALECT } from '../../../../test/support/matcher-hooks.js';

const desired: MatcherHook = EXAMPLE_HOOK;
const C = JSON.stringify(desired.command);
const RIGHT = `{"type":"command","command":${C},"timeout":10}`;
const OWN = `{"matcher":"","hooks":[${RIGHT}]}`;

type Splice = {
  node: 'group' | 'event' | 'hooks';
  before: string;
  after: string;
  comma: 'joined' | 'separate' | 'none';
};
const record = (splice?: Splice, created?: string[], event = 'SessionEnd') =>
  ({
    v: 1,
    base: 'existing',
    event,
    ...(created === undefined ? {} : { created }),
    ...(splice === undefined ? {} : { splice }),
  }) as OwnershipRecord;
const remove = (text: string, owned?: OwnershipRecord): HookPlan =>
  planMatcherHooks({ text, file: 's.json', desired: null, owned }, SECONDS_DIALECT);

describe('a cut is made only where the record can describe the entry', () => {
  it('not with two hooks objects: the comment the splice names stays', () => {
    const text = `{"hooks":{},"hooks":{"SessionEnd":[{"hooks":["u"]},/*c*/${OWN}]}}`;
    const plan = remove(text, record({ node: 'group', before: ',/*c*/', after: '', comma: 'joined' }));
    expect(plan.text).toBe('{"hooks":{},"hooks":{"SessionEnd":[{"hooks":["u"]}/*c*/]}}');
  });

  it('not with the event named twice in the hooks object', () => {
    const text = `{"hooks":{"SessionEnd":[{"hooks":["u"]},/*c*/${OWN}],"SessionEnd":[]}}`;
    const plan = remove(text, record({ node: 'group', before: ',/*c*/', after: '', comma: 'joined' }));
    expect(plan.text).toBe('{"hooks":{"SessionEnd":[{"hooks":["u"]}/*c*/],"SessionEnd":[]}}');
  });

  it('not for a comma said to precede the entry when nothing precedes it', () => {
    const text = `{"hooks":{"SessionEnd":[/*c*/${OWN}]}}`;
    for (const comma of ['joined', 'separate'] as const) {
      const plan = remove(text, record({ node: 'group', before: '/*c*/', after: '', comma }));
      expect(plan.text, comma).toBe('{"hooks":{"SessionEnd":[/*c*/]}}');
    }
  });

  it("not when the managed hook sits under another event than the record's", () => {
    const text = `{"hooks":{"SessionEnd":[],"Stop":[/*c*/${OWN}]}}`;
    const plan = remove(text, record({ node: 'group', before: '/*c*/', after: '', comma: 'none' }, []));
    expect(plan.text).toBe('{"hooks":{"SessionEnd":[],"Stop":[/*c*/]}}');
  });
});

describe("a cut that would drop a user's entry is refused", () => {
  it('a cut that leaves a trailing comma', () => {
    const text = `{"a":1,"hooks":{"SessionEnd":[${OWN}]}}`;
    const plan = remove(
      text,
      record({ node: 'hooks', before: '"hooks":{"SessionEnd":[', after: ']}', comma: 'joined' }),
    );
    expect(plan.text).toBe('{"a":1}');
  });

  it('a top-level key holding an empty object', () => {
    const text = `{"a":{},"hooks":{"SessionEnd":[${OWN}]}}`;
    const plan = remove(
      text,
      record({ node: 'hooks', before: '"a":{},"hooks":{"SessionEnd":[', after: ']}', comma: 'joined' }),
    );
    expect(plan.text).toBe('{"a":{}}');
  });

  it('an event that holds a scalar instead of an array', () => {
    const text = `{"hooks":{"Stop":5,"SessionEnd":[${OWN}]}}`;
    const plan = remove(
      text,
      record({ node: 'event', before: '"Stop":5,"SessionEnd":[', after: ']', comma: 'joined' }),
    );
    expect(plan.text).toBe('{"hooks":{"Stop":5}}');
  });
});

describe('empty containers after removal', () => {
  it('an empty hooks object the removal did not touch keeps its inner spacing', () => {
    const text = `{"hooks":{ },"hooks":{"SessionEnd":[${OWN}]}}`;
    expect(remove(text, record(undefined, ['event'])).text).toBe('{"hooks":{ },"hooks":{}}');
  });
});

const install = (text: string | null, owned?: OwnershipRecord): HookPlan =>
  planMatcherHooks({ text, file: 's.json', desired, owned }, SECONDS_DIALECT);

describe('installing against a record', () => {
  it("keeps the desired event's array even when the record says the agent created it", () => {
    const text = `{"hooks":{"SessionEnd":[],"Stop":[${OWN}],"PreToolUse":[]}}`;
    const plan = install(text, record(undefined, ['event']));
    expect(plan.text).toBe(`{"hooks":{"SessionEnd":[${OWN}],"PreToolUse":[]}}`);
  });

  it('leaves an empty array the record created alone when nothing was taken out', () => {
    const text = `{"hooks":{"Stop":[],"SessionEnd":[${OWN}]}}`;
    expect(install(text, record(undefined, ['event'], 'Stop')).text).toBe(text);
  });
});

describe('values kept as spelled', () => {
  it('a right type spelled with an escape stays; only the wrong timeout changes', () => {
    const text =
      '{"hooks":{"SessionEnd":[{"matcher":"","hooks":' + `[{"type":"comm\\u0061nd","command":${C},"timeout":3}]}]}}`;
    expect(install(text).text).toBe(text.replace('"timeout":3', '"timeout":10'));
  });
});

describe('byte-order mark and a blank base', () => {
  it('a blank file behind a byte-order mark comes back exactly, without a second mark', () => {
    for (const blank of ['\uFEFF', '\uFEFF\n  ']) {
      const a = install(blank);
      expect(a.text!.startsWith('\uFEFF{')).toBe(true);
      expect(remove(a.text!, a.owned).text).toBe(blank);
    }
  });
});

describe('giving back a blank or missing base', () => {
  const blankBase = (splice?: Splice, created?: string[]) =>
    ({
      v: 1,
      base: 'empty',
      baseText: '\n',
      event: 'SessionEnd',
      ...(created === undefined ? {} : { created }),
      ...(splice === undefined ? {} : { splice }),
    }) as OwnershipRecord;

  it('once nothing but an empty object is left, whatever whitespace is around and inside it', () => {
    const text = `  {\n "hooks":{"SessionEnd":[${OWN}]}\n}  `;
    const splice: Splice = { node: 'hooks', before: '"hooks":{"SessionEnd":[', after: ']}', comma: 'none' };
    expect(remove(text, blankBase(splice)).text).toBe('\n');
  });

  it('not while a comment of the user is left, before or after the object', () => {
    for (const [text, out] of [
      [`{"hooks":{"SessionEnd":[${OWN}]}}//{}`, '{}//{}'],
      [`{"hooks":{"SessionEnd":[${OWN}]}}//x`, '{}//x'],
      [`/*{}*/{"hooks":{"SessionEnd":[${OWN}]}}`, '/*{}*/{}'],
    ]) {
      expect(remove(text!, blankBase(undefined, ['hooks', 'event'])).text).toBe(out);
    }
  });
});

describe('what removal takes out', () => {
  it("a managed hook from a group with a second hooks array, which is the user's: the group stays", () => {
    const text = `{"hooks":{"SessionEnd":[{"hooks":[${RIGHT}],"hooks":[]}]}}`;
    expect(remove(text).text).toBe('{"hooks":{"SessionEnd":[{"hooks":[],"hooks":[]}]}}');
  });

  it('with two hooks objects, an emptied event array goes only from the object that held it', () => {
    expect(remove(`{"hooks":{"Stop":[1]},"hooks":{"SessionEnd":[${OWN}]}}`).text).toBe('{"hooks":{"Stop":[1]}}');
  });

  it('a "hooks" key that holds an empty array is not the hooks object, even when the record created one', () => {
    const text = `{"hooks":[],"hooks":{"SessionEnd":[${OWN}]}}`;
    expect(remove(text, record(undefined, ['hooks', 'event'])).text).toBe('{"hooks":[]}');
  });

  it('an event holding an empty object is no event array, even when the record created one under that name', () => {
    const text = `{"hooks":{"Stop":{},"SessionEnd":[${OWN}]}}`;
    expect(remove(text, record(undefined, ['event'], 'Stop')).text).toBe('{"hooks":{"Stop":{}}}');
  });
});

describe('installing keeps the hooks object it empties', () => {
  it('in its place, and records only the event array as created', () => {
    const plan = install(`{"hooks":{"Stop":[${OWN}]},"a":1}`);
    expect(plan.text).toBe(`{"hooks":{"SessionEnd":[${OWN}]},"a":1}`);
    expect(plan.owned).toMatchObject({ created: ['event'] });
  });
});

describe('install then remove gives back containers the user left empty on several lines', () => {
  for (const [name, text] of [
    ['an empty hooks object', '{\n  "hooks": {\n  }\n}\n'],
    ['an empty event array', '{\n  "hooks": {\n    "SessionEnd": [\n    ]\n  }\n}\n'],
    ['an empty hooks object with a neighbour', '{\n  "a": 1,\n  "hooks": {\n  }\n}\n'],
  ]) {
    it(name!, () => {
      const a = install(text!);
      expect(a.text).toContain(C);
      expect(remove(a.text!, a.owned).text).toBe(text);
    });
  }
});

describe('a cut that would shorten the value just before the entry is refused', () => {
  it('a user group that is a number', () => {
    const text = `{"hooks":{"SessionEnd":[56,${OWN}]}}`;
    expect(remove(text, record({ node: 'group', before: '6,', after: '', comma: 'joined' })).text).toBe(
      '{"hooks":{"SessionEnd":[56]}}',
    );
  });

  it('a top-level value and an event value', () => {
    const top = `{"a":12,"hooks":{"SessionEnd":[${OWN}]}}`;
    expect(
      remove(top, record({ node: 'hooks', before: '2,"hooks":{"SessionEnd":[', after: ']}', comma: 'joined' })).text,
    ).toBe('{"a":12}');
    const event = `{"hooks":{"Stop":12,"SessionEnd":[${OWN}]}}`;
    expect(remove(event, record({ node: 'event', before: '2,"SessionEnd":[', after: ']', comma: 'joined' })).text).toBe(
      '{"hooks":{"Stop":12}}',
    );
  });
});

describe('a splice that names a comment around the entry', () => {
  const text = `{"hooks":{"SessionEnd":[{"hooks":["u"]},/*c*/${OWN}]}}`;

  it('is cut with the entry when the bytes match and the comma opens the splice', () => {
    expect(remove(text, record({ node: 'group', before: ',/*c*/', after: '', comma: 'joined' })).text).toBe(
      '{"hooks":{"SessionEnd":[{"hooks":["u"]}]}}',
    );
  });

  it('is cut with its separate comma', () => {
    const spaced = `{"hooks":{"SessionEnd":[{"hooks":["u"]}, /*c*/${OWN}]}}`;
    expect(remove(spaced, record({ node: 'group', before: ' /*c*/', after: '', comma: 'separate' })).text).toBe(
      '{"hooks":{"SessionEnd":[{"hooks":["u"]}]}}',
    );
  });

  it('stays when the bytes before or after the entry differ from the record', () => {
    expect(remove(text, record({ node: 'group', before: ',/*x*/', after: '', comma: 'joined' })).text).toBe(
      '{"hooks":{"SessionEnd":[{"hooks":["u"]}/*c*/]}}',
    );
    const after = `{"hooks":{"SessionEnd":[${OWN}/*c*/]}}`;
    expect(remove(after, record({ node: 'group', before: '', after: '/*x*/', comma: 'none' })).text).toBe(
      '{"hooks":{"SessionEnd":[/*c*/]}}',
    );
  });

  it('stays when a separate comma is said to follow the group before, and a space does', () => {
    const spaced = `{"hooks":{"SessionEnd":[{"hooks":["u"]} ,${OWN}]}}`;
    expect(remove(spaced, record({ node: 'group', before: ',', after: '', comma: 'separate' })).text).toBe(
      '{"hooks":{"SessionEnd":[{"hooks":["u"]} ]}}',
    );
  });

  it('is cut for an event that is the last in its hooks object, whatever follows that object', () => {
    const event = `{"hooks":{"Stop":[],/*c*/"SessionEnd":[${OWN}]},"a":1}`;
    const plan = remove(
      event,
      record({ node: 'event', before: ',/*c*/"SessionEnd":[', after: ']', comma: 'joined' }, ['event']),
    );
    expect(plan.text).toBe('{"hooks":{"Stop":[]},"a":1}');
  });

  it('stays when the user added a group after the entry', () => {
    const later = `{"hooks":{"SessionEnd":[{"hooks":["u"]},/*c*/${OWN},{"hooks":["v"]}]}}`;
    const plan = remove(later, record({ node: 'group', before: ',/*c*/', after: '', comma: 'joined' }));
    expect(plan.text).toBe('{"hooks":{"SessionEnd":[{"hooks":["u"]},/*c*/{"hooks":["v"]}]}}');
  });

  it('stays when a second managed hook sits under another event', () => {
    const two = `{"hooks":{"SessionEnd":[{"hooks":["u"]},/*c*/${OWN}],"Stop":[${OWN}]}}`;
    const plan = remove(two, record({ node: 'group', before: ',/*c*/', after: '', comma: 'joined' }, []));
    expect(plan.text).toBe('{"hooks":{"SessionEnd":[{"hooks":["u"]}/*c*/]}}');
  });
});

describe("groups that are not the agent's own", () => {
  it("a group with an empty hooks array is the user's, and a splice cannot claim it", () => {
    const text = `{"hooks":{"SessionEnd":[{"hooks":[]},${OWN}]}}`;
    const plan = remove(text, record({ node: 'group', before: '{"hooks":[]},', after: '', comma: 'joined' }));
    expect(plan.text).toBe('{"hooks":{"SessionEnd":[{"hooks":[]}]}}');
  });
});

describe('choosing the managed hook to keep', () => {
  it('prefers the right hook whose group has the empty matcher over an earlier right hook with another matcher', () => {
    const text = `{"hooks":{"SessionEnd":[{"hooks":[${RIGHT}],"matcher":"x"},${OWN}]}}`;
    expect(install(text).text).toBe(`{"hooks":{"SessionEnd":[${OWN}]}}`);
  });

  it('a right hook with another matcher still beats a stale one', () => {
    const stale = `{"type":"command","command":${C},"timeout":3}`;
    const text = `{"hooks":{"SessionEnd":[{"matcher":"","hooks":[${stale}]},{"hooks":[${RIGHT}],"matcher":"x"}]}}`;
    expect(install(text).text).toBe(`{"hooks":{"SessionEnd":[{"hooks":[${RIGHT}],"matcher":""}]}}`);
  });

  it('a hook with every right key and value plus another is not right: a right hook later is kept as it stands', () => {
    const extra = `{"matcher":"","hooks":[{"type":"command","command":${C},"timeout":10,"x":1}]}`;
    const spaced = `{ "matcher": "", "hooks": [ { "type": "command", "command": ${C}, "timeout": 10 } ] }`;
    expect(install(`{"hooks":{"SessionEnd":[${extra},${spaced}]}}`).text).toBe(`{"hooks":{"SessionEnd":[${spaced}]}}`);
  });

  it('a managed hook without a type, of three keys, is rewritten whole', () => {
    const text = `{"hooks":{"SessionEnd":[{"matcher":"","hooks":[{"command":${C},"timeout":10,"x":1}]}]}}`;
    expect(install(text).text).toBe(`{"hooks":{"SessionEnd":[${OWN}]}}`);
  });
});

/**
 * The matcher-group hooks planner with a second dialect: a managed hook object with a `name` key first and the
 * timeout in milliseconds. Installing beside the user's hooks, bringing a stale entry up to date, and removal that
 * gives back the bytes work for it as for the seconds dialect; and each dialect takes the other's entry for stale.
 */
import { describe, expect, it } from 'vitest';
import type { OwnershipRecord } from '../../src/harness-kit/matcher-hooks-ownership.js';
import {
  planMatcherHooks,
  type MatcherHooksDialect,
  type MatcherHooksPlan,
} from '../../src/harness-kit/matcher-hooks.js';
import { thrown } from '../../../../test/support/errors.js';
import { EXAMPLE_HOOK, MILLISECONDS_DIALECT, SECONDS_DIALECT } from '../../../../test/support/matcher-hooks.js';

const C = JSON.stringify(EXAMPLE_HOOK.command);
const RIGHT = `{"name":"blue-agent-capture","type":"command","command":${C},"timeout":10000}`;
const OWN = `{"matcher":"","hooks":[${RIGHT}]}`;

const plan = (
  dialect: MatcherHooksDialect,
  text: string | null,
  desired: boolean,
  owned?: OwnershipRecord,
): MatcherHooksPlan =>
  planMatcherHooks({ text, file: 'settings.json', desired: desired ? EXAMPLE_HOOK : null, owned }, dialect);
const install = (text: string | null, owned?: OwnershipRecord) => plan(MILLISECONDS_DIALECT, text, true, owned);
const remove = (text: string | null, owned?: OwnershipRecord) => plan(MILLISECONDS_DIALECT, text, false, owned);

/** A settings file with the user's own hooks: a named hook with a matcher and a description, and another event. */
const USER = [
  '{',
  '  // mine',
  '  "general": { "vimMode": true },',
  '  "hooks": {',
  '    "SessionEnd": [',
  '      {',
  '        "matcher": "exit",',
  '        "hooks": [{ "name": "notes", "type": "command", "command": "~/bin/notes.sh", "timeout": 5000, ' +
    '"description": "d" }]',
  '      }',
  '    ],',
  '    "BeforeTool": [{ "matcher": "write_file", "hooks": [{ "type": "command", "command": "~/bin/check.sh" }] }]',
  '  }',
  '}',
  '',
].join('\n');

describe('a dialect with a name key and milliseconds', () => {
  it("installs its group after the user's in the event array, as the dialect writes it, laid out like the file", () => {
    const a = install(USER);
    const expected = USER.replace(
      '      }\n    ],',
      [
        '      },',
        '      {',
        '        "matcher": "",',
        '        "hooks": [',
        '          {',
        '            "name": "blue-agent-capture",',
        '            "type": "command",',
        `            "command": ${C},`,
        '            "timeout": 10000',
        '          }',
        '        ]',
        '      }',
        '    ],',
      ].join('\n'),
    );
    expect(a.text).toBe(expected);
    expect(a.managedFound).toBe(0);
    expect(a.owned).toMatchObject({ v: 1, base: 'existing', event: 'SessionEnd', created: [] });
    // Installing again changes nothing; removing with the record gives back the file byte for byte.
    expect(install(a.text, a.owned)).toEqual({ text: a.text, owned: a.owned, managedFound: 1 });
    expect(remove(a.text, a.owned)).toEqual({ text: USER, owned: undefined, managedFound: 1 });
    // Without the record, only the managed group goes and the user's hooks stay as they were.
    expect(remove(a.text).text).toBe(USER);
  });

  it('keeps a right entry whatever its key order and spelling, and the group with no matcher', () => {
    for (const hook of [RIGHT, `{"timeout":1e4,"command":${C},"type":"command","name":"blue-agent-capture"}`]) {
      for (const group of [`{"matcher":"","hooks":[${hook}]}`, `{"hooks":[${hook}]}`]) {
        const text = `{"hooks":{"SessionEnd":[${group}]}}`;
        expect(install(text).text).toBe(text);
      }
    }
  });

  it('brings a stale entry up to date: value by value when its keys are right, whole when they are not', () => {
    const one = (hook: string) => `{"hooks":{"SessionEnd":[{"matcher":"","hooks":[${hook}]}]}}`;
    // Written by the seconds dialect (no name, timeout in seconds): the keys differ, so the object is written anew.
    const seconds = `{"type":"command","command":${C},"timeout":10}`;
    expect(install(one(seconds)).text).toBe(one(RIGHT));
    // The right keys with an old timeout, name or type: only the wrong values change, spacing stays.
    const stale = `{ "name": "old", "type": "command", "command": ${C}, "timeout": 5000 }`;
    expect(install(one(stale)).text).toBe(
      one(`{ "name": "blue-agent-capture", "type": "command", "command": ${C}, "timeout": 10000 }`),
    );
    expect(install(one(`{"name":"blue-agent-capture","type":"prompt","command":${C},"timeout":"10000"}`)).text).toBe(
      one(RIGHT),
    );
    // A repeated or extra key: written anew.
    expect(install(one(`{"name":"a","name":"b","type":"command","command":${C}}`)).text).toBe(one(RIGHT));
    expect(
      install(one(`{"name":"blue-agent-capture","type":"command","command":${C},"timeout":10000,"description":"x"}`))
        .text,
    ).toBe(one(RIGHT));
    // Stale duplicates under another event go; the entry ends up once, in its own group.
    const text = `{"hooks":{"Stop":[{"hooks":[${seconds}]}],"SessionEnd":[{"matcher":"x","hooks":[${stale}]}]}}`;
    const out = install(text);
    expect(out.managedFound).toBe(2);
    expect(out.text).toBe(
      `{"hooks":{"SessionEnd":[{"matcher":"","hooks":[{ "name": "blue-agent-capture", "type": "command", ` +
        `"command": ${C}, "timeout": 10000 }]}]}}`,
    );
  });

  it("the seconds dialect takes this one's entry for stale, and the reverse", () => {
    const mine = `{"hooks":{"SessionEnd":[${OWN}]}}`;
    const theirs = plan(SECONDS_DIALECT, mine, true).text!;
    expect(theirs).toBe(
      `{"hooks":{"SessionEnd":[{"matcher":"","hooks":[{"type":"command","command":${C},"timeout":10}]}]}}`,
    );
    expect(install(theirs).text).toBe(mine);
  });

  it('removal gives back the bytes of every layout, and a missing or blank file as it was', () => {
    const shapes = [
      '{}',
      '{"a":1}',
      '{"hooks":{"SessionEnd":[]}}',
      '{\n  "a": 1 // mine\n}\n',
      '{\r\n  "hooks": {\r\n    "BeforeTool": []\r\n  }\r\n}\r\n',
      '{\n\t"a": [\n\t\t1\n\t]\n}',
      '\uFEFF{"a":1}\n',
      USER,
    ];
    for (const text of shapes) {
      const a = install(text);
      expect(a.text, text).toMatch(
        /"name": ?"blue-agent-capture",\s*"type": ?"command",\s*"command": ?"[^"]+",\s*"timeout": ?10000\s*\}/,
      );
      expect(remove(a.text, a.owned).text, text).toBe(text);
    }
    for (const blank of [null, '', '  \n']) {
      const a = install(blank);
      expect(a.text).toContain('"name": "blue-agent-capture"');
      expect(remove(a.text, a.owned).text).toBe(blank);
    }
  });

  it('names its own harness in messages', () => {
    expect(thrown(() => install('[]')).hint).toBe(
      'Other CLI settings must be a JSON object ({ ... }); fix settings.json so blue-agent can add its SessionEnd ' +
        'hook.',
    );
  });
});

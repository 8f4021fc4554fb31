/**
 * Settings a harness needs before it runs hooks (the profile's capture.hook.requires), planned with the managed hook
 * by the matcher-group planner: added only when absent, never overriding the user's own value, taken out with the
 * hook byte for byte, and left alone once they are the user's.
 */
import fc from 'fast-check';
import { parse as parseJsonc } from 'jsonc-parser';
import { describe, expect, it } from 'vitest';
import type { OwnershipRecord } from '../../src/harness-kit/matcher-hooks-ownership.js';
import { planMatcherHooks, type MatcherHook, type MatcherHooksPlan } from '../../src/harness-kit/matcher-hooks.js';
import { thrown } from '../../../../test/support/errors.js';
import { EXAMPLE_HOOK, MILLISECONDS_DIALECT } from '../../../../test/support/matcher-hooks.js';

const TOOLS: MatcherHook = { ...EXAMPLE_HOOK, requires: [{ key: ['tools', 'enableHooks'], value: true }] };
const IN_HOOKS: MatcherHook = { ...EXAMPLE_HOOK, requires: [{ key: ['hooks', 'enabled'], value: true }] };

const plan = (text: string | null, desired: MatcherHook | null, owned?: OwnershipRecord): MatcherHooksPlan =>
  planMatcherHooks({ text, file: 'settings.json', desired, owned }, MILLISECONDS_DIALECT);

/** Install, then remove with the ledger's record: the original bytes back. */
function roundTrip(
  text: string | null,
  desired: MatcherHook,
): { installed: MatcherHooksPlan; removed: MatcherHooksPlan } {
  const installed = plan(text, desired);
  const removed = plan(installed.text, null, installed.owned);
  return { installed, removed };
}

/** The settings as the harness reads them: JSON with comments (a `//` inside a string is not one). */
const parse = (text: string | null) => parseJsonc(text ?? '') as Record<string, any>;

describe('a required setting', () => {
  it('is added with the hook when absent, creating its parent object, and removal gives back the bytes', () => {
    for (const text of [
      null,
      '',
      '{}\n',
      '{\n  "general": {\n    "vimMode": true\n  }\n}\n',
      '{"general":{"vimMode":true}}',
      '{\r\n\t"ui": { "theme": "dark" } // mine\r\n}\r\n',
    ]) {
      const { installed, removed } = roundTrip(text, TOOLS);
      expect(parse(installed.text).tools, String(text)).toEqual({ enableHooks: true });
      expect(installed.owned).toMatchObject({ settings: [{ key: ['tools', 'enableHooks'], value: true, top: 0 }] });
      expect(removed.text, JSON.stringify(text)).toBe(text === '' ? '' : text);
    }
  });

  it("goes inside an existing parent, after the user's keys, laid out like the file", () => {
    const text = '{\n  "tools": {\n    "sandbox": "docker"\n  }\n}\n';
    const { installed, removed } = roundTrip(text, TOOLS);
    expect(
      installed.text!.startsWith(
        '{\n  "tools": {\n    "sandbox": "docker",\n    "enableHooks": true\n  },\n  "hooks": {',
      ),
    ).toBe(true);
    expect(installed.owned).toMatchObject({ settings: [{ key: ['tools', 'enableHooks'], top: 1 }] });
    expect(removed.text).toBe(text);
  });

  it('can live in the hooks object beside the events, and comes out before the hooks it sits among', () => {
    for (const text of [null, '{\n  "hooks": {\n    "BeforeTool": []\n  }\n}\n']) {
      const { installed, removed } = roundTrip(text, IN_HOOKS);
      const doc = parse(installed.text);
      expect(doc.hooks.enabled).toBe(true);
      expect(doc.hooks.SessionEnd).toHaveLength(1);
      expect(removed.text).toBe(text);
    }
  });

  it('is planned once: the next run changes nothing and keeps the same record', () => {
    const first = plan('{\n  "a": 1\n}\n', TOOLS);
    const second = plan(first.text, TOOLS, first.owned);
    expect(second.text).toBe(first.text);
    expect(second.owned).toEqual(first.owned);
  });

  it('that the user already set as needed is theirs: not added, not recorded, and kept on removal', () => {
    const text = '{\n  "tools": { "enableHooks": true }\n}\n';
    const { installed, removed } = roundTrip(text, TOOLS);
    expect(installed.owned).not.toHaveProperty('settings');
    expect(parse(installed.text).tools).toEqual({ enableHooks: true });
    expect(removed.text).toBe(text);
  });

  it(
    'is never overridden: a user value that keeps hooks off, or a parent that is not an object, is refused with ' +
      'its place',
    () => {
      const off = thrown(() => plan('{\n  "tools": {\n    "enableHooks": false\n  }\n}\n', TOOLS));
      expect(off.code).toBe('NATIVE_CONFIG_CONFLICT');
      expect([off.line, off.column]).toEqual([3, 20]);
      expect(off.message).toContain('tools.enableHooks is false, which keeps Other CLI from running hooks');
      expect(off.hint).toContain('does not override a setting you made');
      const scalar = thrown(() => plan('{"tools": 5}', TOOLS));
      expect(scalar.code).toBe('NATIVE_CONFIG_CONFLICT');
      expect(scalar.message).toContain('"tools" is not an object');
      const twice = thrown(() => plan('{"tools": {}, "tools": {}}', TOOLS));
      expect(twice.message).toContain('"tools" appears more than once');
    },
  );

  it('goes when the profile no longer needs it, the hook staying', () => {
    const first = plan('{\n  "a": 1\n}\n', TOOLS);
    const next = plan(first.text, EXAMPLE_HOOK, first.owned);
    expect(parse(next.text)).not.toHaveProperty('tools');
    expect(parse(next.text).hooks.SessionEnd).toHaveLength(1);
    expect(next.owned).not.toHaveProperty('settings');
    expect(plan(next.text, null, next.owned).text).toBe('{\n  "a": 1\n}\n');
  });

  it("is the user's once they changed its value: kept (and then refused), never removed", () => {
    const first = plan('{}\n', TOOLS);
    const changed = first.text!.replace('"enableHooks": true', '"enableHooks": false');
    expect(plan(changed, null, first.owned).text).toContain('"enableHooks": false');
    expect(thrown(() => plan(changed, TOOLS, first.owned)).code).toBe('NATIVE_CONFIG_CONFLICT');
  });

  it('leaves the parent it created when the user put a key of their own in it, taking only its own', () => {
    const first = plan('{}\n', TOOLS);
    const shared = first.text!.replace('"enableHooks": true', '"sandbox": "docker",\n    "enableHooks": true');
    const removed = plan(shared, null, first.owned);
    expect(parse(removed.text)).toEqual({ tools: { sandbox: 'docker' } });
  });

  it('install then remove gives back any object it was added to (property)', () => {
    const key = fc.constantFrom('general', 'ui', 'tools', 'model', 'a b', 'ü');
    const leaf = fc.oneof(fc.boolean(), fc.integer(), fc.string({ maxLength: 8 }));
    const doc = fc
      .dictionary(key, fc.oneof(leaf, fc.dictionary(fc.constantFrom('sandbox', 'x', 'y'), leaf, { maxKeys: 3 })), {
        maxKeys: 4,
      })
      .filter(
        (d) =>
          (d as Record<string, unknown>).tools === undefined ||
          (typeof d.tools === 'object' && !('enableHooks' in (d.tools as object))),
      );
    fc.assert(
      fc.property(doc, fc.constantFrom(0, 2, 4), (value, indent) => {
        const text = `${JSON.stringify(value, null, indent)}\n`;
        const { installed, removed } = roundTrip(text, TOOLS);
        expect(parse(installed.text).tools.enableHooks).toBe(true);
        expect(removed.text).toBe(text);
      }),
      { numRuns: 200 },
    );
  });
});

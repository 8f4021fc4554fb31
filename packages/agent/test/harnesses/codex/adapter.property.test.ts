import fc from 'fast-check';
import { parse } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { codex } from '../../../src/harnesses/codex/index.js';
import { listHandlers, userView } from '../../../src/harnesses/codex/model.js';
import { tomlString } from '../../../src/harnesses/codex/plan-toml.js';
import { buildManagedHook } from '../../../src/harness-kit/signature.js';
import type { ManagedHook, OwnershipRecord } from '../../../src/harnesses/types.js';

const SELF = { node: '/usr/bin/node', entry: '/opt/blue-agent/bin/blue-agent.js' };
const desired = buildManagedHook(SELF, 'codex', 'codex-v0_145_0', 'SessionEnd', 3);
const newer = buildManagedHook(SELF, 'codex', 'codex-v0_150_0', 'SessionEnd', 3);
const FILE = '/home/me/.codex/config.toml';
const RUNS = { numRuns: 200 };

const plan = (text: string | null, hook: ManagedHook | null, owned?: OwnershipRecord) =>
  codex.planHook({ text, file: FILE, desired: hook, owned });
const managed = (text: string) => listHandlers(parse(text).hooks).filter((h) => h.managed).length;

// ---- generators of user config.toml documents -------------------------------------------------------------------

const chars = fc.constantFrom(
  'a',
  'b',
  'z',
  ' ',
  '"',
  "'",
  '\\',
  '#',
  '[',
  ']',
  '{',
  '}',
  '=',
  '.',
  '\t',
  'é',
  '✓',
  '🚀',
  '\n',
);
const text = fc.string({ unit: chars, maxLength: 10 });
const bare = fc.stringMatching(/^[a-z][a-z0-9_-]{0,6}$/);
const comment = text.map((t) => `#${t.replace(/\n/g, ' ')}`);

const value = fc.oneof(
  fc.integer({ min: -1000, max: 1000 }).map(String),
  fc.boolean().map(String),
  text.map(tomlString),
  text.filter((t) => !t.includes("'") && !t.includes('\n')).map((t) => `'${t}'`),
  text.map((t) => `"""${t.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"""`),
  fc.constantFrom('1979-05-27T07:32:00Z', '1979-05-27 07:32:00', '3.5', 'inf', '0x1F'),
  fc.array(fc.integer({ min: 0, max: 9 }), { maxLength: 3 }).map((xs) => `[${xs.join(', ')}]`),
  fc.tuple(fc.integer({ min: 0, max: 9 }), comment).map(([x, c]) => `[\n  ${x}, ${c}\n  "two",\n]`),
  fc.tuple(fc.integer({ min: 0, max: 9 }), text).map(([x, t]) => `{ n = ${x}, s = ${tomlString(t)} }`),
);

const trailing = fc.option(
  comment.map((c) => ` ${c}`),
  { nil: '' },
);
const indent = fc.constantFrom('', '', '  ', '\t');
const keyValues = fc
  .uniqueArray(fc.tuple(bare, value, trailing, indent), { selector: ([k]) => k, maxLength: 3 })
  .map((kvs) => kvs.map(([k, v, c, i]) => `${i}${k} = ${v}${c}`));
const filler = fc.array(fc.oneof(comment, fc.constant(''), fc.constant('   ')), { maxLength: 2 });

const table = fc.tuple(bare, keyValues, filler).map(([name, kvs, fill]) => (i: number) => [
  `[t${i}.${name}]`,
  ...kvs,
  ...fill,
]);
const quotedTable = fc.tuple(text, keyValues).map(([name, kvs]) => (i: number) => [
  `[projects.${tomlString(`${name}${i}`)}]`,
  ...kvs,
]);
const state = fc.tuple(fc.boolean(), fc.stringMatching(/^[0-9a-f]{4,8}$/)).map(([enabled, hash]) => (i: number) => [
  `[hooks.state.${tomlString(`/home/me/.codex/config.toml:session_end:${i}:0`)}]`,
  `enabled = ${enabled}`,
  `trusted_hash = "sha256:${hash}" # trusted via /hooks`,
]);
const handler = fc
  .tuple(text, fc.option(fc.integer({ min: 0, max: 30 }), { nil: undefined }), filler)
  .map(([command, timeout, fill]) => (event: string) => [
    `[[hooks.${event}.hooks]]`,
    'type = "command"',
    `command = ${tomlString(command)}`,
    ...(timeout === undefined ? [] : [`timeout = ${timeout}`]),
    ...fill,
  ]);
const hookGroup = fc
  .tuple(
    fc.constantFrom('SessionEnd', 'SessionEnd', 'Stop', 'PreToolUse'),
    fc.option(text.map(tomlString), { nil: undefined }),
    fc.oneof(fc.array(handler, { minLength: 1, maxLength: 2 }), fc.constant('inline' as const)),
  )
  .map(([event, matcher, handlers]) => (_: number) => [
    `[[hooks.${event}]]`,
    ...(matcher === undefined ? [] : [`matcher = ${matcher}`]),
    ...(handlers === 'inline'
      ? [`hooks = [{ type = "command", command = "echo inline" }]`]
      : handlers.flatMap((h) => h(event))),
  ]);

const userDocument = fc
  .tuple(
    fc.array(fc.oneof(keyValues, filler), { maxLength: 2 }),
    fc.array(fc.oneof(table, quotedTable, state, hookGroup, hookGroup), { maxLength: 6 }),
    fc.constantFrom('\n', '\r\n'),
    fc.boolean(),
  )
  .map(([root, sections, eol, finalNewline]) => {
    const lines = [...root.flat(), ...sections.flatMap((render, i) => render(i))];
    const body = lines.join('\n').replace(/\n/g, eol);
    return finalNewline && body !== '' ? body + eol : body;
  })
  .filter((doc) => {
    try {
      parse(doc);
      return true;
    } catch {
      return false;
    }
  });

describe('codex config.toml planning, on generated user documents', () => {
  it('install then remove gives back the original bytes; user entries never change', () => {
    fc.assert(
      fc.property(userDocument, (original) => {
        const installed = plan(original, desired);
        const text = installed.text!;
        expect(managed(text)).toBe(1);
        expect(userView(parse(text))).toBe(userView(parse(original)));
        const removed = plan(text, null, installed.owned);
        expect(removed.text).toBe(original);
      }),
      RUNS,
    );
  });

  it('install twice = install once', () => {
    fc.assert(
      fc.property(userDocument, (original) => {
        const once = plan(original, desired);
        const twice = plan(once.text, desired, once.owned);
        expect(twice.text).toBe(once.text);
        expect(twice.owned).toEqual(once.owned);
      }),
      RUNS,
    );
  });

  it('a profile change updates in place and removal still restores the original', () => {
    fc.assert(
      fc.property(userDocument, (original) => {
        const first = plan(original, desired);
        const second = plan(first.text, newer, first.owned);
        expect(second.text).toBe(first.text!.replace(desired.command, newer.command));
        expect(plan(second.text, null, second.owned).text).toBe(original);
      }),
      RUNS,
    );
  });

  it('without a ledger record, removal still leaves exactly the user entries', () => {
    fc.assert(
      fc.property(userDocument, (original) => {
        const text = plan(original, desired).text!;
        const removed = plan(text, null, undefined).text!;
        expect(managed(removed)).toBe(0);
        expect(userView(parse(removed))).toBe(userView(parse(original)));
      }),
      RUNS,
    );
  });

  it('stale and duplicated managed entries anywhere collapse to one right entry', () => {
    const stale = "'/old/node' '/old/lib/blue-agent.js' capture --harness codex --profile codex-v0_140_0";
    const withManaged = fc.tuple(userDocument, fc.nat(), fc.nat(), fc.boolean()).map(([doc, a, b, dup]) => {
      const eol = doc.includes('\r\n') ? '\r\n' : '\n';
      const block = [
        '[[hooks.SessionEnd]]',
        '[[hooks.SessionEnd.hooks]]',
        'type = "command"',
        `command = ${tomlString(stale)}`,
        'timeout = 1',
        '',
      ].join(eol);
      // Insert at header boundaries only, so the document keeps its meaning.
      const cuts = [...doc.matchAll(/(^|\n)\[/g)].map((m) => m.index + m[1]!.length);
      const spots = [doc.length, ...cuts];
      const at = (n: number) => spots[n % spots.length]!;
      const terminated = doc === '' || doc.endsWith('\n') ? doc : doc + eol;
      let out = terminated;
      const first = at(a) === doc.length ? out.length : at(a);
      out = out.slice(0, first) + block + out.slice(first);
      if (dup) {
        const second = at(b) === doc.length ? out.length : at(b) + (at(b) >= first ? block.length : 0);
        out = out.slice(0, second) + block + out.slice(second);
      }
      return out;
    });
    fc.assert(
      fc.property(withManaged, (original) => {
        let before: Record<string, unknown>;
        try {
          before = parse(original);
        } catch {
          return; // an insertion point that does not keep the document valid is not a case
        }
        const result = plan(original, desired);
        expect(result.managedFound).toBe(managed(original));
        expect(managed(result.text!)).toBe(1);
        expect(userView(parse(result.text!))).toBe(userView(before));
        expect(plan(result.text, desired, result.owned).text).toBe(result.text);
        const removed = plan(result.text, null, result.owned).text!;
        expect(managed(removed)).toBe(0);
        expect(userView(parse(removed))).toBe(userView(before));
      }),
      RUNS,
    );
  });
});

// ---- hooks.json ---------------------------------------------------------------------------------------------------

const jsonHandler = fc.record({
  type: fc.constant('command'),
  command: text,
  timeout: fc.option(fc.integer({ min: 1, max: 9 }), { nil: undefined }),
});
const jsonDocument = fc
  .tuple(
    fc.option(text, { nil: undefined }),
    fc.option(
      fc.dictionary(
        fc.constantFrom('SessionEnd', 'Stop', 'PreToolUse'),
        fc.array(fc.record({ hooks: fc.array(jsonHandler, { maxLength: 2 }) }), { maxLength: 2 }),
      ),
      { nil: undefined },
    ),
    fc.constantFrom(0, 2, 4, '\t'),
    fc.constantFrom('\n', '\r\n'),
    fc.boolean(),
  )
  .map(([description, hooks, space, eol, finalNewline]) => {
    const doc = JSON.stringify(
      { ...(description === undefined ? {} : { description }), ...(hooks === undefined ? {} : { hooks }) },
      null,
      space,
    );
    return doc.replace(/\n/g, eol) + (finalNewline ? eol : '');
  });

describe('codex hooks.json planning, on generated documents', () => {
  it('install then remove gives back the original bytes; install twice = once; user entries never change', () => {
    fc.assert(
      fc.property(jsonDocument, (original) => {
        const file = '/home/me/.codex/hooks.json';
        const installed = codex.planHook({ text: original, file, desired, owned: undefined });
        const text = installed.text!;
        expect(listHandlers((JSON.parse(text) as { hooks: unknown }).hooks).filter((h) => h.managed)).toHaveLength(1);
        expect(userView(JSON.parse(text) as Record<string, unknown>)).toBe(
          userView(JSON.parse(original) as Record<string, unknown>),
        );
        expect(codex.planHook({ text, file, desired, owned: installed.owned }).text).toBe(text);
        expect(codex.planHook({ text, file, desired: null, owned: installed.owned }).text).toBe(original);
      }),
      RUNS,
    );
  });
});

describe('codex planning on hostile input', () => {
  const tomlish = fc.string({
    unit: fc.constantFrom(
      '[',
      ']',
      '[[',
      ']]',
      'hooks',
      '.',
      'SessionEnd',
      ' = ',
      '"',
      "'",
      '"""',
      '\n',
      '\r\n',
      '#',
      '{',
      '}',
      ',',
      'x',
      '1',
      'command',
      desired.command,
      'capture --harness codex',
      '__proto__',
    ),
    maxLength: 40,
  });
  const record = fc.oneof(
    fc.constant(undefined),
    fc.anything(),
    fc.record({
      format: fc.constantFrom('toml', 'json'),
      created: fc.anything(),
      lead: fc.anything(),
      gap: fc.anything(),
      container: fc.anything(),
      event: fc.anything(),
      inner: fc.anything(),
    }),
  );

  it('returns a plan or throws a parse/conflict error, never anything else', () => {
    fc.assert(
      fc.property(
        tomlish,
        fc.constantFrom(FILE, '/home/me/.codex/hooks.json'),
        fc.constantFrom(desired, null),
        record,
        (text, file, hook, owned) => {
          try {
            const result = codex.planHook({ text, file, desired: hook, owned: owned as OwnershipRecord | undefined });
            if (hook !== null) expect(result.text).not.toBeNull();
          } catch (error) {
            const e = error as { code?: string; cause?: unknown };
            expect(['NATIVE_CONFIG_PARSE', 'NATIVE_CONFIG_CONFLICT']).toContain(e.code);
            expect(e.cause).toBeUndefined();
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('a wrong or foreign ledger record never costs a user entry', () => {
    fc.assert(
      fc.property(userDocument, record, record, (original, first, second) => {
        const installed = plan(original, desired, first as OwnershipRecord | undefined);
        expect(managed(installed.text!)).toBe(1);
        expect(userView(parse(installed.text!))).toBe(userView(parse(original)));
        const removed = plan(installed.text, null, second as OwnershipRecord | undefined).text;
        if (removed !== null) {
          expect(managed(removed)).toBe(0);
          expect(userView(parse(removed))).toBe(userView(parse(original)));
        } else {
          expect(userView(parse(original))).toBe(userView({}));
        }
      }),
      RUNS,
    );
  });
});

import fc from 'fast-check';
import { parse } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { kimi } from '../../../src/harnesses/kimi/index.js';
import { buildManagedHook, isManagedCommand } from '../../../src/harness-kit/signature.js';
import type { ManagedHook } from '../../../src/harnesses/types.js';
import { tomlString } from '../../../src/harness-kit/toml-text.js';

const FILE = '/home/me/.kimi/config.toml';
const RUNS = { numRuns: 150 };

// ---------------------------------------------------------------------------------------------------------------
// Generators of valid Kimi config.toml documents: root keys, plain tables and [[hooks]] tables, with comments, blank
// lines, CRLF or LF, and with or without a final line break.

const text = fc.string({ unit: 'grapheme', maxLength: 12 });
const comment = text.map((t) => `# ${t.replace(/[\r\n]/g, ' ')}`);

const scalar = fc.oneof(
  text.map(tomlString),
  fc.integer({ min: -1000, max: 100000 }).map(String),
  fc.boolean().map(String),
  fc.array(fc.integer({ min: 0, max: 9 }), { maxLength: 3 }).map((xs) => `[${xs.join(', ')}]`),
  fc.constantFrom(
    '"""\nmulti\nline"""',
    "'''lit''eral'''",
    "'C:\\path'",
    '{ a = 1, b = "x" }',
    '1979-05-27 07:32:00Z',
    '3.5',
  ),
);

const trailing = fc.option(comment, { nil: undefined }).map((c) => (c === undefined ? '' : `  ${c}`));

const keyval = (key: string) => fc.tuple(scalar, trailing).map(([value, tail]) => `${key} = ${value}${tail}`);

const filler = fc.array(fc.oneof(comment, fc.constant('')), { maxLength: 2 });

const hookEvent = fc.constantFrom('SessionEnd', 'Stop', 'PreToolUse', 'SessionStart');
const userCommand = fc.oneof(
  text,
  fc.constantFrom(
    '~/bin/notify.sh',
    '/usr/bin/blue-agent capture --harness codex',
    '/usr/bin/blue-agent status --harness kimi',
    'blue-agent-capture --harness kimi',
  ),
);

const userHook = fc
  .record({
    event: hookEvent,
    command: userCommand,
    matcher: fc.option(fc.constantFrom('', 'Shell', 'Read.*'), { nil: undefined }),
    timeout: fc.option(fc.integer({ min: 1, max: 600 }), { nil: undefined }),
    before: filler,
    headerComment: trailing,
  })
  .map((h) => [
    ...h.before,
    `[[hooks]]${h.headerComment}`,
    `event = ${tomlString(h.event)}`,
    ...(h.matcher === undefined ? [] : [`matcher = ${tomlString(h.matcher)}`]),
    `command = ${tomlString(h.command)}`,
    ...(h.timeout === undefined ? [] : [`timeout = ${h.timeout}`]),
  ]);

const plainTable = (name: string) =>
  fc
    .tuple(filler, fc.array(fc.nat(3), { maxLength: 3 }))
    .chain(([before, keys]) =>
      fc.tuple(...[...new Set(keys)].map((k) => keyval(`key${k}`))).map((kvs) => [...before, `[${name}]`, ...kvs]),
    );

const documentLines = fc
  .record({
    head: filler,
    rootKeys: fc.uniqueArray(fc.constantFrom('default_model', 'theme', 'default_yolo', '"quoted key"', 'extra'), {
      maxLength: 3,
    }),
    sections: fc.array(fc.oneof(userHook, fc.constant('table' as const)), { maxLength: 5 }),
    tail: filler,
  })
  .chain((doc) => {
    let tables = 0;
    const sections = doc.sections.map((section) =>
      section === 'table' ? plainTable(`table${tables++}`) : fc.constant(section),
    );
    return fc
      .tuple(fc.tuple(...doc.rootKeys.map(keyval)), fc.tuple(...sections))
      .map(([rootKvs, bodies]) => [...doc.head, ...rootKvs, ...bodies.flat(), ...doc.tail]);
  });

const document = fc
  .record({ lines: documentLines, eol: fc.constantFrom('\n', '\r\n'), finalBreak: fc.boolean() })
  .map(({ lines, eol, finalBreak }) => (lines.length === 0 ? '' : lines.join(eol) + (finalBreak ? eol : '')));

const hook: fc.Arbitrary<ManagedHook> = fc
  .record({
    node: fc.constantFrom('/usr/bin/node', '/opt/node 24/bin/node', "/home/o'neil/.nvm/node"),
    dir: fc.constantFrom('/opt/blue-agent', '/srv/zoë/工具', '/tmp/we"ird\\dir'),
    profile: fc.constantFrom('kimi-v1_28_0', 'kimi-v2_0_0'),
    timeout: fc.integer({ min: 1, max: 600 }),
  })
  .map((h) =>
    buildManagedHook({ node: h.node, entry: `${h.dir}/bin/blue-agent.js` }, 'kimi', h.profile, 'SessionEnd', h.timeout),
  );

function managed(textValue: string): unknown[] {
  const data = parse(textValue) as { hooks?: Record<string, unknown>[] };
  return (data.hooks ?? []).filter(
    (h) => h.event === 'SessionEnd' && typeof h.command === 'string' && isManagedCommand(h.command, 'kimi'),
  );
}

function userPart(textValue: string): unknown {
  const data = parse(textValue) as Record<string, unknown>;
  const hooks = ((data.hooks as Record<string, unknown>[] | undefined) ?? []).filter(
    (h) => !(h.event === 'SessionEnd' && typeof h.command === 'string' && isManagedCommand(h.command, 'kimi')),
  );
  return { ...data, hooks };
}

describe('kimi planHook properties', () => {
  it('generates documents smol-toml accepts', () => {
    fc.assert(
      fc.property(document, (doc) => {
        parse(doc);
      }),
      RUNS,
    );
  });

  it('install then remove gives back the original bytes; user entries never change', () => {
    fc.assert(
      fc.property(document, hook, (original, desired) => {
        const installed = kimi.planHook({ text: original, file: FILE, desired, owned: undefined });
        const textValue = installed.text!;
        expect(managed(textValue)).toHaveLength(1);
        expect(userPart(textValue)).toEqual(userPart(original));
        expect(textValue.startsWith(original)).toBe(true);

        const removed = kimi.planHook({ text: textValue, file: FILE, desired: null, owned: installed.owned });
        expect(removed.text).toBe(original);
        expect(removed.owned).toBeUndefined();
      }),
      RUNS,
    );
  });

  it('installing twice is installing once', () => {
    fc.assert(
      fc.property(document, hook, (original, desired) => {
        const once = kimi.planHook({ text: original, file: FILE, desired, owned: undefined });
        const twice = kimi.planHook({ text: once.text, file: FILE, desired, owned: once.owned });
        expect(twice.text).toBe(once.text);
        expect(twice.owned).toEqual(once.owned);
        expect(twice.managedFound).toBe(1);
      }),
      RUNS,
    );
  });

  it('a changed hook replaces the managed table in place and can still be removed exactly', () => {
    fc.assert(
      fc.property(document, hook, hook, (original, first, second) => {
        const installed = kimi.planHook({ text: original, file: FILE, desired: first, owned: undefined });
        const updated = kimi.planHook({ text: installed.text, file: FILE, desired: second, owned: installed.owned });
        expect(managed(updated.text!)).toHaveLength(1);
        expect(userPart(updated.text!)).toEqual(userPart(original));
        const removed = kimi.planHook({ text: updated.text, file: FILE, desired: null, owned: updated.owned });
        expect(removed.text).toBe(original);
      }),
      RUNS,
    );
  });

  it('starting from a missing file, install then remove leaves no file', () => {
    fc.assert(
      fc.property(hook, (desired) => {
        const installed = kimi.planHook({ text: null, file: FILE, desired, owned: undefined });
        const removed = kimi.planHook({ text: installed.text, file: FILE, desired: null, owned: installed.owned });
        expect(removed.text).toBeNull();
      }),
      { numRuns: 30 },
    );
  });
});

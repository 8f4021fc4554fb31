import fc from 'fast-check';
import { createScanner, stripComments } from 'jsonc-parser';
import { describe, expect, it } from 'vitest';
import { BlueError } from '@blue-agent/contract/errors.js';
import { claude } from '../../../src/harnesses/claude/index.js';
import { buildManagedHook, isManagedCommand } from '../../../src/harness-kit/signature.js';
import type { HookPlan, ManagedHook, OwnershipRecord } from '../../../src/harnesses/types.js';

const RUNS = { numRuns: 200 };
const desired: ManagedHook = buildManagedHook(
  { node: '/usr/bin/node', entry: '/opt/blue-agent/bin/blue-agent.js' },
  'claude',
  'claude-v2_0_12',
  'SessionEnd',
  10,
);
const OUR_GROUP = { matcher: '', hooks: [{ type: 'command', command: desired.command, timeout: 10 }] };

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Obj = { [key: string]: Json };

function install(text: string | null, owned?: OwnershipRecord): HookPlan {
  return claude.planHook({ text, file: 'settings.json', desired, owned });
}
function remove(text: string | null, owned?: OwnershipRecord): HookPlan {
  return claude.planHook({ text, file: 'settings.json', desired: null, owned });
}

/** JSON.parse keeps a "__proto__" key as data, which a parser that assigns properties would not. */
function read(text: string): Obj {
  return JSON.parse(stripComments(text.replace(/^\uFEFF/, ''))) as Obj;
}

const isManaged = (hook: Json): boolean =>
  hook !== null &&
  typeof hook === 'object' &&
  !Array.isArray(hook) &&
  typeof hook.command === 'string' &&
  isManagedCommand(hook.command, 'claude');

function managedIn(doc: Obj): Json[] {
  const hooks = doc.hooks;
  if (hooks === null || typeof hooks !== 'object' || Array.isArray(hooks)) return [];
  return Object.values(hooks).flatMap((groups) =>
    Array.isArray(groups)
      ? groups.flatMap((group) =>
          group !== null && typeof group === 'object' && !Array.isArray(group) && Array.isArray(group.hooks)
            ? group.hooks.filter(isManaged)
            : [],
        )
      : [],
  );
}

/**
 * The user's entries: managed hooks dropped from groups, groups that held only managed hooks dropped, and event
 * arrays / the hooks object dropped when that left them empty.
 */
function userEntries(doc: Obj): Obj {
  const copy = structuredClone(doc);
  const hooks = copy.hooks;
  if (hooks === null || typeof hooks !== 'object' || Array.isArray(hooks)) return copy;
  let emptiedAll = Object.keys(hooks).length > 0;
  for (const [event, groups] of Object.entries(hooks)) {
    if (!Array.isArray(groups)) {
      emptiedAll = false;
      continue;
    }
    const kept = groups.flatMap((group): Json[] => {
      if (group === null || typeof group !== 'object' || Array.isArray(group) || !Array.isArray(group.hooks))
        return [group];
      const userHooks = group.hooks.filter((h) => !isManaged(h));
      if (group.hooks.length > 0 && userHooks.length === 0) return [];
      return [{ ...group, hooks: userHooks }];
    });
    if (kept.length === 0 && groups.length > 0) delete hooks[event];
    else {
      hooks[event] = kept;
      emptiedAll = false;
    }
  }
  if (emptiedAll) delete copy.hooks;
  return copy;
}

/** Empty event arrays and an empty `hooks` object mean the same to Claude Code as absent ones. */
function withoutEmptyContainers(doc: Obj): Obj {
  const copy = structuredClone(doc);
  const hooks = copy.hooks;
  if (hooks === null || typeof hooks !== 'object' || Array.isArray(hooks)) return copy;
  for (const [event, groups] of Object.entries(hooks))
    if (Array.isArray(groups) && groups.length === 0) delete hooks[event];
  if (Object.keys(hooks).length === 0) delete copy.hooks;
  return copy;
}

const loosely = (doc: Obj): Obj => withoutEmptyContainers(userEntries(doc));

// ---------------------------------------------------------------------------------------------------------------
// Generators

const key = fc
  .oneof(
    fc.constantFrom(
      'model',
      'env',
      'permissions',
      'theme',
      'statusLine',
      '权限',
      'clé',
      '🚀 launch',
      'ключ',
      '',
      '0',
      '42',
    ),
    fc.string({ unit: 'grapheme', maxLength: 8 }),
  )
  .filter((k) => k !== '__proto__' && k !== 'hooks');
const value = fc.jsonValue({ maxDepth: 3, stringUnit: 'grapheme' }) as fc.Arbitrary<Json>;
const userCommand = fc
  .oneof(
    fc.constantFrom(
      'say done',
      '~/bin/notify.sh',
      "echo '再见 🌙'",
      'node /opt/tool.js capture --harness claude',
      'blue-agent status',
    ),
    fc.string({ unit: 'grapheme', maxLength: 24 }),
  )
  .filter((c) => !isManagedCommand(c, 'claude'));
const userHook = fc
  .record({
    type: fc.constant('command'),
    command: userCommand,
    timeout: fc.option(fc.integer({ min: 1, max: 600 }), { nil: undefined }),
  })
  .map((h) => JSON.parse(JSON.stringify(h)) as Obj);
const group = fc
  .record({
    matcher: fc.option(fc.constantFrom('', 'Bash', 'clear', '*', 'Édition|写'), { nil: undefined }),
    hooks: fc.array(userHook, { maxLength: 3 }),
  })
  .map((g) => JSON.parse(JSON.stringify(g)) as Obj);
const otherEvent = fc.constantFrom(
  'PreToolUse',
  'PostToolUse',
  'Stop',
  'SessionStart',
  'Notification',
  'UserPromptSubmit',
);

interface Shape {
  user: [string, Json][];
  hooks: { others: [string, Json][]; sessionEnd: Json[] | undefined; at: number } | undefined;
  hooksAt: number;
}

const shape: fc.Arbitrary<Shape> = fc.record({
  user: fc.uniqueArray(fc.tuple(key, value), { maxLength: 6, selector: ([k]) => k }),
  hooks: fc.option(
    fc.record({
      others: fc.uniqueArray(fc.tuple(otherEvent, fc.array(group, { maxLength: 2 }) as fc.Arbitrary<Json>), {
        maxLength: 3,
        selector: ([k]) => k,
      }),
      sessionEnd: fc.option(fc.array(group, { maxLength: 3 }) as fc.Arbitrary<Json[]>, { nil: undefined }),
      at: fc.nat(),
    }),
    { nil: undefined },
  ),
  hooksAt: fc.nat(),
});

const format: fc.Arbitrary<Format> = fc.record({
  indent: fc.constantFrom<number | string>(2, 4, '\t'),
  eol: fc.constantFrom('\n', '\r\n'),
  finalNewline: fc.boolean(),
  comment: fc.boolean(),
});

function insertAt<T>(list: T[], at: number, item: T): T[] {
  const i = at % (list.length + 1);
  return [...list.slice(0, i), item, ...list.slice(i)];
}

function build(s: Shape): Obj {
  let entries: [string, Json][] = s.user;
  if (s.hooks !== undefined) {
    let events = s.hooks.others;
    if (s.hooks.sessionEnd !== undefined) events = insertAt(events, s.hooks.at, ['SessionEnd', s.hooks.sessionEnd]);
    entries = insertAt(entries, s.hooksAt, ['hooks', Object.fromEntries(events)]);
  }
  return Object.fromEntries(entries);
}

interface Format {
  indent: number | string;
  eol: string;
  finalNewline: boolean;
  comment: boolean;
}

function write(doc: Obj, f: Format): string {
  let text = JSON.stringify(doc, null, f.indent);
  // A user comment on the opening line, when there is a line to put it on.
  if (f.comment && text.startsWith('{\n')) text = `{ // réglages ✓${text.slice(1)}`;
  return text.replace(/\n/g, f.eol) + (f.finalNewline ? f.eol : '');
}

const managedCommand = fc
  .record({
    node: fc.constantFrom(
      '/usr/bin/node',
      '/usr/local/old/bin/node',
      '/home/me/.nvm/versions/node/v22.1.0/bin/node',
      '/opt/my node/bin/node',
    ),
    entry: fc.constantFrom(
      '/opt/blue-agent/bin/blue-agent.js',
      '/home/me/.npm/lib/node_modules/blue-agent/bin/blue-agent.js',
      '/usr/local/bin/blue-agent',
    ),
    profile: fc.constantFrom('claude-v1_0_85', 'claude-v2_0_12'),
  })
  .map((m) => buildManagedHook({ node: m.node, entry: m.entry }, 'claude', m.profile, 'SessionEnd', 10).command);
const managedHook = fc
  .record({
    command: managedCommand,
    timeout: fc.option(fc.integer({ min: 1, max: 60 }), { nil: undefined }),
    extra: fc.boolean(),
  })
  .map(
    (h): Obj =>
      JSON.parse(
        JSON.stringify({
          type: 'command',
          command: h.command,
          timeout: h.timeout,
          ...(h.extra ? { async: true } : {}),
        }),
      ) as Obj,
  );

/** Places managed hooks in own groups or inside user groups, on SessionEnd or another event. */
function withManaged(doc: Obj, placements: { hook: Obj; where: 'own' | 'inside'; event: string; at: number }[]): Obj {
  const copy = structuredClone(doc);
  if (copy.hooks === undefined) copy.hooks = {};
  const hooks = copy.hooks as Obj;
  for (const p of placements) {
    const groups = (Array.isArray(hooks[p.event]) ? hooks[p.event] : (hooks[p.event] = [])) as Json[];
    const users = groups.filter(
      (g): g is Obj =>
        g !== null && typeof g === 'object' && !Array.isArray(g) && Array.isArray(g.hooks) && g.hooks.length > 0,
    );
    if (p.where === 'inside' && users.length > 0) {
      const target = users[p.at % users.length]!;
      target.hooks = insertAt(target.hooks as Json[], p.at, p.hook);
    } else {
      hooks[p.event] = insertAt(groups, p.at, { matcher: '', hooks: [p.hook] });
    }
  }
  return copy;
}

const placements = fc.array(
  fc.record({
    hook: managedHook,
    where: fc.constantFrom<'own' | 'inside'>('own', 'inside'),
    event: fc.constantFrom('SessionEnd', 'SessionEnd', 'Stop'),
    at: fc.nat(),
  }),
  { minLength: 1, maxLength: 4 },
);

/** Puts comments after some `{`, `[`, `,` and `:` tokens: line comments where a line break follows, else block ones. */
function withComments(text: string, picks: readonly number[]): string {
  const scanner = createScanner(text, false);
  const spots: number[] = [];
  for (let kind = scanner.scan(); kind !== 17; kind = scanner.scan()) {
    if (kind === 1 || kind === 3 || kind === 5 || kind === 6) spots.push(scanner.getPosition());
  }
  if (spots.length === 0) return text;
  const chosen = [...new Set(picks.map((p) => spots[p % spots.length]!))].sort((a, b) => b - a);
  let out = text;
  for (const at of chosen) {
    const lineEnds = out[at] === '\n' || out.startsWith('\r\n', at);
    out = out.slice(0, at) + (lineEnds && at % 2 === 0 ? ' // note ✓' : ' /* note */ ') + out.slice(at);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------

describe('claude planHook properties', () => {
  it('install then remove (with the returned record) gives back the original bytes', () => {
    fc.assert(
      fc.property(shape, format, (s, f) => {
        const text = write(build(s), f);
        const added = install(text);
        expect(added.managedFound).toBe(0);
        expect(added.text).not.toBe(text);
        const removed = remove(added.text, added.owned);
        expect(removed.text).toBe(text);
        expect(removed.owned).toBeUndefined();
      }),
      RUNS,
    );
  });

  it('installing twice equals installing once', () => {
    fc.assert(
      fc.property(shape, format, (s, f) => {
        const once = install(write(build(s), f));
        const twice = install(once.text, once.owned);
        expect(twice.text).toBe(once.text);
        expect(JSON.stringify(twice.owned)).toBe(JSON.stringify(once.owned));
        expect(twice.managedFound).toBe(1);
        // A ledger that lost its record changes nothing either.
        expect(install(once.text).text).toBe(once.text);
      }),
      RUNS,
    );
  });

  it("install keeps the user's entries deep-equal and the file's line endings, adds exactly one managed hook", () => {
    fc.assert(
      fc.property(shape, format, (s, f) => {
        const text = write(build(s), f);
        // Compared with the text as parsed (the generator's -0 is written as 0).
        const original = read(text);
        const out = install(text).text!;
        const after = read(out);
        const sessionEnd = (after.hooks as Obj).SessionEnd as Json[];
        expect(sessionEnd[sessionEnd.length - 1]).toEqual(OUR_GROUP);
        expect(managedIn(after)).toHaveLength(1);
        sessionEnd.pop();
        if (!('hooks' in original)) {
          expect(after.hooks).toEqual({ SessionEnd: [] });
          delete after.hooks;
        } else if (!('SessionEnd' in (original.hooks as Obj))) {
          delete (after.hooks as Obj).SessionEnd;
        }
        expect(after).toEqual(original);
        // A file without any line break says nothing about its line endings; new lines then use LF.
        if (f.eol === '\r\n' && text.includes('\n')) expect(out.replace(/\r\n/g, '')).not.toContain('\n');
        else expect(out).not.toContain('\r');
        expect(out.endsWith(f.eol)).toBe(f.finalNewline);
        if (f.comment && text.startsWith('{ //')) expect(out.startsWith('{ // réglages ✓')).toBe(true);
      }),
      RUNS,
    );
  });

  it("remove without a record takes every managed hook out and keeps the user's entries", () => {
    fc.assert(
      fc.property(shape, format, (s, f) => {
        const text = write(build(s), f);
        const original = read(text);
        const out = remove(install(text).text).text!;
        const after = read(out);
        expect(managedIn(after)).toEqual([]);
        expect(loosely(after)).toEqual(loosely(original));
      }),
      RUNS,
    );
  });

  it('stale, duplicated and misplaced managed hooks collapse to exactly the desired one', () => {
    fc.assert(
      fc.property(shape, format, placements, (s, f, p) => {
        const text = write(withManaged(build(s), p), f);
        const messy = read(text);
        const plan = install(text);
        expect(plan.managedFound).toBe(p.length);
        const after = read(plan.text!);
        const managed = managedIn(after);
        expect(managed).toEqual([{ type: 'command', command: desired.command, timeout: 10 }]);
        const ownGroups = ((after.hooks as Obj).SessionEnd as Json[]).filter(
          (g) =>
            (g as Obj).hooks !== undefined &&
            ((g as Obj).hooks as Json[]).every(isManaged) &&
            ((g as Obj).hooks as Json[]).length > 0,
        );
        expect(ownGroups).toHaveLength(1);
        expect(loosely(after)).toEqual(loosely(messy));
        expect(install(plan.text, plan.owned).text).toBe(plan.text);
        const removed = read(remove(plan.text, plan.owned).text!);
        expect(managedIn(removed)).toEqual([]);
        expect(loosely(removed)).toEqual(loosely(messy));
      }),
      RUNS,
    );
  });

  it('comments anywhere: install then remove gives the original bytes back; installing twice changes nothing', () => {
    fc.assert(
      fc.property(shape, format, fc.array(fc.nat(), { minLength: 1, maxLength: 6 }), (s, f, picks) => {
        const text = withComments(write(build(s), f), picks);
        const added = install(text);
        expect(install(added.text, added.owned).text).toBe(added.text);
        expect(remove(added.text, added.owned).text).toBe(text);
        expect(managedIn(read(added.text!))).toHaveLength(1);
      }),
      RUNS,
    );
  });

  it('hostile text never crashes: a plan, or a parse or conflict error', () => {
    const piece = fc.constantFrom(
      '{',
      '}',
      '[',
      ']',
      ',',
      ':',
      '"',
      'a',
      ' ',
      '\n',
      '/',
      '*',
      '1',
      'null',
      '"hooks"',
      '"SessionEnd"',
      '"command"',
      JSON.stringify(desired.command),
    );
    fc.assert(
      fc.property(fc.string({ unit: piece, maxLength: 60 }), fc.boolean(), (text, adding) => {
        try {
          const plan = claude.planHook({
            text,
            file: 'settings.json',
            desired: adding ? desired : null,
            owned: undefined,
          });
          if (adding) expect(managedIn(read(plan.text!))).toHaveLength(1);
        } catch (error) {
          expect(error).toBeInstanceOf(BlueError);
          expect(['NATIVE_CONFIG_PARSE', 'NATIVE_CONFIG_CONFLICT']).toContain((error as BlueError).code);
        }
      }),
      { numRuns: 500 },
    );
  });
});

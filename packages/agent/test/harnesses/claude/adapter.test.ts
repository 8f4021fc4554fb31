import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseJsonc } from 'jsonc-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { claude } from '../../../src/harnesses/claude/index.js';
import { buildManagedHook, isManagedCommand } from '../../../src/harness-kit/signature.js';
import type { HookPlan, ManagedHook, OwnershipRecord } from '../../../src/harnesses/types.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';
import { agentRoot, makeTestHome, repoRoot, type TestHome } from '../../../../../test/support/context.js';
import { thrown } from '../../../../../test/support/errors.js';

const FIXTURES = path.join(repoRoot, 'fixtures', 'claude');
const fixture = (name: string): string => readFileSync(path.join(FIXTURES, name), 'utf8');
const installed = (name: string): string => fixture(path.join('installed', name));

const self = { node: '/usr/bin/node', entry: '/opt/blue-agent/bin/blue-agent.js' };
const desired: ManagedHook = buildManagedHook(self, 'claude', 'claude-v2_0_12', 'SessionEnd', 10);
const COMMAND = "'/usr/bin/node' '/opt/blue-agent/bin/blue-agent.js' capture --harness claude --profile claude-v2_0_12";

function install(text: string | null, owned?: OwnershipRecord, want: ManagedHook = desired): HookPlan {
  return claude.planHook({ text, file: 'settings.json', desired: want, owned });
}

function remove(text: string | null, owned?: OwnershipRecord): HookPlan {
  return claude.planHook({ text, file: 'settings.json', desired: null, owned });
}

/** Every hook object under hooks.<event>[].hooks[], with its event. */
function allHooks(text: string): { event: string; group: number; hook: Record<string, unknown> }[] {
  const doc = parseJsonc(text) as { hooks?: Record<string, { hooks?: Record<string, unknown>[] }[]> };
  const out: { event: string; group: number; hook: Record<string, unknown> }[] = [];
  for (const [event, groups] of Object.entries(doc.hooks ?? {})) {
    if (!Array.isArray(groups)) continue;
    groups.forEach((group, i) => {
      if (group === null || typeof group !== 'object' || !Array.isArray(group.hooks)) return;
      for (const hook of group.hooks)
        if (hook !== null && typeof hook === 'object') out.push({ event, group: i, hook });
    });
  }
  return out;
}

function managedHooks(text: string) {
  return allHooks(text).filter((h) => typeof h.hook.command === 'string' && isManagedCommand(h.hook.command, 'claude'));
}

/** Lines of `after` that are not lines of `before` at the same index (inputs of equal line count). */
function changedLines(before: string, after: string): string[] {
  const a = before.split('\n');
  const b = after.split('\n');
  expect(b.length).toBe(a.length);
  return b.filter((line, i) => line !== a[i]);
}

describe('claude adapter paths', () => {
  let home: TestHome;
  const interval = (parseYaml(fixtureProfile()) as { intervals: Interval[] }).intervals.find(
    (i) => i.profile === 'claude-v2_0_12',
  )!;

  function fixtureProfile(): string {
    return readFileSync(path.join(agentRoot, 'profiles', 'claude.yaml'), 'utf8');
  }

  beforeAll(async () => {
    home = await makeTestHome();
  });
  afterAll(async () => {
    await home.cleanup();
  });

  it('uses <HOME>/.claude by default', async () => {
    expect(claude.configRoot(home.ctx)).toBe(path.join(home.home, '.claude'));
    expect(await claude.hookFile(home.ctx, interval)).toBe(path.join(home.home, '.claude', 'settings.json'));
    expect(claude.knownHookFiles(home.ctx)).toEqual([path.join(home.home, '.claude', 'settings.json')]);
  });

  it('honours an absolute CLAUDE_CONFIG_DIR and ignores a relative one', async () => {
    const dir = path.join(home.root, 'elsewhere', 'claude-config');
    const ctx = home.context({ env: { CLAUDE_CONFIG_DIR: dir } });
    expect(claude.configRoot(ctx)).toBe(dir);
    expect(await claude.hookFile(ctx, interval)).toBe(path.join(dir, 'settings.json'));
    expect(claude.knownHookFiles(ctx)).toEqual([path.join(dir, 'settings.json')]);
    const relative = home.context({ env: { CLAUDE_CONFIG_DIR: 'relative/dir' } });
    expect(claude.configRoot(relative)).toBe(path.join(home.home, '.claude'));
  });

  it('never names ~/.claude.json', async () => {
    const files = [...claude.knownHookFiles(home.ctx), await claude.hookFile(home.ctx, interval)];
    expect(files.some((f) => path.basename(f) === '.claude.json')).toBe(false);
  });

  it('refuses a profile hook file that leaves the config dir', async () => {
    const bad = {
      ...interval,
      capture: { ...interval.capture!, hook: { ...interval.capture!.hook, file: '../.claude.json' } },
    };
    await expect(claude.hookFile(home.ctx, bad)).rejects.toMatchObject({ code: 'UNSAFE_PATH' });
  });
});

describe('claude planHook: installing', () => {
  it('creates a missing file with 2-space indentation, LF and a final newline', () => {
    const plan = install(null);
    expect(plan.text).toBe(installed('missing.json'));
    expect(plan.text).toBe(
      `{\n  "hooks": {\n    "SessionEnd": [\n      {\n        "matcher": "",\n        "hooks": [\n          ` +
        `{\n            "type": "command",\n            "command": ${JSON.stringify(COMMAND)},\n            ` +
        `"timeout": 10\n          }\n        ]\n      }\n    ]\n  }\n}\n`,
    );
    expect(plan.managedFound).toBe(0);
    expect(plan.owned).toMatchObject({ base: 'missing' });
  });

  it('treats an empty or whitespace-only file as an empty object', () => {
    expect(install('').text).toBe(installed('empty.json'));
    expect(install(fixture('whitespace.json')).text).toBe(installed('missing.json'));
  });

  it('appends after the user group of the same event, which stays first', () => {
    const text = fixture('user-session-end.json');
    const plan = install(text);
    expect(plan.text).toBe(installed('user-session-end.json'));
    const hooks = allHooks(plan.text!).filter((h) => h.event === 'SessionEnd');
    expect(hooks.map((h) => [h.group, h.hook.command])).toEqual([
      [0, '~/bin/notify-session-end.sh'],
      [1, COMMAND],
    ]);
    expect(hooks[1]!.hook).toEqual({ type: 'command', command: COMMAND, timeout: 10 });
  });

  it('adds a SessionEnd array beside user hooks on other events', () => {
    const text = fixture('user-other-events.json');
    const plan = install(text);
    expect(plan.text).toBe(installed('user-other-events.json'));
    expect(plan.text!.startsWith(text.slice(0, text.lastIndexOf(']') + 1))).toBe(true);
    expect(allHooks(plan.text!).map((h) => h.event)).toEqual(['PreToolUse', 'Stop', 'SessionEnd']);
  });

  it('keeps CRLF line endings', () => {
    const text = fixture('crlf.json');
    expect(text).toContain('\r\n');
    const plan = install(text);
    expect(plan.text).toBe(installed('crlf.json'));
    expect(plan.text!.replace(/\r\n/g, '')).not.toContain('\n');
    expect(plan.text!.endsWith('}\r\n')).toBe(true);
  });

  it('indents with tabs in a tab-indented file', () => {
    const plan = install(fixture('tabs.json'));
    expect(plan.text).toBe(installed('tabs.json'));
    expect(plan.text!.split('\n').filter((line) => /^ /.test(line))).toEqual([]);
    expect(plan.text).toContain('\n\t\t\t\t\t\t"command": ');
  });

  it('indents with 4 spaces in a 4-space file', () => {
    const plan = install(fixture('indent4.json'));
    expect(plan.text).toBe(installed('indent4.json'));
    for (const line of plan.text!.split('\n')) expect(/^( *)/.exec(line)![1]!.length % 4).toBe(0);
    expect(plan.text).toContain('\n                        "command": ');
  });

  it('keeps the absence of a final newline', () => {
    const text = fixture('no-final-newline.json');
    expect(text.endsWith('}')).toBe(true);
    const plan = install(text);
    expect(plan.text).toBe(installed('no-final-newline.json'));
    expect(plan.text!.endsWith('  }\n}')).toBe(true);
  });

  it('keeps non-ASCII user values byte for byte', () => {
    const text = fixture('non-ascii.json');
    const plan = install(text);
    expect(plan.text).toBe(installed('non-ascii.json'));
    for (const value of ['🚀 会话 — café', 'こんにちは 👋', '"ÜBER": "naïve"', "echo '再见 🌙'"])
      expect(plan.text).toContain(value);
    expect(Buffer.from(plan.text!).includes(Buffer.from(text.slice(0, text.indexOf('"hooks"'))))).toBe(true);
  });

  it('keeps comments, and a comment trailing the last entry stays on its line', () => {
    const text = fixture('comments.json');
    const plan = install(text);
    expect(plan.text).toBe(installed('comments.json'));
    expect(plan.text).toContain('"Stop": [], // nothing yet\n    "SessionEnd": [');
    expect(plan.text).toContain('// Personal settings, synced from dotfiles.');
  });

  it('writes on one line in a one-line file', () => {
    const plan = install(fixture('minified.json'));
    expect(plan.text).toBe(installed('minified.json'));
    expect(plan.text!.split('\n')).toHaveLength(2);
  });

  it('fills a "hooks": {} and a "SessionEnd": [] the user already has', () => {
    expect(install(fixture('hooks-empty.json')).text).toBe(installed('hooks-empty.json'));
    expect(install(fixture('session-end-empty.json')).text).toBe(installed('session-end-empty.json'));
  });

  it('returns the very same text when the managed hook is already right', () => {
    for (const name of [
      'missing.json',
      'user-session-end.json',
      'crlf.json',
      'tabs.json',
      'minified.json',
      'comments.json',
    ]) {
      const text = installed(name);
      const plan = install(text);
      expect(plan.text).toBe(text);
      expect(plan.managedFound).toBe(1);
      expect(plan.owned).toBeDefined();
    }
  });

  it('installing twice equals installing once, with the same ownership record', () => {
    for (const name of [
      'user-session-end.json',
      'user-other-events.json',
      'crlf.json',
      'tabs.json',
      'indent4.json',
      'no-final-newline.json',
      'non-ascii.json',
      'comments.json',
      'minified.json',
      'hooks-empty.json',
      'session-end-empty.json',
      'empty.json',
    ]) {
      const once = install(fixture(name));
      const twice = install(once.text, once.owned);
      expect(twice.text).toBe(once.text);
      expect(JSON.stringify(twice.owned)).toBe(JSON.stringify(once.owned));
      expect(twice.managedFound).toBe(1);
    }
    const created = install(null);
    expect(install(created.text, created.owned).text).toBe(created.text);
  });
});

describe('claude planHook: repairing managed entries', () => {
  it('updates a stale entry in place: only the command line changes', () => {
    const text = fixture('stale-managed.json');
    const plan = install(text);
    expect(plan.managedFound).toBe(1);
    expect(plan.text).toBe(installed('stale-managed.json'));
    expect(changedLines(text, plan.text!)).toEqual([`            "command": ${JSON.stringify(COMMAND)},`]);
  });

  it('updates a stale timeout in place: only the timeout line changes', () => {
    const text = installed('user-session-end.json');
    const plan = install(text, undefined, { ...desired, timeoutSeconds: 30 });
    expect(changedLines(text, plan.text!)).toEqual(['            "timeout": 30']);
  });

  it('collapses duplicated managed entries into one and keeps the user group', () => {
    const text = fixture('duplicate-managed.json');
    const plan = install(text);
    expect(plan.managedFound).toBe(2);
    expect(plan.text).toBe(installed('duplicate-managed.json'));
    expect(managedHooks(plan.text!)).toHaveLength(1);
    expect(allHooks(plan.text!).map((h) => h.hook.command)).toEqual([COMMAND, '~/bin/user-cleanup.sh']);
  });

  it('takes a managed hook out of a user group and gives it a group of its own', () => {
    const text = fixture('managed-in-user-group.json');
    const plan = install(text);
    expect(plan.managedFound).toBe(1);
    expect(plan.text).toBe(installed('managed-in-user-group.json'));
    expect(allHooks(plan.text!).map((h) => [h.group, h.hook.command])).toEqual([
      [0, '~/bin/archive-transcript.sh'],
      [1, COMMAND],
    ]);
  });

  it('removal takes a managed hook out of a user group and leaves the group', () => {
    const plan = remove(fixture('managed-in-user-group.json'));
    expect(plan.managedFound).toBe(1);
    expect(allHooks(plan.text!).map((h) => h.hook.command)).toEqual(['~/bin/archive-transcript.sh']);
    expect(plan.text).toContain('"command": "~/bin/archive-transcript.sh"\n          }\n        ]');
  });

  it('rewrites a managed hook with missing or extra keys, and resets a non-empty matcher', () => {
    const text =
      `{\n  "hooks": {\n    "SessionEnd": [\n      {\n        "matcher": "clear",\n        "hooks": ` +
      `[\n          { "type": "command", "command": ${JSON.stringify(COMMAND)}, "async": true }\n        ]\n      ` +
      `}\n    ]\n  }\n}\n`;
    const plan = install(text);
    expect(plan.text).toBe(
      `{\n  "hooks": {\n    "SessionEnd": [\n      {\n        "matcher": "",\n        "hooks": [\n          ` +
        `{"type": "command", "command": ${JSON.stringify(COMMAND)}, "timeout": 10}\n        ]\n      }\n    ]\n  ` +
        `}\n}\n`,
    );
  });

  it('removes managed hooks from other events, and the event array they leave empty', () => {
    const text =
      `{\n  "hooks": {\n    "Stop": [\n      { "hooks": [{ "type": "command", "command": ` +
      `${JSON.stringify(COMMAND)} }] }\n    ],\n    "PreToolUse": []\n  }\n}\n`;
    const plan = install(text);
    expect(plan.managedFound).toBe(1);
    expect(plan.text).toBe(
      `{\n  "hooks": {\n    "PreToolUse": [],\n    "SessionEnd": [\n      {\n        "matcher": "",\n        ` +
        `"hooks": [\n          {\n            "type": "command",\n            ` +
        `"command": ${JSON.stringify(COMMAND)},\n            ` +
        `"timeout": 10\n          }\n        ]\n      }\n    ]\n  }\n}\n`,
    );
  });

  it("leaves other harnesses' capture hooks and look-alikes alone", () => {
    const other =
      "'/usr/bin/node' '/opt/blue-agent/bin/blue-agent.js' capture --harness codex --profile codex-v0_145_0";
    const text =
      `{\n  "hooks": {\n    "SessionEnd": [\n      { "hooks": [{ "type": "command", "command": ` +
      `${JSON.stringify(other)} }, { "type": "command", "command": "/opt/tools/blue-agent-notify capture --harness ` +
      `claude" }, { "type": "command", "command": "blue-agent status --harness claude" }] }\n    ]\n  }\n}\n`;
    expect(remove(text).text).toBe(text);
    const plan = install(text);
    expect(plan.managedFound).toBe(0);
    expect(allHooks(plan.text!).map((h) => h.hook.command)).toEqual([
      other,
      '/opt/tools/blue-agent-notify capture --harness claude',
      'blue-agent status --harness claude',
      COMMAND,
    ]);
  });
});

describe('claude planHook: removing', () => {
  const roundTrip = [
    'empty.json',
    'whitespace.json',
    'user-session-end.json',
    'user-other-events.json',
    'crlf.json',
    'tabs.json',
    'indent4.json',
    'no-final-newline.json',
    'non-ascii.json',
    'comments.json',
    'minified.json',
    'hooks-empty.json',
    'session-end-empty.json',
  ];

  it.each(roundTrip)('install then remove gives back the original bytes of %s', (name) => {
    const text = fixture(name);
    const added = install(text);
    expect(added.text).not.toBe(text);
    const removed = remove(added.text, added.owned);
    expect(removed.text).toBe(text);
    expect(removed.owned).toBeUndefined();
    expect(removed.managedFound).toBe(1);
  });

  it('install then remove of a missing file gives no file', () => {
    const added = install(null);
    expect(remove(added.text, added.owned)).toEqual({ text: null, owned: undefined, managedFound: 1 });
  });

  it('install, repair, then remove still gives back the original bytes', () => {
    const text = fixture('tabs.json');
    const added = install(text);
    const moved = install(
      added.text,
      added.owned,
      buildManagedHook({ node: '/opt/node/bin/node', entry: self.entry }, 'claude', 'claude-v2_0_12', 'SessionEnd', 20),
    );
    expect(moved.text).not.toBe(added.text);
    expect(remove(moved.text, moved.owned).text).toBe(text);
  });

  it('without a record, removes the entry cleanly and the containers it emptied', () => {
    // The user's own group stays and the text comes back exactly.
    const user = fixture('user-session-end.json');
    expect(remove(install(user).text).text).toBe(user);
    // Containers that only held the managed group go; an empty container the user left alone stays.
    expect(remove(installed('crlf.json')).text).toBe(fixture('crlf.json'));
    expect(remove(installed('session-end-empty.json')).text).toBe('{\n  "theme": "dark"\n}\n');
    expect(remove(fixture('session-end-empty.json')).text).toBe(fixture('session-end-empty.json'));
    expect(remove(installed('missing.json')).text).toBe('{}\n');
  });

  it('with a record, cuts only its own bytes and keeps what the user added around them', () => {
    const text = fixture('session-end-empty.json');
    const added = install(text);
    const edited = added
      .text!.replace('"theme": "dark"', '"theme": "light"')
      .replace('\n      {\n        "matcher"', '\n\n      {\n        "matcher"');
    expect(remove(edited, added.owned).text).toBe(
      '{\n  "theme": "light",\n  "hooks": {\n    "SessionEnd": [\n]\n  }\n}\n',
    );
  });

  it('with a record, keeps containers the user had even when the bytes around the entry changed', () => {
    const text = fixture('session-end-empty.json');
    const added = install(text);
    const edited = added.text!.replace('[\n      {\n        "matcher"', '[ {\n        "matcher"');
    expect(remove(edited, added.owned).text).toBe(text);
    // Without the record the emptied array would go as well.
    expect(remove(edited).text).toBe('{\n  "theme": "dark"\n}\n');
  });

  it('with a record, removes containers it created even when the user added siblings since', () => {
    const added = install(fixture('no-final-newline.json'));
    const edited = added.text!.replace('\n  }\n}', '\n  },\n  "later": 1\n}');
    expect(remove(edited, added.owned).text).toBe('{\n  "theme": "dark",\n  "verbose": true,\n  "later": 1\n}');
  });

  it('removes every duplicate', () => {
    const plan = remove(fixture('duplicate-managed.json'));
    expect(plan.managedFound).toBe(2);
    expect(managedHooks(plan.text!)).toEqual([]);
    expect(allHooks(plan.text!).map((h) => h.hook.command)).toEqual(['~/bin/user-cleanup.sh']);
  });

  it('leaves a file without managed entries as it is', () => {
    for (const name of [
      'user-session-end.json',
      'comments.json',
      'top-level-array.json',
      'session-end-not-array.json',
      'empty.json',
    ]) {
      const text = fixture(name);
      expect(remove(text)).toEqual({ text, owned: undefined, managedFound: 0 });
    }
    expect(remove(null)).toEqual({ text: null, owned: undefined, managedFound: 0 });
  });

  it('does not restore a created file the user has since written to', () => {
    const added = install(null);
    const edited = added.text!.replace('{\n  "hooks"', '{\n  "theme": "dark",\n  "hooks"');
    expect(remove(edited, added.owned).text).toBe('{\n  "theme": "dark"\n}\n');
  });

  it('records only bytes it inserted, never user content', () => {
    const text = fixture('non-ascii.json');
    const owned = JSON.stringify(install(text).owned);
    for (const secret of ['statusLine', 'GREETING', 'café', '再见']) expect(owned).not.toContain(secret);
    const record = JSON.stringify(install(fixture('user-session-end.json')).owned);
    expect(record).not.toContain('opus');
    expect(record).not.toContain('notify-session-end');
  });

  it('treats a malformed record as no record', () => {
    const added = install(fixture('user-session-end.json'));
    for (const owned of [
      { v: 2 },
      { v: 1, base: 'missing', event: 'SessionEnd', created: ['everything'] },
      { v: 1, base: 'empty', baseText: 'secret', event: 'SessionEnd', created: [] },
    ]) {
      expect(remove(added.text, owned).text).toBe(fixture('user-session-end.json'));
    }
  });
});

describe('claude planHook: errors and hostile input', () => {
  it('reports a syntax error with its exact line and column and plans nothing', () => {
    for (const want of [desired, null]) {
      const error = thrown(() =>
        claude.planHook({
          text: fixture('invalid.json'),
          file: '/h/.claude/settings.json',
          desired: want,
          owned: undefined,
        }),
      );
      expect(error.code).toBe('NATIVE_CONFIG_PARSE');
      expect(error.message).toBe("/h/.claude/settings.json:5:5: ',' expected");
      expect(error).toMatchObject({ file: '/h/.claude/settings.json', line: 5, column: 5 });
      expect(error.hint).toBeTruthy();
    }
  });

  it('reports trailing garbage after the object', () => {
    const error = thrown(() => install(fixture('trailing-garbage.json')));
    expect(error).toMatchObject({ code: 'NATIVE_CONFIG_PARSE', line: 4, column: 1 });
  });

  it('reports a trailing comma', () => {
    const error = thrown(() => install('{\n  "a": 1,\n}\n'));
    expect(error).toMatchObject({ code: 'NATIVE_CONFIG_PARSE', line: 3, column: 1 });
  });

  it('reports a top level that is not an object', () => {
    const error = thrown(() => install(fixture('top-level-array.json')));
    expect(error).toMatchObject({ code: 'NATIVE_CONFIG_CONFLICT', line: 1, column: 1 });
    expect(error.message).toContain('the top level is an array, not an object');
  });

  it('reports hooks.SessionEnd that is not an array, with its position', () => {
    const error = thrown(() => install(fixture('session-end-not-array.json')));
    expect(error).toMatchObject({ code: 'NATIVE_CONFIG_CONFLICT', line: 3, column: 19 });
    expect(error.message).toBe('settings.json:3:19: "hooks.SessionEnd" is an object, not an array');
    expect(error.hint).toContain('array of matcher groups');
  });

  it('reports hooks that is not an object, a group whose hooks is not an array, and duplicate keys', () => {
    expect(thrown(() => install('{\n  "hooks": [1]\n}\n'))).toMatchObject({
      code: 'NATIVE_CONFIG_CONFLICT',
      line: 2,
      column: 12,
    });
    expect(thrown(() => install('{"hooks": {"SessionEnd": [{"hooks": "echo"}]}}'))).toMatchObject({
      code: 'NATIVE_CONFIG_CONFLICT',
      line: 1,
      column: 37,
    });
    expect(thrown(() => install('{"hooks": {}, "hooks": {}}'))).toMatchObject({
      code: 'NATIVE_CONFIG_CONFLICT',
      line: 1,
      column: 15,
    });
    expect(thrown(() => install('{"hooks": {"SessionEnd": [], "SessionEnd": []}}'))).toMatchObject({
      code: 'NATIVE_CONFIG_CONFLICT',
      line: 1,
      column: 30,
    });
  });

  it('refuses very deep nesting with an error instead of overflowing the stack', () => {
    const deep = `{"a": ${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    for (const want of [desired, null]) {
      expect(
        thrown(() => claude.planHook({ text: deep, file: 'settings.json', desired: want, owned: undefined })),
      ).toMatchObject({ code: 'NATIVE_CONFIG_PARSE', line: 1 });
    }
    const unterminated = '['.repeat(50_000);
    expect(thrown(() => install(unterminated)).code).toBe('NATIVE_CONFIG_PARSE');
    const fine = `{"a": ${'['.repeat(200)}${']'.repeat(200)}}`;
    expect(remove(install(fine).text, install(fine).owned).text).toBe(fine);
  });

  it('copes with odd values where hooks and commands are expected', () => {
    const text =
      `{"hooks": {"SessionEnd": [null, 3, "x", [], {}, {"hooks": []}, {"hooks": [null, 1, {"command": ` +
      `7}, {"command": null}, []]}], "Stop": "no", "Other": {"hooks": 1}}, "__proto__": {"x": 1}, "constructor": 1}`;
    const plan = install(text);
    expect(plan.managedFound).toBe(0);
    expect(managedHooks(plan.text!)).toHaveLength(1);
    expect(remove(plan.text, plan.owned).text).toBe(text);
    expect(remove(plan.text).text).toBe(text);
  });

  it('keeps a byte-order mark', () => {
    const text = `\uFEFF${fixture('user-session-end.json')}`;
    const plan = install(text);
    expect(plan.text!.startsWith('\uFEFF{\n  "model"')).toBe(true);
    expect(install(plan.text, plan.owned).text).toBe(plan.text);
    expect(remove(plan.text, plan.owned).text).toBe(text);
    const error = thrown(() => install('\uFEFF{\n  x\n}'));
    expect(error).toMatchObject({ line: 2, column: 3 });
  });
});

import { parse } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { listHandlers } from '../../../src/harnesses/codex/model.js';
import { planToml, readTomlRecord, renderTomlBlock, tomlString } from '../../../src/harnesses/codex/toml-plan.js';
import { buildManagedHook } from '../../../src/harnesses/signature.js';
import type { HookPlan, ManagedHook, OwnershipRecord } from '../../../src/harnesses/types.js';
import { thrown } from '../../support/errors.js';

const FILE = '/home/me/.codex/config.toml';
const SELF = { node: '/usr/bin/node', entry: '/opt/blue-agent/bin/blue-agent.js' };
const desired = buildManagedHook(SELF, 'codex', 'codex-v0_145_0', 'SessionEnd', 3);
const COMMAND = `'/usr/bin/node' '/opt/blue-agent/bin/blue-agent.js' capture --harness codex --profile codex-v0_145_0`;
const OLD = `/opt/old/blue-agent capture --harness codex`;
const BLOCK = ['[[hooks.SessionEnd]]', '[[hooks.SessionEnd.hooks]]', 'type = "command"', `command = "${COMMAND}"`, 'timeout = 3', ''].join('\n');

function plan(text: string | null, hook: ManagedHook | null = desired, owned?: OwnershipRecord): HookPlan {
  return planToml({ text, file: FILE, desired: hook, owned });
}

function managedIn(text: string): number {
  return listHandlers((parse(text) as Record<string, unknown>).hooks).filter((h) => h.managed).length;
}

/** A managed `[[hooks.SessionEnd]]` group with the given command and body lines after the command. */
function group(command: string, ...rest: string[]): string {
  return ['[[hooks.SessionEnd]]', '[[hooks.SessionEnd.hooks]]', 'type = "command"', `command = "${command}"`, ...rest, ''].join('\n');
}

describe('readTomlRecord', () => {
  it('reads only toml records, and keeps lead and gap only when both are a single line break or nothing', () => {
    expect(readTomlRecord(undefined)).toBeUndefined();
    expect(readTomlRecord({ format: 'json', created: true })).toBeUndefined();
    expect(readTomlRecord({ format: 'toml' })).toStrictEqual({ format: 'toml', created: false });
    expect(readTomlRecord({ format: 'toml', created: 'true' })).toStrictEqual({ format: 'toml', created: false });
    expect(readTomlRecord({ format: 'toml', created: true, lead: '\r\n', gap: '\n' })).toStrictEqual({ format: 'toml', created: true, lead: '\r\n', gap: '\n' });
    expect(readTomlRecord({ format: 'toml', created: false, lead: '', gap: '' })).toStrictEqual({ format: 'toml', created: false, lead: '', gap: '' });
    for (const bad of ['x', '\n\n', 'x\n', '\nx', '\r', ' \n', 1]) {
      expect(readTomlRecord({ format: 'toml', lead: bad, gap: '\n' })).toStrictEqual({ format: 'toml', created: false });
      expect(readTomlRecord({ format: 'toml', lead: '\n', gap: bad })).toStrictEqual({ format: 'toml', created: false });
    }
    expect(readTomlRecord({ format: 'toml', lead: '\n' })).toStrictEqual({ format: 'toml', created: false });
  });
});

describe('tomlString and renderTomlBlock', () => {
  it('escapes control characters with upper-case hex', () => {
    expect(tomlString('a\u001fb\u007f"\\')).toBe('"a\\u001Fb\\u007F\\"\\\\"');
  });

  it('writes a bare event name bare and quotes any other', () => {
    for (const event of ['Stop', 'Session_End-2']) {
      const hook = { ...desired, event };
      expect(renderTomlBlock(hook, '\n').split('\n').slice(0, 2)).toEqual([`[[hooks.${event}]]`, `[[hooks.${event}.hooks]]`]);
    }
    for (const event of ['a.b', 'Session End', '.x', 'x.', '']) {
      const hook = { ...desired, event };
      const quoted = JSON.stringify(event);
      expect(renderTomlBlock(hook, '\n').split('\n').slice(0, 2)).toEqual([`[[hooks.${quoted}]]`, `[[hooks.${quoted}.hooks]]`]);
    }
  });

  it('joins the lines with the given line break and ends with one', () => {
    expect(renderTomlBlock(desired, '\r\n')).toBe(BLOCK.replace(/\n/g, '\r\n'));
  });

  it('an event with a quoted name round-trips through install and removal', () => {
    const hook = buildManagedHook(SELF, 'codex', 'codex-v0_145_0', 'Session End', 30);
    const installed = plan('model = "o3"\n', hook);
    expect(installed.text).toBe(`model = "o3"\n\n[[hooks."Session End"]]\n[[hooks."Session End".hooks]]\ntype = "command"\ncommand = "${COMMAND}"\ntimeout = 30\n`);
    expect(plan(installed.text, null, installed.owned).text).toBe('model = "o3"\n');
  });
});

describe('planToml: creating and appending', () => {
  it('creates a missing file with the block and records that it did', () => {
    expect(plan(null)).toStrictEqual({ text: BLOCK, owned: { format: 'toml', created: true, lead: '', gap: '' }, managedFound: 0 });
  });

  it('records the exact separator it put before the block', () => {
    expect(plan('')).toStrictEqual({ text: BLOCK, owned: { format: 'toml', created: false, lead: '', gap: '' }, managedFound: 0 });
    expect(plan('a = 1\n')).toStrictEqual({ text: `a = 1\n\n${BLOCK}`, owned: { format: 'toml', created: false, lead: '', gap: '\n' }, managedFound: 0 });
    expect(plan('a = 1')).toStrictEqual({ text: `a = 1\n\n${BLOCK}`, owned: { format: 'toml', created: false, lead: '\n', gap: '\n' }, managedFound: 0 });
    expect(plan('a = 1\n\n').owned).toStrictEqual({ format: 'toml', created: false, lead: '', gap: '' });
    expect(plan('a = 1\n\n').text).toBe(`a = 1\n\n${BLOCK}`);
    expect(plan('a = 1\n \t\n').text).toBe(`a = 1\n \t\n${BLOCK}`);
    expect(plan('\n').text).toBe(`\n${BLOCK}`);
    expect(plan('a = 1\r\n').text).toBe(`a = 1\r\n\r\n${BLOCK.replace(/\n/g, '\r\n')}`);
    expect(plan('a = 1\r\n\r\n').text).toBe(`a = 1\r\n\r\n${BLOCK.replace(/\n/g, '\r\n')}`);
    expect(plan('a = 1\r\n').owned).toStrictEqual({ format: 'toml', created: false, lead: '', gap: '\r\n' });
  });

  it('removal with each recorded separator gives back the bytes from before the append', () => {
    for (const original of ['a = 1', 'a = 1\n', 'a = 1\n\n', 'a = 1\n \n', 'a = 1\r\n', 'a = 1\r\n\r\n', '# only a comment', '\n', '']) {
      const installed = plan(original);
      expect(managedIn(installed.text!)).toBe(1);
      const removed = plan(installed.text, null, installed.owned);
      expect(removed).toStrictEqual({ text: original, owned: undefined, managedFound: 1 });
    }
  });

  it('removal of a created file deletes it only when the record says the agent created it', () => {
    expect(plan(BLOCK, null, { format: 'toml', created: true, lead: '', gap: '' })).toStrictEqual({ text: null, owned: undefined, managedFound: 1 });
    expect(plan(BLOCK, null, { format: 'toml', created: true })).toStrictEqual({ text: null, owned: undefined, managedFound: 1 });
    expect(plan(BLOCK, null, { format: 'toml', created: false, lead: '', gap: '' })).toStrictEqual({ text: '', owned: undefined, managedFound: 1 });
    expect(plan(BLOCK, null, { format: 'toml', created: 1 })).toStrictEqual({ text: '', owned: undefined, managedFound: 1 });
    expect(plan(BLOCK, null, undefined)).toStrictEqual({ text: '', owned: undefined, managedFound: 1 });
    // The user wrote more into the created file: it stays.
    const kept = plan(`a = 1\n\n${BLOCK}`, null, { format: 'toml', created: true, lead: '', gap: '\n' });
    expect(kept).toStrictEqual({ text: 'a = 1\n', owned: undefined, managedFound: 1 });
  });

  it('without a usable record, removal takes one blank line before the block with it', () => {
    const installed = `a = 1\n\n${BLOCK}`;
    expect(plan(installed, null, undefined).text).toBe('a = 1\n');
    // A record whose separator is not a line break is ignored, as if there were none.
    expect(plan(installed, null, { format: 'toml', lead: '\n', gap: 'x' }).text).toBe('a = 1\n');
    // With the record: the lead the agent added goes too.
    expect(plan(installed, null, { format: 'toml', lead: '\n', gap: '\n' }).text).toBe('a = 1');
    expect(plan(`a = 1\n${BLOCK}`, null, undefined).text).toBe('a = 1\n');
    expect(plan(`a = 1\n \t\n${BLOCK}`, null, undefined).text).toBe('a = 1\n');
  });

  it('a recorded separator that is no longer there is not cut', () => {
    // Recorded lead and gap, but the user removed the blank line: only the block goes.
    expect(plan(`a = 1\n${BLOCK}`, null, { format: 'toml', lead: '', gap: '\n' }).text).toBe('a = 1\n');
    // A recorded empty gap after a lead that is still there.
    expect(plan(`a = 1\n${BLOCK}`, null, { format: 'toml', lead: '\n', gap: '' }).text).toBe('a = 1');
    // A recorded gap that is still there but with no lead: the blank line goes only when it is one.
    expect(plan(`\n${BLOCK}`, null, { format: 'toml', lead: '', gap: '\n' }).text).toBe('');
    expect(plan(`a = 1\n\n${BLOCK}`, null, { format: 'toml', lead: '', gap: '\n' }).text).toBe('a = 1\n');
  });
});

describe('planToml: editing the kept managed entry', () => {
  it('rewrites only the values that differ', () => {
    expect(plan(group(COMMAND, 'timeout = 3')).text).toBe(group(COMMAND, 'timeout = 3'));
    expect(plan(group(OLD, 'timeout = 3')).text).toBe(group(COMMAND, 'timeout = 3'));
    expect(plan(group(COMMAND, 'timeout = 9')).text).toBe(group(COMMAND, 'timeout = 3'));
    const wrongType = group(COMMAND, 'timeout = 3').replace('type = "command"', 'type = "prompt"');
    expect(plan(wrongType).text).toBe(group(COMMAND, 'timeout = 3'));
    const noType = group(COMMAND, 'timeout = 3').replace('type = "command"\n', '');
    expect(plan(noType).text).toBe(group(COMMAND, 'timeout = 3'));
  });

  it('adds a missing timeout after the command, with or without a line break after it', () => {
    expect(plan(group(COMMAND)).text).toBe(group(COMMAND, 'timeout = 3'));
    expect(plan(group(COMMAND).slice(0, -1)).text).toBe(group(COMMAND, 'timeout = 3').slice(0, -1));
    expect(plan(group(COMMAND).replace(/\n/g, '\r\n')).text).toBe(group(COMMAND, 'timeout = 3').replace(/\n/g, '\r\n'));
    expect(plan(group(COMMAND).replace(/\n/g, '\r\n').slice(0, -2)).text).toBe(group(COMMAND, 'timeout = 3').replace(/\n/g, '\r\n').slice(0, -2));
  });

  it('keeps the record when nothing was cut, and a fresh one otherwise', () => {
    const record = { format: 'toml', created: true, lead: '\n', gap: '\n' };
    expect(plan(group(OLD, 'timeout = 3'), desired, record).owned).toStrictEqual(record);
    expect(plan(group(OLD, 'timeout = 3'), desired, undefined).owned).toStrictEqual({ format: 'toml', created: false });
    const twice = `${group(COMMAND, 'timeout = 3')}\n${group(OLD, 'timeout = 3')}`;
    const collapsed = plan(twice, desired, record);
    expect(collapsed.text).toBe(group(COMMAND, 'timeout = 3'));
    expect(collapsed.owned).toStrictEqual({ format: 'toml', created: true });
    expect(collapsed.managedFound).toBe(2);
    expect(plan(twice, desired, { format: 'toml' }).owned).toStrictEqual({ format: 'toml', created: false });
  });

  it('refuses a managed entry without a command key of its own (a dotted or nested layout), pointing at its group', () => {
    const nested = ['a = 1', '[[hooks.SessionEnd]]', '[[hooks.SessionEnd.hooks]]', 'type = "command"', `x.y = 1`, `[hooks.SessionEnd.hooks.more]`, 'z = 2', ''].join('\n');
    // Not managed (no command): appended after, as the user's.
    expect(managedIn(plan(nested).text!)).toBe(1);
    const dotted = ['a = 1', '[[hooks.SessionEnd]]', '[[hooks.SessionEnd.hooks]]', 'type = "command"', `command.x = 1`, ''].join('\n');
    expect(managedIn(plan(dotted).text!)).toBe(1);
  });
});

describe('planToml: conflicts', () => {
  it('points an inline managed entry out at the definition of its event', () => {
    const text = ['model = "o3"', '[hooks]', 'Stop = []', `SessionEnd = [{ hooks = [{ type = "command", command = "${OLD}" }] }]`, ''].join('\n');
    const error = thrown(() => plan(text));
    expect(error.code).toBe('NATIVE_CONFIG_CONFLICT');
    expect([error.line, error.column]).toEqual([4, 1]);
    expect(error.message).toContain('hooks.SessionEnd is written inline');
    expect(error.hint).toContain('[[hooks.SessionEnd]]');
  });

  it('points an inline user array out where it is defined, however it is spelled', () => {
    const cases: Array<[string, number, number]> = [
      ['model = "o3"\nhooks.SessionEnd = []\n', 2, 1],
      ['model = "o3"\n  hooks = { Stop = [] }\n', 2, 3],
      ['model = "o3"\n[hooks.SessionEnd]\nx = 1\n', 2, 1],
      ['model = "o3"\n[[hooks]]\nx = 1\n', 2, 1],
      ['model = "o3"\n[hooks]\nStop = []\n  SessionEnd = []\n', 4, 3],
      ['model = "o3"\n[hooks]\nSessionEnd.x = 1\n', 3, 1],
    ];
    for (const [text, line, column] of cases) {
      const error = thrown(() => plan(text));
      expect(error.code).toBe('NATIVE_CONFIG_CONFLICT');
      expect([error.line, error.column]).toEqual([line, column]);
      expect(error.message).toContain('hooks.SessionEnd (or hooks) is defined here as an inline value');
      expect(error.hint).toContain('[[hooks.SessionEnd]] and [[hooks.SessionEnd.hooks]]');
    }
  });

  it('appends next to user tables under the event that are not inline definitions', () => {
    const text = ['[[hooks.SessionEnd]]', 'matcher = "x"', '[hooks.SessionEnd.extra]', 'k = 1', '[[hooks.SessionEnd.hooks]]', 'command = "echo"', ''].join('\n');
    const result = plan(text);
    expect(result.text).toBe(`${text}\n${BLOCK}`);
  });

  it('appends when other events are inline and this one is not', () => {
    const text = ['[hooks]', 'Stop = [{ hooks = [{ type = "command", command = "say" }] }]', ''].join('\n');
    const installed = plan(text);
    expect(installed.text).toBe(`${text}\n${BLOCK}`);
    expect(plan(installed.text, null, installed.owned).text).toBe(text);
  });
});

import { parse } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { listHandlers } from '../../../src/harnesses/codex/model.js';
import { planToml, readTomlRecord, renderTomlBlock, tomlString } from '../../../src/harnesses/codex/plan-toml.js';
import { buildManagedHook } from '../../../src/harness-kit/signature.js';
import type { HookPlan, ManagedHook, OwnershipRecord } from '../../../src/harnesses/types.js';
import { thrown } from '../../../../../test/support/errors.js';

const FILE = '/home/me/.codex/config.toml';
const SELF = { node: '/usr/bin/node', entry: '/opt/blue-agent/bin/blue-agent.js' };
const desired = buildManagedHook(SELF, 'codex', 'codex-v0_145_0', 'SessionEnd', 3);
const COMMAND = `'/usr/bin/node' '/opt/blue-agent/bin/blue-agent.js' capture --harness codex --profile codex-v0_145_0`;
// A managed command an earlier install wrote (another Node.js, another path, an older profile).
const OLD =
  `'/usr/local/bin/node' '/opt/old/blue-agent/bin/blue-agent.js' capture --harness codex --profile ` + `codex-v0_140_0`;
const BLOCK = [
  '[[hooks.SessionEnd]]',
  '[[hooks.SessionEnd.hooks]]',
  'type = "command"',
  `command = "${COMMAND}"`,
  'timeout = 3',
  '',
].join('\n');

function plan(text: string | null, hook: ManagedHook | null = desired, owned?: OwnershipRecord): HookPlan {
  return planToml({ text, file: FILE, desired: hook, owned });
}

function managedIn(text: string): number {
  return listHandlers((parse(text) as Record<string, unknown>).hooks).filter((h) => h.managed).length;
}

/** A managed `[[hooks.SessionEnd]]` group with the given command and body lines after the command. */
function group(command: string, ...rest: string[]): string {
  return [
    '[[hooks.SessionEnd]]',
    '[[hooks.SessionEnd.hooks]]',
    'type = "command"',
    `command = "${command}"`,
    ...rest,
    '',
  ].join('\n');
}

describe('readTomlRecord', () => {
  it('reads only toml records, and keeps lead and gap only when both are a single line break or nothing', () => {
    expect(readTomlRecord(undefined)).toBeUndefined();
    expect(readTomlRecord({ format: 'json', created: true })).toBeUndefined();
    expect(readTomlRecord({ format: 'toml' })).toStrictEqual({ format: 'toml', created: false });
    expect(readTomlRecord({ format: 'toml', created: 'true' })).toStrictEqual({ format: 'toml', created: false });
    expect(readTomlRecord({ format: 'toml', created: true, lead: '\r\n', gap: '\n' })).toStrictEqual({
      format: 'toml',
      created: true,
      lead: '\r\n',
      gap: '\n',
    });
    expect(readTomlRecord({ format: 'toml', created: false, lead: '', gap: '' })).toStrictEqual({
      format: 'toml',
      created: false,
      lead: '',
      gap: '',
    });
    for (const bad of ['x', '\n\n', 'x\n', '\nx', '\r', ' \n', 1]) {
      expect(readTomlRecord({ format: 'toml', lead: bad, gap: '\n' })).toStrictEqual({
        format: 'toml',
        created: false,
      });
      expect(readTomlRecord({ format: 'toml', lead: '\n', gap: bad })).toStrictEqual({
        format: 'toml',
        created: false,
      });
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
      expect(renderTomlBlock(hook, '\n').split('\n').slice(0, 2)).toEqual([
        `[[hooks.${event}]]`,
        `[[hooks.${event}.hooks]]`,
      ]);
    }
    for (const event of ['a.b', 'Session End', '.x', 'x.', '']) {
      const hook = { ...desired, event };
      const quoted = JSON.stringify(event);
      expect(renderTomlBlock(hook, '\n').split('\n').slice(0, 2)).toEqual([
        `[[hooks.${quoted}]]`,
        `[[hooks.${quoted}.hooks]]`,
      ]);
    }
  });

  it('joins the lines with the given line break and ends with one', () => {
    expect(renderTomlBlock(desired, '\r\n')).toBe(BLOCK.replace(/\n/g, '\r\n'));
  });

  it('an event with a quoted name round-trips through install and removal', () => {
    const hook = buildManagedHook(SELF, 'codex', 'codex-v0_145_0', 'Session End', 30);
    const installed = plan('model = "o3"\n', hook);
    expect(installed.text).toBe(
      `model = "o3"\n\n[[hooks."Session End"]]\n[[hooks."Session End".hooks]]\ntype = "command"\ncommand = "` +
        `${COMMAND}"\ntimeout = 30\n`,
    );
    expect(plan(installed.text, null, installed.owned).text).toBe('model = "o3"\n');
  });
});

describe('planToml: creating and appending', () => {
  it('creates a missing file with the block and records that it did', () => {
    expect(plan(null)).toStrictEqual({
      text: BLOCK,
      owned: { format: 'toml', created: true, lead: '', gap: '' },
      managedFound: 0,
    });
  });

  it('records the exact separator it put before the block', () => {
    expect(plan('')).toStrictEqual({
      text: BLOCK,
      owned: { format: 'toml', created: false, lead: '', gap: '' },
      managedFound: 0,
    });
    expect(plan('a = 1\n')).toStrictEqual({
      text: `a = 1\n\n${BLOCK}`,
      owned: { format: 'toml', created: false, lead: '', gap: '\n' },
      managedFound: 0,
    });
    expect(plan('a = 1')).toStrictEqual({
      text: `a = 1\n\n${BLOCK}`,
      owned: { format: 'toml', created: false, lead: '\n', gap: '\n' },
      managedFound: 0,
    });
    expect(plan('a = 1\n\n').owned).toStrictEqual({ format: 'toml', created: false, lead: '', gap: '' });
    expect(plan('a = 1\n\n').text).toBe(`a = 1\n\n${BLOCK}`);
    expect(plan('a = 1\n \t\n').text).toBe(`a = 1\n \t\n${BLOCK}`);
    expect(plan('\n').text).toBe(`\n${BLOCK}`);
    expect(plan('a = 1\r\n').text).toBe(`a = 1\r\n\r\n${BLOCK.replace(/\n/g, '\r\n')}`);
    expect(plan('a = 1\r\n\r\n').text).toBe(`a = 1\r\n\r\n${BLOCK.replace(/\n/g, '\r\n')}`);
    expect(plan('a = 1\r\n').owned).toStrictEqual({ format: 'toml', created: false, lead: '', gap: '\r\n' });
  });

  it('removal with each recorded separator gives back the bytes from before the append', () => {
    for (const original of [
      'a = 1',
      'a = 1\n',
      'a = 1\n\n',
      'a = 1\n \n',
      'a = 1\r\n',
      'a = 1\r\n\r\n',
      '# only a comment',
      '\n',
      '',
    ]) {
      const installed = plan(original);
      expect(managedIn(installed.text!)).toBe(1);
      const removed = plan(installed.text, null, installed.owned);
      expect(removed).toStrictEqual({ text: original, owned: undefined, managedFound: 1 });
    }
  });

  it('removal of a created file deletes it only when the record says the agent created it', () => {
    expect(plan(BLOCK, null, { format: 'toml', created: true, lead: '', gap: '' })).toStrictEqual({
      text: null,
      owned: undefined,
      managedFound: 1,
    });
    expect(plan(BLOCK, null, { format: 'toml', created: true })).toStrictEqual({
      text: null,
      owned: undefined,
      managedFound: 1,
    });
    expect(plan(BLOCK, null, { format: 'toml', created: false, lead: '', gap: '' })).toStrictEqual({
      text: '',
      owned: undefined,
      managedFound: 1,
    });
    expect(plan(BLOCK, null, { format: 'toml', created: 1 })).toStrictEqual({
      text: '',
      owned: undefined,
      managedFound: 1,
    });
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
    expect(plan(group(COMMAND).replace(/\n/g, '\r\n').slice(0, -2)).text).toBe(
      group(COMMAND, 'timeout = 3').replace(/\n/g, '\r\n').slice(0, -2),
    );
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

  it('refuses a managed entry without its own command key (a dotted or nested layout), pointing at its group', () => {
    const nested = [
      'a = 1',
      '[[hooks.SessionEnd]]',
      '[[hooks.SessionEnd.hooks]]',
      'type = "command"',
      `x.y = 1`,
      `[hooks.SessionEnd.hooks.more]`,
      'z = 2',
      '',
    ].join('\n');
    // Not managed (no command): appended after, as the user's.
    expect(managedIn(plan(nested).text!)).toBe(1);
    const dotted = [
      'a = 1',
      '[[hooks.SessionEnd]]',
      '[[hooks.SessionEnd.hooks]]',
      'type = "command"',
      `command.x = 1`,
      '',
    ].join('\n');
    expect(managedIn(plan(dotted).text!)).toBe(1);
  });
});

describe('planToml: conflicts', () => {
  it('points an inline managed entry out at the definition of its event', () => {
    const text = [
      'model = "o3"',
      '[hooks]',
      'Stop = []',
      `SessionEnd = [{ hooks = [{ type = "command", command = "${OLD}" }] }]`,
      '',
    ].join('\n');
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
    const text = [
      '[[hooks.SessionEnd]]',
      'matcher = "x"',
      '[hooks.SessionEnd.extra]',
      'k = 1',
      '[[hooks.SessionEnd.hooks]]',
      'command = "echo"',
      '',
    ].join('\n');
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

/** A `[[hooks.<event>.hooks]]` handler table with the given command and body lines after it. */
function handler(command: string, event = 'SessionEnd', ...rest: string[]): string {
  return [`[[hooks.${event}.hooks]]`, 'type = "command"', `command = "${command}"`, ...rest, ''].join('\n');
}

function refusal(text: string, hook: ManagedHook | null = desired, owned?: OwnershipRecord): [string, number, number] {
  const error = thrown(() => plan(text, hook, owned));
  return [error.code, error.line!, error.column!];
}

const INLINE = 'is written inline, where it cannot be changed without rewriting your entries';

describe('readTomlRecord: separators of another type', () => {
  it('takes a separator only as a string, not as something that prints like one', () => {
    expect(readTomlRecord({ format: 'toml', lead: ['\n'], gap: '\n' })).toStrictEqual({
      format: 'toml',
      created: false,
    });
    expect(readTomlRecord({ format: 'toml', lead: '', gap: ['\n'] })).toStrictEqual({ format: 'toml', created: false });
  });
});

describe('planToml: tables around a managed handler', () => {
  it('cuts a duplicate group and nothing of the other event after it', () => {
    const stop = ['[[hooks.Stop]]', '[[hooks.Stop.hooks]]', 'command = "say"', ''].join('\n');
    const text = `${group(COMMAND, 'timeout = 3')}${group(OLD, 'timeout = 3')}${stop}`;
    expect(plan(text).text).toBe(`${group(COMMAND, 'timeout = 3')}${stop}`);
    expect(plan(text, null).text).toBe(stop);
  });

  it('keeps the group-level tables of a group whose managed handler is cut', () => {
    const user = ['[[hooks.SessionEnd]]', 'matcher = "x"', handler('echo')].join('\n');
    const extra = ['[hooks.SessionEnd.extra]', 'k = 1', ''].join('\n');
    const list = ['[[hooks.SessionEnd.list]]', 'k = 2', ''].join('\n');
    // Beside the agent's own group, the managed handler in the user's group goes, and with it only its own tables.
    const text = `${user}${handler(OLD)}${extra}${list}${group(OLD, 'timeout = 3')}`;
    expect(plan(text).text).toBe(`${user}${extra}${list}${group(COMMAND, 'timeout = 3')}`);
    expect(plan(text, null).text).toBe(`${user}${extra}${list}`);
  });

  it('passes over a group whose hooks are a table, not handlers', () => {
    const tableHooks = ['[[hooks.SessionEnd]]', '[hooks.SessionEnd.hooks.x]', 'y = 1', ''].join('\n');
    expect(plan(`${tableHooks}${group(OLD, 'timeout = 3')}`).text).toBe(
      `${tableHooks}${group(COMMAND, 'timeout = 3')}`,
    );
  });

  it('edits a kept handler whose group has tables of its own', () => {
    const text = [
      '[[hooks.SessionEnd]]',
      '[hooks.SessionEnd.extra]',
      'k = 1',
      '[[hooks.SessionEnd.list]]',
      'k = 2',
      handler(OLD, 'SessionEnd', 'timeout = 3'),
    ].join('\n');
    expect(plan(text).text).toBe(text.replace(OLD, COMMAND));
  });

  it('cuts the sub-tables of a managed handler with it, even when a group table sits between', () => {
    const user = ['[[hooks.SessionEnd]]', handler('echo')].join('\n');
    const env = ['[hooks.SessionEnd.hooks.env]', 'A = "1"', ''].join('\n');
    const extra = ['[hooks.SessionEnd.extra]', 'k = 1', ''].join('\n');
    expect(plan(`${user}${handler(OLD)}${env}`, null).text).toBe(user);
    expect(plan(`${user}${handler(OLD)}${extra}${env}`, null).text).toBe(`${user}${extra}`);
    expect(plan(`${user}${handler(OLD)}# note\n${env}`, null).text).toBe(`${user}# note\n`);
    // A sub-table after a later user handler is that handler's.
    const after = `${user}${handler(OLD)}${handler('say')}${env}`;
    expect(plan(`${after}${group(OLD, 'timeout = 3')}`).text).toBe(
      `${user}${handler('say')}${env}${group(COMMAND, 'timeout = 3')}`,
    );
  });

  it('refuses to cut a managed handler written inside a group table, pointing at that group', () => {
    const own = `a = 1\n[[hooks.SessionEnd]]\nhooks = [{ command = "${OLD}" }]\n`;
    expect(refusal(own, null)).toEqual(['NATIVE_CONFIG_CONFLICT', 2, 1]);
    expect(thrown(() => plan(own, null)).message).toContain(INLINE);
    const mixed = `a = 1\n[[hooks.SessionEnd]]\nhooks = [{ command = "echo" }, { command = "${OLD}" }]\n`;
    expect(refusal(mixed, null)).toEqual(['NATIVE_CONFIG_CONFLICT', 2, 1]);
    // Even when it is already right: the agent's own group written as tables is the one kept.
    const right =
      `[[hooks.SessionEnd]]\nhooks = [{ type = "command", command = ${tomlString(COMMAND)}, timeout = ` + `3 }]\n`;
    expect(refusal(`${right}${group(OLD, 'timeout = 3')}`)).toEqual(['NATIVE_CONFIG_CONFLICT', 1, 1]);
    expect(refusal(`${right}${group(OLD, 'timeout = 3')}`, null)).toEqual(['NATIVE_CONFIG_CONFLICT', 1, 1]);
  });
});

describe('planToml: where a definition of the event is pointed out', () => {
  it('points at tables that make the event a table, or a table of handlers', () => {
    const cases: Array<[string, number]> = [
      ['model = "o3"\n[hooks.SessionEnd.x]\ny = 1\n', 2],
      ['model = "o3"\n[[hooks.SessionEnd.hooks]]\ncommand = "echo"\n', 2],
      ['model = "o3"\n[hooks.SessionEnd.hooks]\ny = 1\n', 2],
      ['model = "o3"\n[hooks]\nx = 1\n[hooks.SessionEnd]\ny = 1\n', 4],
    ];
    for (const [text, line] of cases) {
      const error = thrown(() => plan(text));
      expect([error.code, error.line, error.column]).toEqual(['NATIVE_CONFIG_CONFLICT', line, 1]);
      expect(error.message).toContain('hooks.SessionEnd (or hooks) is defined here as an inline value');
    }
  });

  it('appends beside dotted keys that put other things under hooks', () => {
    const text = 'hooks.Stop = [{ hooks = [{ command = "say" }] }]\nhooks.other = 1\n';
    const installed = plan(text);
    expect(installed.text).toBe(`${text}\n${BLOCK}`);
  });
});

describe('planToml: cutting the separator around a removed group', () => {
  it('takes a blank line before a removed group only when one follows it or it ends the file', () => {
    const other = '[other]\nz = 1\n';
    expect(plan(`a = 1\n\n${BLOCK}${other}`, null).text).toBe(`a = 1\n\n${other}`);
    expect(plan(`a = 1\n\n${BLOCK}\n${other}`, null).text).toBe(`a = 1\n\n${other}`);
    expect(plan(`a = 1\n${BLOCK}${other}`, null).text).toBe(`a = 1\n${other}`);
    // At the start of the file, the blank line after it goes instead.
    expect(plan(`${BLOCK}\n${other}`, null).text).toBe(other);
    expect(plan(`${BLOCK}${other}`, null).text).toBe(other);
    // Not the blank line after a group further down.
    expect(plan(`a = 1\n${BLOCK}\n${other}`, null).text).toBe(`a = 1\n\n${other}`);
    // Two groups that share the blank line between them: one cut takes it forward, the other back.
    expect(plan(`${group(OLD)}\n${group(OLD)}\n${other}`, null).text).toBe(`\n${other}`);
  });

  it('cuts a recorded separator only before the last group, and only as recorded', () => {
    const other = '[other]\nz = 1\n';
    const record = { format: 'toml', lead: '\n', gap: '\n' };
    // The user wrote more after the block: the recorded lead is not the agent's to take.
    expect(plan(`a = 1\n\n${BLOCK}${other}`, null, record).text).toBe(`a = 1\n${other}`);
    // A recorded CRLF gap is not the LF blank line the user left.
    expect(plan(`a = 1\n\n${BLOCK}`, null, { format: 'toml', lead: '', gap: '\r\n' }).text).toBe('a = 1\n\n');
    // A recorded LF gap in a file the user turned to CRLF: the blank line stays whole.
    const crlf = `a = 1\r\n\r\n${BLOCK.replace(/\n/g, '\r\n')}`;
    expect(plan(crlf, null, { format: 'toml', lead: '', gap: '\n' }).text).toBe('a = 1\r\n\r\n');
    expect(plan(crlf, null, { format: 'toml', lead: '\n', gap: '\n' }).text).toBe('a = 1\r\n\r\n');
    // Nor before a removed group further up.
    const two = `a = 1\n\n${group(OLD, 'timeout = 3')}${other}\n${BLOCK}`;
    expect(plan(two, null, { format: 'toml', lead: '', gap: '\n' }).text).toBe(`a = 1\n\n${other}`);
    // Duplicates cut while the block is kept are not the recorded separator either.
    const dup = `${group(COMMAND, 'timeout = 3')}\n\n${group(OLD, 'timeout = 3')}`;
    expect(plan(dup, desired, record).text).toBe(`${group(COMMAND, 'timeout = 3')}\n`);
  });

  it('cuts a group with two managed handlers once, as one range', () => {
    const two = `[[hooks.SessionEnd]]\n${handler(OLD)}${handler(COMMAND)}`;
    expect(plan(`a = 1\n\n${two}`, null, { format: 'toml', lead: '', gap: '' }).text).toBe('a = 1\n\n');
    expect(plan(`a = 1\n\n${two}`, null, undefined).text).toBe('a = 1\n');
  });
});

describe('planToml: which managed handler is kept', () => {
  it('prefers a group of its own with one handler over a managed handler in the user group before it', () => {
    const user = ['[[hooks.SessionEnd]]', handler('echo')].join('\n');
    const text = `${user}${handler(OLD, 'SessionEnd', 'timeout = 3')}${group(OLD, 'timeout = 3')}`;
    expect(plan(text).text).toBe(`${user}${group(COMMAND, 'timeout = 3')}`);
  });

  it('prefers a single-handler group over an earlier group with two managed handlers', () => {
    const two =
      `[[hooks.SessionEnd]]\nmatcher = "x"\n${handler(OLD, 'SessionEnd', 'timeout = 3')}` +
      `${handler(OLD, 'SessionEnd', 'timeout = 3')}`;
    expect(plan(`${two}${group(OLD, 'timeout = 3')}`).text).toBe(group(COMMAND, 'timeout = 3'));
    // With no other group, the first handler of that group stays and the second goes.
    expect(plan(two).text).toBe(
      `[[hooks.SessionEnd]]\nmatcher = "x"\n${handler(COMMAND, 'SessionEnd', 'timeout = 3')}`,
    );
  });

  it('counts the handlers of a group within its own event', () => {
    const stop = ['[[hooks.Stop]]', handler(OLD, 'Stop')].join('\n');
    const text = `${group(OLD, 'timeout = 3')}${stop}${group(OLD, 'timeout = 9', 'note = 2')}`;
    expect(plan(text).text).toBe(group(COMMAND, 'timeout = 3'));
  });

  it('never keeps a managed handler of another event', () => {
    const stop = ['[[hooks.Stop]]', handler(OLD, 'Stop')].join('\n');
    expect(plan(`a = 1\n\n${stop}`).text).toBe(`a = 1\n\n${BLOCK}`);
    // An own group of another event goes whole, header and all.
    expect(plan(`${group(OLD, 'timeout = 3')}${stop}`).text).toBe(group(COMMAND, 'timeout = 3'));
  });

  it('keeps an inline handler that is already right over a table one after it, and refuses the other way round', () => {
    const right = `{ type = "command", command = ${tomlString(COMMAND)}, timeout = 3 }`;
    const mixedRight = `[[hooks.SessionEnd]]\nhooks = [{ command = "echo" }, ${right}]\n`;
    const user = `[[hooks.SessionEnd]]\n${handler('echo')}`;
    expect(plan(`${mixedRight}${user}${handler(OLD)}`).text).toBe(`${mixedRight}${user}`);
    expect(refusal(`${user}${handler(OLD)}${mixedRight}`)).toEqual(['NATIVE_CONFIG_CONFLICT', 8, 1]);
    // The first managed handler that cannot be edited is the one pointed at.
    const wrongInline = `[[hooks.SessionEnd]]\nhooks = [{ command = "echo" }, { command = "${OLD}" }]\n`;
    expect(refusal(`${wrongInline}${user}${handler(OLD)}${wrongInline}`)).toEqual(['NATIVE_CONFIG_CONFLICT', 1, 1]);
  });
});

describe('planToml: editing the kept handler, byte by byte', () => {
  it('leaves a right value alone however it is spelled', () => {
    const literal = group(OLD, 'timeout = +3').replace('type = "command"', "type = 'command'");
    expect(plan(literal).text).toBe(literal.replace(OLD, COMMAND));
  });

  it('adds the timeout right after a command that a cut group follows', () => {
    expect(plan(`${group(COMMAND)}${group(OLD, 'timeout = 3')}`).text).toBe(group(COMMAND, 'timeout = 3'));
    expect(plan(`${group(OLD)}${group(OLD, 'timeout = 3')}`).text).toBe(group(COMMAND, 'timeout = 3'));
  });

  it('refuses a type or timeout set by a dotted key or a sub-table, pointing at the group', () => {
    for (const text of [
      `a = 1\n${group(OLD, 'type.x = 1')}`.replace('type = "command"\n', ''),
      `a = 1\n${group(OLD, 'timeout.x = 3')}`,
      `a = 1\n${group(OLD, '[hooks.SessionEnd.hooks.timeout]', 'x = 1')}`,
      `a = 1\n${group(OLD, 'timeout = 3', '[hooks.SessionEnd.hooks.type]', 'x = 1')}`.replace('type = "command"\n', ''),
    ]) {
      const error = thrown(() => plan(text));
      expect([error.code, error.line, error.column]).toEqual(['NATIVE_CONFIG_CONFLICT', 2, 1]);
      expect(error.message).toContain(INLINE);
    }
  });
});

describe('planToml: an event Codex does not read as hooks', () => {
  it('refuses to write a hook under hooks.state, where Codex keeps trust state', () => {
    const state = { ...desired, event: 'state' };
    for (const text of [null, '', 'a = 1\n']) {
      const error = thrown(() => plan(text, state));
      expect(error.code).toBe('NATIVE_CONFIG_CONFLICT');
      expect(error.message).toContain('cannot be written without changing your own entries');
    }
  });
});

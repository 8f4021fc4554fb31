/**
 * Claude Code's parameters of the matcher-group hooks planner: its name in messages, the managed hook it writes
 * (`type`, `command`, `timeout` in seconds, no other key) and the commands it counts as its own. The planner's rules
 * themselves are tested in test/harness-kit/matcher-hooks*.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { claude } from '../../../src/harnesses/claude/index.js';
import { buildManagedHook } from '../../../src/harness-kit/signature.js';
import type { HookPlan, ManagedHook, OwnershipRecord } from '../../../src/harnesses/types.js';
import { thrown } from '../../../../../test/support/errors.js';

const self = { node: '/usr/bin/node', entry: '/opt/blue-agent/bin/blue-agent.js' };
const desired: ManagedHook = buildManagedHook(self, 'claude', 'claude-v2_0_12', 'SessionEnd', 10);
const C = JSON.stringify(desired.command);
const RIGHT = `{"type":"command","command":${C},"timeout":10}`;
const OWN = `{"matcher":"","hooks":[${RIGHT}]}`;

const install = (text: string | null, owned?: OwnershipRecord): HookPlan =>
  claude.planHook({ text, file: 's.json', desired, owned });
const remove = (text: string | null, owned?: OwnershipRecord): HookPlan =>
  claude.planHook({ text, file: 's.json', desired: null, owned });

describe('the Claude Code settings dialect', () => {
  it('names Claude Code in its messages', () => {
    expect(thrown(() => install('[]')).hint).toBe(
      'Claude Code settings must be a JSON object ({ ... }); fix s.json so blue-agent can add its SessionEnd hook.',
    );
    const deep = `{"a":${'['.repeat(256)}${']'.repeat(256)}}`;
    expect(thrown(() => install(deep)).hint).toBe(
      'Claude Code settings are not expected to nest this deep; check the file for corruption, fix it, and run ' +
        'reconcile again.',
    );
  });

  it('writes type, command and the timeout in seconds, in that order, in a group with the empty matcher', () => {
    expect(install('{"a":1}').text).toBe(`{"a":1,"hooks":{"SessionEnd":[${OWN}]}}`);
    const long = buildManagedHook(self, 'claude', 'claude-v2_0_12', 'SessionEnd', 45);
    expect(claude.planHook({ text: '{"a":1}', file: 's.json', desired: long, owned: undefined }).text).toContain(
      '"timeout":45}',
    );
  });

  it('takes a timeout in milliseconds, or any other key, for a stale entry', () => {
    const one = (hook: string) => `{"hooks":{"SessionEnd":[{"matcher":"","hooks":[${hook}]}]}}`;
    expect(install(one(`{"type":"command","command":${C},"timeout":10000}`)).text).toBe(one(RIGHT));
    expect(install(one(`{"name":"blue-agent-capture","type":"command","command":${C},"timeout":10}`)).text).toBe(
      one(RIGHT),
    );
    expect(install(one(RIGHT)).text).toBe(one(RIGHT));
  });

  it("counts only Claude's managed commands as its own: another harness's capture hook is the user's", () => {
    const other = buildManagedHook(self, 'codex', 'codex-v1', 'SessionEnd', 10);
    const command = JSON.stringify(other.command);
    const theirs = `{"matcher":"","hooks":[{"type":"command","command":${command},"timeout":10}]}`;
    const text = `{"hooks":{"SessionEnd":[${theirs}]}}`;
    expect(remove(text)).toEqual({ text, owned: undefined, managedFound: 0 });
    expect(install(text).text).toBe(`{"hooks":{"SessionEnd":[${theirs},${OWN}]}}`);
  });
});

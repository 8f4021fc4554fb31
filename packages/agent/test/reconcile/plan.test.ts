/**
 * The pure part of planning: which action a planned text means, the profile's hook format against the planner's, and
 * the plan of one file's text.
 */
import { describe, expect, it } from 'vitest';
import { claude } from '../../src/harnesses/claude/index.js';
import { buildManagedHook } from '../../src/harness-kit/signature.js';
import { actionOf, checkHookFormat, planText } from '../../src/reconcile/plan.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';
import { thrown } from '../../../../test/support/errors.js';

const self = { node: '/usr/bin/node', entry: '/opt/blue-agent/bin/blue-agent.js' };
const desired = buildManagedHook(self, 'claude', 'claude-v2_0_12', 'SessionEnd', 10);

const interval = (format?: string): Interval =>
  ({
    profile: 'claude-v9_0_0',
    introduced: '9.0.0',
    verified_before: '9.1.0',
    lifecycle: 'supported',
    operations: [],
    ...(format === undefined
      ? {}
      : { capture: { event: 'SessionEnd', hook: { file: 'f', format, timeout_seconds: 5 } } }),
  }) as Interval;

describe('actionOf', () => {
  it('names each pair of texts by what a write does', () => {
    expect(actionOf(null, null)).toBe('unchanged');
    expect(actionOf('a', 'a')).toBe('unchanged');
    expect(actionOf('', '')).toBe('unchanged');
    expect(actionOf(null, 'a')).toBe('create');
    expect(actionOf(null, '')).toBe('create');
    expect(actionOf('a', null)).toBe('delete');
    expect(actionOf('', null)).toBe('delete');
    expect(actionOf('a', 'b')).toBe('update');
    expect(actionOf('a', '')).toBe('update');
    expect(actionOf('', 'a')).toBe('update');
  });
});

describe('checkHookFormat', () => {
  it('accepts a profile without a capture section and one in the planner’s own format', () => {
    expect(() => checkHookFormat(claude, interval())).not.toThrow();
    expect(() => checkHookFormat(claude, interval(claude.hookFormat))).not.toThrow();
  });

  it('refuses another format, naming the profile, both formats, the field and the file to fix', () => {
    const error = thrown(() => checkHookFormat(claude, interval('toml-hooks')));
    expect(error).toMatchObject({ code: 'PROFILE_INVALID', path: '/capture/hook/format' });
    expect(error.message).toBe(
      `profile claude-v9_0_0: capture.hook.format is "toml-hooks", but Claude Code's hooks are planned as "` +
        `${claude.hookFormat}"`,
    );
    expect(error.hint).toBe(`Set capture.hook.format to ${claude.hookFormat} in profiles/claude.yaml.`);
  });
});

describe('planText', () => {
  it('carries the planner’s text, ownership and count, and the action the text change means', () => {
    const created = planText(claude, 'settings.json', null, desired, undefined);
    expect(created.action).toBe('create');
    expect(created.after).toContain('capture --harness claude --profile claude-v2_0_12');
    expect(created.owned).toBeDefined();
    expect(created.managedFound).toBe(0);

    const again = planText(claude, 'settings.json', created.after, desired, created.owned);
    expect(again).toEqual({ after: created.after, owned: created.owned, managedFound: 1, action: 'unchanged' });

    const user = '{\n  "model": "opus"\n}\n';
    const updated = planText(claude, 'settings.json', user, desired, undefined);
    expect(updated.action).toBe('update');
    expect(updated.after).toContain('"model": "opus"');

    const removed = planText(claude, 'settings.json', updated.after, null, updated.owned);
    expect(removed.action).toBe('update');
    expect(removed.after).toBe(user);
    expect(removed.owned).toBeUndefined();
    expect(removed.managedFound).toBe(1);
  });
});

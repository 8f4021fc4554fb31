import { describe, expect, it } from 'vitest';
import { buildManagedHook, isManagedArgv, isManagedCommand, shellQuote, shellWords } from '../../src/harnesses/signature.js';

describe('managed hook signature', () => {
  const hook = buildManagedHook({ node: '/opt/node 24/bin/node', entry: "/home/o'brien/blue-agent/bin/blue-agent.js" }, 'claude', 'claude-v2_0_12', 'SessionEnd', 10);

  it('quotes paths so a shell reads back the same words', () => {
    expect(hook.command).toBe(`'/opt/node 24/bin/node' '/home/o'\\''brien/blue-agent/bin/blue-agent.js' capture --harness claude --profile claude-v2_0_12`);
    expect(shellWords(hook.command)).toEqual(hook.argv);
  });

  it.each([
    [`'/usr/bin/node' '/x/bin/blue-agent.js' capture --harness claude --profile p`, true],
    [`/usr/bin/node /x/bin/blue-agent.js capture --harness=claude`, true],
    [`blue-agent capture --harness claude`, true],
    [`/usr/bin/env node /x/blue-agent.js capture --harness claude`, true],
    [`"/usr/local/bin/node" "/x/blue-agent.js" capture --profile p --harness claude`, true],
    [`/usr/bin/node /x/bin/blue-agent.js capture --harness codex`, false],
    [`echo blue-agent capture --harness claude`, false],
    [`/usr/bin/node /x/other.js capture --harness claude`, false],
    [`/usr/bin/node /x/blue-agent.js drain --harness claude`, false],
    [`my-script.sh`, false],
    [``, false],
  ])('%s -> %s', (command, expected) => {
    expect(isManagedCommand(command, 'claude')).toBe(expected);
  });

  it('recognises argument vectors', () => {
    expect(isManagedArgv(hook.argv, 'claude')).toBe(true);
    expect(isManagedArgv(hook.argv, 'kimi')).toBe(false);
  });

  it('leaves plain words bare', () => {
    expect(shellQuote('capture')).toBe('capture');
    expect(shellQuote('a b')).toBe(`'a b'`);
    expect(shellQuote('$HOME')).toBe(`'$HOME'`);
  });
});

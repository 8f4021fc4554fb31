import { describe, expect, it } from 'vitest';
import { buildManagedHook, isManagedArgv, isManagedCommand, shellQuote, shellWords } from '../../src/harnesses/signature.js';

// Reading shell words and recognising the managed capture command, edge by edge.

describe('shellQuote', () => {
  it('leaves words of safe characters bare, but always quotes an absolute path', () => {
    for (const word of ['capture', '--harness', 'claude-v2_0_12', 'a.b:c@d%e+f=g,h', 'x/y']) expect(shellQuote(word)).toBe(word);
    expect(shellQuote('/usr/bin/node')).toBe(`'/usr/bin/node'`);
    expect(shellQuote('')).toBe(`''`);
    expect(shellQuote("it's")).toBe(`'it'\\''s'`);
    for (const word of ['a b', 'a*', '~/x', 'a;b', 'a"b', 'é']) expect(shellQuote(word)).toBe(`'${word}'`);
  });
});

describe('shellWords', () => {
  it('splits on any whitespace and joins quoted parts into one word', () => {
    expect(shellWords(' a\tb\n c  ')).toEqual(['a', 'b', 'c']);
    expect(shellWords(`a'b c'd "e f"g`)).toEqual(['ab cd', 'e fg']);
    expect(shellWords(`'' ""`)).toEqual(['', '']);
  });

  it('reads backslash escapes outside quotes and the four escapes inside double quotes', () => {
    expect(shellWords('a\\ b \\"c')).toEqual(['a b', '"c']);
    expect(shellWords('"\\" \\\\ \\$ \\` \\n"')).toEqual(['" \\ $ ` \\n']);
    expect(shellWords("'\\n'")).toEqual(['\\n']);
    expect(shellWords('a\\')).toEqual(['a\\']);
    expect(shellWords('\\  x')).toEqual([' ', 'x']);
  });

  it('keeps an unterminated quote as the rest of the line', () => {
    expect(shellWords("a 'b c")).toEqual(['a', 'b c']);
    expect(shellWords('a "b c')).toEqual(['a', 'b c']);
  });
});

describe('isManagedArgv', () => {
  const entry = '/opt/blue-agent/bin/blue-agent.js';
  it('accepts every name of the entry, alone, after node, or after env node', () => {
    for (const name of ['blue-agent', 'blue-agent.js', 'blue-agent.mjs', 'blue-agent.cjs']) {
      expect(isManagedArgv([`/x/${name}`, 'capture', '--harness', 'kimi'], 'kimi')).toBe(true);
    }
    for (const node of ['node', 'nodejs', '/usr/bin/node24', 'node24.1.0', 'nodejs22']) expect(isManagedArgv([node, entry, 'capture', '--harness', 'kimi'], 'kimi'), node).toBe(true);
    expect(isManagedArgv(['/usr/bin/env', 'node', entry, 'capture', '--harness', 'kimi'], 'kimi')).toBe(true);
  });

  it('refuses any other runner', () => {
    for (const runner of [['bash'], ['node', 'env'], ['node', '--inspect'], ['nodex'], ['xnode'], ['node-24'], ['env', 'bash'], ['sudo', 'node'], ['env', 'node', 'extra']]) {
      expect(isManagedArgv([...runner, entry, 'capture', '--harness', 'kimi'], 'kimi'), runner.join(' ')).toBe(false);
    }
  });

  it('needs capture right after the entry and a --harness naming the harness', () => {
    expect(isManagedArgv(['capture', '--harness', 'kimi'], 'kimi')).toBe(false);
    expect(isManagedArgv([entry, 'x', 'capture', '--harness', 'kimi'], 'kimi')).toBe(false);
    expect(isManagedArgv([entry, 'capture', '--harness'], 'kimi')).toBe(false);
    expect(isManagedArgv([entry, 'capture', '--harness='], 'kimi')).toBe(false);
    expect(isManagedArgv([entry, 'capture', '--harness=kimi'], 'kimi')).toBe(true);
    expect(isManagedArgv([entry, 'capture', '--profile', 'p', '--harness=kimi'], 'kimi')).toBe(true);
    expect(isManagedArgv([entry, 'capture', '--profile', 'p', '--harness', 'kimi'], 'kimi')).toBe(true);
    expect(isManagedArgv([entry, 'capture', '--harnesses', 'kimi'], 'kimi')).toBe(false);
    expect(isManagedArgv([entry, 'capture'], 'kimi')).toBe(false);
    expect(isManagedArgv([], 'kimi')).toBe(false);
  });

  it('recognises the command it builds, wherever the agent lives', () => {
    const hook = buildManagedHook({ node: '/n/node', entry: '/a b/blue-agent.js' }, 'codex', 'codex-v0_145_0', 'SessionEnd', 3);
    expect(hook).toEqual({
      harness: 'codex',
      profile: 'codex-v0_145_0',
      event: 'SessionEnd',
      timeoutSeconds: 3,
      argv: ['/n/node', '/a b/blue-agent.js', 'capture', '--harness', 'codex', '--profile', 'codex-v0_145_0'],
      command: `'/n/node' '/a b/blue-agent.js' capture --harness codex --profile codex-v0_145_0`,
    });
    expect(isManagedCommand(hook.command, 'codex')).toBe(true);
    expect(isManagedCommand(hook.command, 'claude')).toBe(false);
  });
});

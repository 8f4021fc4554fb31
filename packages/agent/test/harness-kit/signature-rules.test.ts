import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  buildManagedHook,
  isManagedArgv,
  isManagedCommand,
  shellQuote,
  shellWords,
} from '../../src/harness-kit/signature.js';

// Reading shell words and recognising the managed capture command, edge by edge.

describe('shellQuote', () => {
  it('leaves words of safe characters bare, but always quotes an absolute path', () => {
    for (const word of ['capture', '--harness', 'claude-v2_0_12', 'a.b:c@d%e+f=g,h', 'x/y'])
      expect(shellQuote(word)).toBe(word);
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
  const tail = ['capture', '--harness', 'kimi', '--profile', 'kimi-v1_28_0'];
  it(
    'accepts exactly what buildManagedHook writes: every name of the entry and of Node, directly or through the ' +
      'sh hook',
    () => {
      for (const name of ['blue-agent', 'blue-agent.js', 'blue-agent.mjs', 'blue-agent.cjs']) {
        expect(isManagedArgv(['/usr/bin/node', `/x/${name}`, ...tail], 'kimi'), name).toBe(true);
      }
      for (const node of ['/usr/bin/node', '/usr/bin/nodejs', '/usr/bin/node24', '/o/node24.1.0', '/o/nodejs22'])
        expect(isManagedArgv([node, entry, ...tail], 'kimi'), node).toBe(true);
      expect(
        isManagedArgv(['/bin/sh', '/opt/blue-agent/bin/blue-agent-hook', '/usr/bin/node', entry, ...tail], 'kimi'),
      ).toBe(true);
    },
  );

  it('refuses any other runner: none, a relative one, env, another shell, sudo, flags', () => {
    for (const runner of [
      [],
      ['node'],
      ['/usr/bin/env', 'node'],
      ['/bin/bash'],
      ['/usr/bin/node', '--inspect'],
      ['/o/nodex'],
      ['/o/xnode'],
      ['/o/node-24'],
      ['sudo', '/usr/bin/node'],
      ['/usr/bin/node', '/usr/bin/node'],
    ]) {
      expect(isManagedArgv([...runner, entry, ...tail], 'kimi'), runner.join(' ')).toBe(false);
    }
    for (const hook of [
      ['sh', '/h/blue-agent-hook'],
      ['/bin/bash', '/h/blue-agent-hook'],
      ['/bin/sh', 'blue-agent-hook'],
      ['/bin/sh', '/h/other-hook'],
      ['/bin/sh', '-c', '/h/blue-agent-hook'],
    ]) {
      expect(isManagedArgv([...hook, '/usr/bin/node', entry, ...tail], 'kimi'), hook.join(' ')).toBe(false);
    }
    expect(isManagedArgv(['/usr/bin/node', 'blue-agent.js', ...tail], 'kimi')).toBe(false);
  });

  it('needs exactly capture --harness <it> --profile <name>, nothing before, between or after', () => {
    const node = '/usr/bin/node';
    expect(isManagedArgv([node, entry, ...tail], 'kimi')).toBe(true);
    for (const words of [
      ['capture', '--harness', 'kimi'],
      ['capture', '--harness=kimi', '--profile', 'p'],
      ['capture', '--profile', 'p', '--harness', 'kimi'],
      ['capture', '--harness', 'kimi', '--profile'],
      ['capture', '--harness', 'kimi', '--profile', 'p', '--verbose'],
      ['capture', '--harness', 'kimi', '--profile', 'p', '&&', '/usr/local/bin/backup.sh'],
      ['capture', '--harness', 'kimi', '--profile', 'p;', 'rm'],
      ['capture', '--harness', 'kimi', '--profile', 'p&&x'],
      ['capture', '--harness', 'kimi', '--profile', 'p|tee'],
      ['capture', '--harness', 'kimi', '--profile', '$(x)'],
      ['capture', '--harness', 'kimi', '--profile', '`x`'],
      ['capture', '--harness', 'kimi', '--profile', 'p>out'],
      ['capture', '--harness', 'kimi', '--profile', ''],
      ['capture', '--harnesses', 'kimi', '--profile', 'p'],
      ['drain', '--harness', 'kimi', '--profile', 'p'],
      ['x', 'capture', '--harness', 'kimi'],
    ]) {
      expect(isManagedArgv([node, entry, ...words], 'kimi'), words.join(' ')).toBe(false);
    }
    expect(isManagedArgv([], 'kimi')).toBe(false);
    expect(isManagedArgv([node, entry, ...tail], 'claude')).toBe(false);
  });

  it('recognises the command it builds, wherever the agent lives', () => {
    const hook = buildManagedHook(
      { node: '/n/node', entry: '/a b/blue-agent.js' },
      'codex',
      'codex-v0_145_0',
      'SessionEnd',
      3,
    );
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

describe('isManagedCommand (property)', () => {
  const dir = fc
    .array(
      fc.string({ minLength: 1, maxLength: 8 }).map((segment) => segment.replace(/\//g, '_')),
      { maxLength: 3 },
    )
    .map((segments) => `/${segments.map((x) => `${x}/`).join('')}`);
  const self = fc.record({
    node: fc.tuple(dir, fc.constantFrom('node', 'nodejs', 'node24')).map(([d, n]) => d + n),
    entry: fc
      .tuple(dir, fc.constantFrom('blue-agent', 'blue-agent.js', 'blue-agent.mjs', 'blue-agent.cjs'))
      .map(([d, n]) => d + n),
    hook: fc.option(
      dir.map((d) => `${d}blue-agent-hook`),
      { nil: undefined },
    ),
  });
  const profile = fc.stringMatching(/^[a-z0-9]{1,8}-v[0-9]_[0-9]_[0-9][A-Za-z0-9_.-]{0,4}$/);
  // What a user adds to a command: operators alone or glued to a word, more words, redirections, spaces. (Letters
  // glued to the profile only name another profile: still the managed shape.)
  const addition = fc.oneof(
    fc.constantFrom(
      ' && /usr/local/bin/backup-transcripts.sh',
      '&&x',
      ';x',
      '; x',
      '|tee',
      ' | tee',
      '>out',
      ' 2>&1',
      '`id`',
      '$(id)',
      ' --verbose',
      ' x',
      ' ',
      '\n',
      '#',
      "'",
    ),
    fc.string({ minLength: 1, maxLength: 12 }).filter((extra) => !/^[A-Za-z0-9._-]+$/.test(extra)),
  );

  it('recognises every command buildManagedHook writes, for its harness only', () => {
    fc.assert(
      fc.property(self, profile, (who, name) => {
        const hook = buildManagedHook(who, 'claude', name, 'SessionEnd', 10);
        expect(isManagedCommand(hook.command, 'claude')).toBe(true);
        expect(isManagedArgv(hook.argv, 'claude')).toBe(true);
        expect(isManagedCommand(hook.command, 'kimi')).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it('recognises nothing a user made of it by adding anything before or after', () => {
    fc.assert(
      fc.property(self, profile, addition, fc.boolean(), (who, name, extra, before) => {
        const { command } = buildManagedHook(who, 'claude', name, 'SessionEnd', 10);
        const changed = before ? `${extra}${command}` : `${command}${extra}`;
        expect(isManagedCommand(changed, 'claude'), changed).toBe(false);
      }),
      { numRuns: 500 },
    );
  });
});

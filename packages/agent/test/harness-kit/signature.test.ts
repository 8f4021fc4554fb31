import { describe, expect, it } from 'vitest';
import {
  buildManagedHook,
  isManagedArgv,
  isManagedCommand,
  shellQuote,
  shellWords,
} from '../../src/harness-kit/signature.js';

describe('managed hook signature', () => {
  const hook = buildManagedHook(
    { node: '/opt/node 24/bin/node', entry: "/home/o'brien/blue-agent/bin/blue-agent.js" },
    'claude',
    'claude-v2_0_12',
    'SessionEnd',
    10,
  );

  it('quotes paths so a shell reads back the same words', () => {
    expect(hook.command).toBe(
      `'/opt/node 24/bin/node' '/home/o'\\''brien/blue-agent/bin/blue-agent.js' capture --harness claude --profile ` +
        `claude-v2_0_12`,
    );
    expect(shellWords(hook.command)).toEqual(hook.argv);
  });

  it.each([
    [`'/usr/bin/node' '/x/bin/blue-agent.js' capture --harness claude --profile p`, true],
    [
      `'/bin/sh' '/x/bin/blue-agent-hook' '/usr/bin/node' '/x/bin/blue-agent.js' capture --harness claude ` +
        `--profile claude-v2_0_12`,
      true,
    ],
    // Everything else is the user's, however much of the managed command it holds.
    [
      `node /opt/tools/blue-agent.js capture --harness claude --profile mine && /usr/local/bin/backup-transcripts.sh`,
      false,
    ],
    [
      `'/usr/bin/node' '/x/bin/blue-agent.js' capture --harness claude --profile p && ` +
        `/usr/local/bin/backup-transcripts.sh`,
      false,
    ],
    [
      `'/usr/bin/node' '/x/bin/blue-agent.js' capture --harness claude --profile ` +
        `p&&/usr/local/bin/backup-transcripts.sh`,
      false,
    ],
    [`'/usr/bin/node' '/x/bin/blue-agent.js' capture --harness claude --profile p; logger done`, false],
    [`'/usr/bin/node' '/x/bin/blue-agent.js' capture --harness claude --profile p | tee -a /tmp/log`, false],
    [`'/usr/bin/node' '/x/bin/blue-agent.js' capture --harness claude --profile p >>/tmp/log 2>&1`, false],
    [`'/usr/bin/node' '/x/bin/blue-agent.js' capture --harness claude --profile p;x`, false],
    [`'/usr/bin/node' '/x/bin/blue-agent.js' capture --harness claude --profile "p"`, false],
    [`'/usr/bin/node' '/x/bin/blue-agent.js' capture --harness claude --profile p `, false],
    [` '/usr/bin/node' '/x/bin/blue-agent.js' capture --harness claude --profile p`, false],
    [`'/usr/bin/node' /x/$(id)/blue-agent.js capture --harness claude --profile p`, false],
    [`'/usr/bin/node' '/x/bin/blue-agent.js' capture --harness claude --profile \`id\``, false],
    [`/usr/bin/node /x/bin/blue-agent.js capture --harness claude --profile p`, false],
    [`"/usr/local/bin/node" "/x/blue-agent.js" capture --harness claude --profile p`, false],
    [`/usr/bin/node /x/bin/blue-agent.js capture --harness=claude`, false],
    [`blue-agent capture --harness claude`, false],
    [`/usr/bin/env node /x/blue-agent.js capture --harness claude`, false],
    [`'/usr/bin/node' '/x/bin/blue-agent.js' capture --harness codex --profile p`, false],
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

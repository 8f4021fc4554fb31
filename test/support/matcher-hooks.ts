/**
 * Example dialects for the matcher-group hooks planner (`src/harness-kit/matcher-hooks.ts`): one that writes
 * `{type, command, timeout}` with the timeout in seconds, one that writes `{name, type, command, timeout}` with the
 * timeout in milliseconds, and the managed hook both are tested with.
 */
import type { MatcherHook, MatcherHooksDialect } from '../../packages/agent/src/harness-kit/matcher-hooks.js';

export const EXAMPLE_HOOK: MatcherHook = {
  event: 'SessionEnd',
  command: "'/usr/bin/node' '/opt/blue-agent/bin/blue-agent.js' capture --harness example --profile example-v1",
  timeoutSeconds: 10,
};

/** The example harness's managed command, by the words the agent writes (enough for the planner's tests). */
const isExampleCommand = (command: string): boolean => command.includes(' capture --harness example ');

export const SECONDS_DIALECT: MatcherHooksDialect = {
  displayName: 'Example CLI',
  isManagedCommand: isExampleCommand,
  entry: (hook) => ({ type: 'command', command: hook.command, timeout: hook.timeoutSeconds }),
};

export const MILLISECONDS_DIALECT: MatcherHooksDialect = {
  displayName: 'Other CLI',
  isManagedCommand: isExampleCommand,
  entry: (hook) => ({
    name: 'blue-agent-capture',
    type: 'command',
    command: hook.command,
    timeout: hook.timeoutSeconds * 1000,
  }),
};

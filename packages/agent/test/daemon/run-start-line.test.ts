/**
 * `blue-agent run` started by hand says, once, where its log goes; under a service (stdout is the journal, or no
 * terminal) it says nothing.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { logLocationLine } from '../../src/cli/run.js';
import { detectLogTarget } from '../../src/daemon/log.js';

describe('the start line of run', () => {
  const state = '/home/me/.local/state/blue-agent';

  it('in a terminal names the log file', () => {
    const line = logLocationLine(
      detectLogTarget({}, path.join(state, 'run.log'), 1024, () => undefined),
      true,
    );
    expect(line).toBe(
      `blue-agent run: the agent is running; its log is ${path.join(state, 'run.log')} (BLUE_AGENT_LOG=json logs ` +
        `here instead). Ctrl-C stops it.`,
    );
  });

  it('says nothing without a terminal or when the log is stdout', () => {
    expect(
      logLocationLine(
        detectLogTarget({}, path.join(state, 'run.log'), 1024, () => undefined),
        false,
      ),
    ).toBeUndefined();
    expect(
      logLocationLine(detectLogTarget({ BLUE_AGENT_LOG: 'json' }, path.join(state, 'run.log')), true),
    ).toBeUndefined();
    expect(
      logLocationLine(
        detectLogTarget({ JOURNAL_STREAM: '8:42' }, path.join(state, 'run.log'), 1024, () => '8:42'),
        true,
      ),
    ).toBeUndefined();
  });
});

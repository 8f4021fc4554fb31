/**
 * The real harness CLIs, run offline in an isolated HOME: every version the lock file pins reports a version the
 * profiles understand, inside an interval that captures. What each CLI does in a headless session against the model
 * stub (its user hook, the managed hook, capture, restore and resume) is checked in its own test folder
 * (test/harnesses/<name>/real-cli.test.ts, on test/support/real-cli.ts).
 */
import { describe, expect, it } from 'vitest';
import { parseVersionOutput, requireProfiles, selectInterval } from '@blue-agent/contract/profiles/index.js';
import { harnessBin, lockedVersions } from '../../../../test/support/harness-bins.js';
import { useOfflineSession } from '../../../../test/support/real-cli.js';
import { lockedHarnesses } from '../../../../test/support/rigs.js';
import { describeRun, harnessEnv, runProcess } from '../../../../test/support/run-harness.js';

const w = useOfflineSession();

describe.each(lockedHarnesses())('%s --version', (harness) => {
  it.each(lockedVersions(harness))(
    '%s is parsed by the profile patterns and falls in a capture interval',
    async (version) => {
      const { t, cwd, profiles } = w;
      const bin = harnessBin(harness, version);
      const result = await runProcess(bin, ['--version'], { env: harnessEnv(t.home), cwd, timeoutMs: 30_000 });
      expect(result.exitCode, describeRun(result)).toBe(0);
      const loaded = requireProfiles(profiles, harness);
      expect(parseVersionOutput(loaded, result.stdout), describeRun(result)).toBe(version);
      const choice = selectInterval(loaded.doc, version);
      expect(choice, `no interval of ${loaded.file} holds ${version}`).toBeDefined();
      expect(choice!.interval.operations).toContain('session_capture');
    },
  );
});

describe('a harness run', () => {
  it('reaches no git remote: git refuses every transport but local files before connecting', async () => {
    const { t, cwd } = w;
    const result = await runProcess('git', ['ls-remote', 'https://github.com/openai/plugins.git'], {
      env: harnessEnv(t.home),
      cwd,
      timeoutMs: 30_000,
    });
    expect(result.exitCode, describeRun(result)).not.toBe(0);
    expect(result.stderr, describeRun(result)).toMatch(/transport 'https' not allowed/);
  });
});

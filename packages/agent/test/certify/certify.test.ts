/**
 * Certification: the whole loop against every CLI version pinned in harness-versions.lock.json, offline, each in
 * temporary HOMEs, with the loopback model stub and the reference Control API in process.
 *
 *   install   the locked version is in the harness cache and `--version` selects the expected profile
 *   reconcile reconcile installs the managed hook beside a user hook in the same native file; both fire on a real run
 *   session   a real headless session ends normally
 *   capture   the managed hook captured that session (spooled, then built into a bundle)
 *   drain     `blue-agent drain` leaves nothing waiting and the Control API lists the session complete
 *   restore   `blue-agent resume ID --dest DIR --yes --no-launch --json` on a second HOME restores it
 *   resume    the native resume command, run headless on the second HOME, sends the earlier turns to the model
 *
 * A profile without `session_resume` has `n/a` for restore and resume. The targets: every locked version of every
 * harness in the lock file, run through its rig's `cli` (test/harnesses/<name>/rig.ts); for each harness with two or
 * more locked versions in intervals with `session_resume`, a cross-version target (`OLD→NEW`): the oldest of them
 * captures the session (install to drain as above), the newest restores and resumes it; and for each harness certified
 * on fixtures (FIXTURE_CERTIFIED), one target per version folder of fixtures/sessions/<name>/, run by its rig's
 * `certifyOnFixtures` (the same steps on a fixture session that follows its source).
 *
 * Run by `npm run certify` (scripts/certify.mjs), never by plain `npm test`. Filters and the result file come from:
 *   BLUE_AGENT_CERTIFY_TARGETS (JSON `[{harness, version, method, from?}]`, what to certify; all targets when unset)
 * and
 *   BLUE_AGENT_CERTIFY_RESULTS (JSON, one record per target).
 */
import { describe, expect, it } from 'vitest';
import { reconcile } from '../../src/reconcile/index.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';
import { crossTargets, resumableIn, resumesFrom, targetLabel } from '../../../../scripts/certify-plan.mjs';
import { fixtureVersions, readProfiles } from '../../../../scripts/compat.mjs';
import {
  DEFAULT_LOCK_FILE,
  installCommand,
  installedHarness,
  readLock,
} from '../../../../scripts/install-harnesses.mjs';
import {
  agentOn,
  captured,
  check,
  drained,
  explain,
  intervalFor,
  pathWith,
  Recorder,
  restoredOnB,
  startMachines,
  userHookSessions,
  type Machines,
  type Target,
  type TargetResult,
} from '../../../../test/support/certify.js';
import { captureLog } from '../../../../test/support/cli-process.js';
import { harnessCacheDir, lockedVersions } from '../../../../test/support/harness-bins.js';
import { cliRig, fixtureCertified, lockedHarnesses, rigFor } from '../../../../test/support/rigs.js';
import { harnessEnv, type HarnessRunResult } from '../../../../test/support/run-harness.js';

const CODE_WORD = 'HERON-4410-WOMBAT';
const FIRST_PROMPT = `Keep this code word in mind: ${CODE_WORD}. Answer OK.`;
const SECOND_PROMPT = 'What was the code word?';
const RUN_TIMEOUT_MS = 120_000;
const TARGET_TIMEOUT_MS = 420_000;

/** Every locked version of every harness in the lock file, and every fixture version of those certified on fixtures. */
function allTargets(): Target[] {
  const list: Target[] = [];
  for (const harness of lockedHarnesses()) {
    for (const version of lockedVersions(harness)) list.push({ harness, version, method: 'cli' });
    // The oldest resumable version's session, restored and resumed by the newest.
    const lock = readLock(DEFAULT_LOCK_FILE);
    const docs = readProfiles().map(({ doc }) => doc);
    for (const cross of crossTargets({ [harness]: lock[harness]! }, resumableIn(docs), resumesFrom(docs)))
      list.push(cross as Target);
  }
  // Harnesses certified on fixtures: one target per fixture version (the folder names of fixtures/sessions/<name>/).
  for (const harness of fixtureCertified()) {
    for (const version of fixtureVersions(harness)) list.push({ harness, version, method: 'fixtures' });
  }
  return list;
}

/**
 * The targets scripts/certify.mjs planned (its flags: one harness, one version, the registry's newest), or all of
 * them when the suite runs on its own.
 */
function targets(): Target[] {
  const planned = process.env.BLUE_AGENT_CERTIFY_TARGETS;
  if (planned === undefined || planned === '') return allTargets();
  const list = JSON.parse(planned) as unknown;
  const ok = (t: unknown): t is Target =>
    typeof t === 'object' &&
    t !== null &&
    typeof (t as Target).harness === 'string' &&
    typeof (t as Target).version === 'string' &&
    (['cli', 'fixtures'].includes((t as Target).method) ||
      ((t as Target).method === 'cross' && typeof (t as Target).from === 'string'));
  if (!Array.isArray(list) || !list.every(ok))
    throw new Error('BLUE_AGENT_CERTIFY_TARGETS is not a list of {harness, version, method, from?}');
  return list;
}

// ---------------------------------------------------------------------------------------------------------------

/**
 * One locked version (`cli`): it captures the session and resumes it. A cross-version target (`cross`): `from`
 * captures it (reconcile, session, capture, drain) and `version` restores and resumes it on the second HOME.
 */
async function certifyCli(target: Target): Promise<TargetResult> {
  const rec = new Recorder(target);
  const { harness } = target;
  const version = target.from ?? target.version;
  const cli = cliRig(harness);
  let bin = '';
  let resumeBin = '';
  let interval: Interval | undefined;
  let resumeInterval: Interval | undefined;
  let r: Machines | undefined;
  try {
    await rec.step('install', async () => {
      const installedBin = async (v: string): Promise<string> => {
        const installed = installedHarness(harnessCacheDir(), harness, v);
        check(
          installed !== undefined,
          () => `${harness} ${v} is not installed in ${harnessCacheDir()}: run \`${installCommand(harness, v)}\``,
        );
        return installed!.bin;
      };
      bin = await installedBin(version);
      resumeBin = await installedBin(target.version);
      interval = await intervalFor(harness, version);
      resumeInterval = await intervalFor(harness, target.version);
      rec.result.profile =
        interval.profile === resumeInterval.profile
          ? interval.profile
          : `${interval.profile}→${resumeInterval.profile}`;
      return resumeBin === bin ? bin : `${bin}, then ${resumeBin}`;
    });
    if (interval === undefined || resumeInterval === undefined) return rec.result;
    r = await startMachines(harness);
    const rr = r;
    const envA = harnessEnv(rr.a.home);
    let first: HarnessRunResult | undefined;

    await rec.step('reconcile', async () => {
      await cli.prepareHome?.(envA, rr.stub.url, bin);
      await cli.addUserHook(envA, rr.userOut);
      const report = (await reconcile(agentOn(rr.a, bin), { dryRun: false, harnesses: [harness] })).harnesses[0]!;
      check(
        rigFor(harness).reconcileStates.includes(report.state),
        () => `reconcile: ${report.state}: ${report.reason}`,
      );
      check(
        report.version === version,
        () =>
          `reconcile read version ${report.version} (raw ${JSON.stringify(report.raw_version)}), expected ${version}`,
      );
      check(
        report.profile === interval!.profile,
        () => `reconcile chose ${report.profile}, expected ${interval!.profile}`,
      );
      // The real CLI accepts the config and fires both hooks: checked on the session below (the managed hook's
      // capture and the user hook's payload for the same session id).
      const env = { ...rr.a.env, PATH: pathWith(bin) };
      const run = { bin, home: rr.a.home, cwd: rr.sourceCwd, stubUrl: rr.stub.url, env, timeoutMs: RUN_TIMEOUT_MS };
      if (report.state === 'awaiting_trust') {
        // What awaiting_trust claims: until the user trusts the hook, this version does not run it.
        const untrusted = await cli.run({ ...run, prompt: 'Say hello.' });
        check(untrusted.exitCode === 0, () => explain(rr, untrusted));
        const log = captureLog(rr.a.env.BLUE_AGENT_HOME!);
        check(
          log.length === 0,
          () =>
            `reconcile said awaiting_trust, yet ${harness} ${version} ran the untrusted hook: ${JSON.stringify(log)}`,
        );
        rr.stub.clear();
      }
      // A hook not trusted yet in this fresh HOME: the run trusts it, as a user who trusted it.
      first = await cli.run({ ...run, prompt: FIRST_PROMPT, trustHooks: true });
      check(first.exitCode === 0, () => explain(rr, first!));
      const sessions = await userHookSessions(rr, cli.userHookSessions);
      const managed = await captured(rr, harness);
      check(sessions.includes(managed), () => `the user hook saw ${sessions.join(', ')}, the managed hook ${managed}`);
      return `${report.state}; managed + user hook fired for ${managed}`;
    });

    let sessionId = '';
    await rec.step('session', async () => {
      check(first!.exitCode === 0, () => explain(rr, first!));
      check(
        rr.stub.textSentTo(cli.modelPath).includes(CODE_WORD),
        () => `the model stub never saw the prompt\n${explain(rr, first!)}`,
      );
      return `${first!.durationMs} ms`;
    });

    await rec.step('capture', async () => {
      sessionId = await captured(rr, harness);
      return sessionId;
    });

    let upload: { id: string; native_session_id: string } | undefined;
    await rec.step('drain', async () => {
      upload = await drained(rr, harness, sessionId);
      return upload.id;
    });

    const notResumable = [interval, resumeInterval].find((i) => !i.operations.includes('session_resume'));
    if (notResumable !== undefined) {
      rec.notApplicable('restore', `${notResumable.profile} has no session_resume`);
      rec.notApplicable('resume', `${notResumable.profile} has no session_resume`);
      return rec.result;
    }

    let command: string[] = [];
    await rec.step('restore', async () => {
      await cli.prepareResume?.(harnessEnv(rr.b.home), rr.stub.url, resumeBin);
      command = await restoredOnB(rr, upload!.id, resumeBin, cli.resumeEnv ?? {});
      const expected = cli.resumeCommand(sessionId);
      check(
        JSON.stringify(command) === JSON.stringify(expected),
        () => `resume command ${JSON.stringify(command)}, expected ${JSON.stringify(expected)}`,
      );
      return command.join(' ');
    });

    await rec.step('resume', async () => {
      rr.stub.clear();
      // The headless form of the same resume: the command's arguments, given to the rig's headless run.
      const resumed = await cli.run({
        bin: resumeBin,
        home: rr.b.home,
        cwd: rr.destination,
        prompt: SECOND_PROMPT,
        args: command.slice(1),
        stubUrl: rr.stub.url,
        env: rr.b.env,
        timeoutMs: RUN_TIMEOUT_MS,
      });
      check(resumed.exitCode === 0, () => explain(rr, resumed));
      const sent = rr.stub.textSentTo(cli.modelPath);
      check(
        sent.includes(CODE_WORD) && sent.includes(SECOND_PROMPT),
        () => `the resumed request did not carry the earlier turn\n${explain(rr, resumed)}`,
      );
      return `${resumed.durationMs} ms`;
    });
    return rec.result;
  } finally {
    rec.finish();
    await r?.close();
  }
}

function certifyOnFixtures(target: Target): Promise<TargetResult> {
  const certify = rigFor(target.harness).certifyOnFixtures;
  if (certify === undefined)
    throw new Error(`${target.harness} is certified on fixtures, but its rig has no certifyOnFixtures`);
  return certify(target);
}

// ---------------------------------------------------------------------------------------------------------------

const list = targets();
if (list.length === 0) {
  it('has something to certify', () => {
    throw new Error('no target to certify (see harness-versions.lock.json, and BLUE_AGENT_CERTIFY_TARGETS when set)');
  });
}
for (const target of list) {
  describe(`${target.harness} ${targetLabel(target)}`, () => {
    it(
      {
        cli: 'the whole loop with the real CLI',
        cross: "the oldest resumable version's session, restored and resumed by the newest",
        fixtures: 'the whole loop on fixtures that follow its source',
      }[target.method],
      async () => {
        const result = target.method === 'fixtures' ? await certifyOnFixtures(target) : await certifyCli(target);
        const failed = Object.entries(result.steps).filter(([, s]) => s.status === 'failed');
        expect(failed.map(([name, s]) => `${name}: ${s.detail}`)).toEqual([]);
      },
      TARGET_TIMEOUT_MS,
    );
  });
}

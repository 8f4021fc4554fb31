/**
 * The test rigs: what the shared suites need to know about each harness, one rig per harness folder
 * (`test/harnesses/<name>/rig.ts`), collected here the way src/harnesses/index.ts collects the adapters. A shared
 * suite that covers every harness iterates `RIGS` (or asks `rigFor`) instead of naming harnesses; what a rig holds:
 *   - `fixture`: how its recorded session (fixtures/sessions/<name>/) becomes a bundle, and is laid out in a HOME;
 *     `olderFixtures`: the same for recordings of a CLI it succeeds, whose captured sessions must still restore;
 *   - `cli` (harnesses with a locked CLI, harness-versions.lock.json): how to run a real headless session offline
 *     against the model stub, add a user's own hook, and resume;
 *   - `certifyOnFixtures` (harnesses certified on fixtures, FIXTURE_CERTIFIED): the certification run without a CLI.
 */
import { FIXTURE_CERTIFIED } from '../../packages/contract/src/schema/generated/harness-names.js';
import type { SessionFile } from '../../packages/agent/src/harnesses/types.js';
import type { HarnessName } from '../../packages/contract/src/schema/index.js';
import { claude } from '../../packages/agent/test/harnesses/claude/rig.js';
import { codex } from '../../packages/agent/test/harnesses/codex/rig.js';
import { gemini } from '../../packages/agent/test/harnesses/gemini/rig.js';
import { kimi } from '../../packages/agent/test/harnesses/kimi/rig.js';
import { opencode } from '../../packages/agent/test/harnesses/opencode/rig.js';
import { qwen } from '../../packages/agent/test/harnesses/qwen/rig.js';
import type { Target, TargetResult } from './certify.js';
import type { HarnessRunOptions, HarnessRunResult } from './run-harness.js';
import type { RecordedSession } from './recorded-sessions.js';
import { DEFAULT_LOCK_FILE, readLock } from '../../scripts/install-harnesses.mjs';

export const RIGS = {
  claude,
  codex,
  gemini,
  kimi,
  opencode,
  qwen,
} as const satisfies Record<HarnessName, HarnessRig>;

export interface HarnessRig {
  name: HarnessName;
  /** The line `<cli> --version` prints for a version the shipped profiles support (what stand-in binaries print). */
  versionLine: string;
  /** The states a first reconcile may report for a fresh HOME where it is installed. */
  reconcileStates: readonly string[];
  /** Variables that locate its files, with their defaults inside `home` (harnessEnv sets them on every run). */
  locations?(home: string): Record<string, string>;
  fixture: FixtureRig;
  /** Recordings of the CLI it succeeds (other profiles, other folders of fixtures/sessions/<name>/). */
  olderFixtures?: readonly FixtureRig[];
  /** Present exactly when harness-versions.lock.json pins its CLI. */
  cli?: CliRig;
  /** Present exactly when it is certified on fixtures (FIXTURE_CERTIFIED): the certification run without a CLI. */
  certifyOnFixtures?(target: Target): Promise<TargetResult>;
}

export interface FixtureRig {
  /** The version folder of fixtures/sessions/<name>/ the recording is in; default: the newest. */
  version?: string;
  /** The shipped profile of the recorded version. */
  profile: string;
  /** The title a capture gives the recorded session; undefined: none (an export's heading falls back to the id). */
  title: string | undefined;
  /** Placeholders of its recorded files other than `{{ROOT}}`, for a session recorded in `cwd`. */
  placeholders?(cwd: string): Record<string, string>;
  /**
   * The files a capture of the recording holds, with their roles and native paths; `content(file)` reads a file of
   * the recording with its placeholders replaced, `vars` are those placeholders.
   */
  files(
    dir: string,
    recorded: RecordedSession,
    vars: Readonly<Record<string, string>>,
    content: (file: string) => Promise<Uint8Array>,
  ): Promise<SessionFile[]>;
  /**
   * Lays the recording out in `home` as if it had been recorded there in `cwd` (under the test root `root`), where the
   * harness keeps its sessions; returns the placeholders used. Absent: its sessions are not read from the disk.
   */
  install?(dir: string, where: { root: string; home: string; cwd: string }): Promise<Record<string, string>>;
  /** Where `install` lays sessions out in `home`: the folder its files' native paths are relative to. */
  sessionsIn?(home: string): string;
  /** Writes, in `home`, the native indexes a restore merges into, as a machine that used the harness has them. */
  seedIndexes?(home: string): Promise<void>;
}

export interface RigRunOptions extends HarnessRunOptions {
  /** Run hooks the user has not trusted too, as after the user trusted them (default: no). */
  trustHooks?: boolean;
}

export interface CliRig {
  /** The model API path its conversation is posted to (test/support/model-stub.ts speaks that wire format). */
  modelPath: string;
  /** Before reconcile on a fresh HOME: the settings a session needs besides the managed hook (the stub as provider). */
  prepareHome?(env: Readonly<Record<string, string>>, stubUrl: string, bin: string): Promise<void>;
  /** Before `blue-agent resume` restores a session into a fresh HOME whose native resume then runs against the stub. */
  prepareResume?(env: Readonly<Record<string, string>>, stubUrl: string, bin: string): Promise<void>;
  /** Environment `blue-agent resume` needs when the restore runs the CLI. */
  resumeEnv?: Record<string, string>;
  /** One headless session against the stub; `args` are a resume command's arguments (`command.slice(1)`). */
  run(options: RigRunOptions): Promise<HarnessRunResult>;
  /** Adds the user's own session-end hook (or plugin) beside where the managed one goes: one JSON line per event. */
  addUserHook(env: Readonly<Record<string, string>>, outFile: string): Promise<void>;
  /** The session ids the user hook's lines speak of (the session-end events only). */
  userHookSessions(lines: readonly Record<string, any>[]): string[];
  /** The native resume command `blue-agent resume` names for a session. */
  resumeCommand(sessionId: string): string[];
}

export const HARNESS_RIGS: readonly HarnessRig[] = Object.values(RIGS);

export function rigFor(harness: string): HarnessRig {
  const rig = (RIGS as Record<string, HarnessRig>)[harness];
  if (rig === undefined) throw new Error(`no test rig for harness "${harness}" (test/harnesses/<name>/rig.ts)`);
  return rig;
}

/** The rig of a harness whose CLI is locked; throws for one certified on fixtures. */
export function cliRig(harness: string): CliRig {
  const cli = rigFor(harness).cli;
  if (cli === undefined)
    throw new Error(`harness "${harness}" has no CLI rig (no entry in harness-versions.lock.json)`);
  return cli;
}

/** Harnesses whose CLI harness-versions.lock.json pins, in its order. */
export function lockedHarnesses(): HarnessName[] {
  return Object.keys(readLock(DEFAULT_LOCK_FILE)) as HarnessName[];
}

/** Harnesses certified on fixtures (their profiles say `verified_by: fixtures`). */
export function fixtureCertified(): readonly HarnessName[] {
  return FIXTURE_CERTIFIED;
}

/** Every placeholder the recordings use besides `{{ROOT}}`, for sessions recorded in `cwd`. */
export function fixturePlaceholders(cwd: string): Record<string, string> {
  return Object.assign({}, ...allFixtures().map(({ fixture }) => fixture.placeholders?.(cwd) ?? {}));
}

/** Every recording of every rig: its fixture, then its older ones. */
export function allFixtures(): { harness: HarnessName; fixture: FixtureRig; older: boolean }[] {
  return HARNESS_RIGS.flatMap((r) => [
    { harness: r.name, fixture: r.fixture, older: false },
    ...(r.olderFixtures ?? []).map((fixture) => ({ harness: r.name, fixture, older: true })),
  ]);
}

/** The location variables of every harness for `home` (see harnessEnv). */
export function harnessLocations(home: string): Record<string, string> {
  return Object.assign({}, ...HARNESS_RIGS.map((r) => r.locations?.(home) ?? {}));
}

/** For stand-in binaries of every harness: name → the `--version` line of a supported version. */
export function versionLines(): Record<HarnessName, string> {
  return Object.fromEntries(HARNESS_RIGS.map((r) => [r.name, r.versionLine])) as Record<HarnessName, string>;
}

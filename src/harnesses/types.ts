/**
 * The one interface every harness implements. Adding a harness means one folder under src/harnesses/ exporting a
 * HarnessAdapter, one entry in src/harnesses/index.ts, and one profile file in profiles/.
 */
import type { Context } from '../context.js';
import type { HarnessName, Interval } from '../schema/index.js';

/** The managed capture hook the agent wants in a harness's native configuration. */
export interface ManagedHook {
  harness: HarnessName;
  profile: string;
  /** Lifecycle event that triggers capture (`SessionEnd`, or `session.idle` for OpenCode). */
  event: string;
  /** Shell command line: quoted Node binary, quoted agent entry, `capture --harness <h> --profile <p>`. */
  command: string;
  /** The same command as an argument vector, for hooks that spawn without a shell (the OpenCode plugin). */
  argv: readonly string[];
  timeoutSeconds: number;
}

/**
 * Harness-specific facts the ledger keeps about what the agent added to a file, so that removal can give back the
 * user's original bytes (for example: "the agent created the `hooks` object"). Must be JSON-serialisable.
 */
export type OwnershipRecord = Readonly<Record<string, unknown>>;

export interface HookPlanInput {
  /** Current text of the hook file; null when the file does not exist. */
  text: string | null;
  /** Path used in error messages. */
  file: string;
  /** The one managed hook that should be in this file, or null when none should be. */
  desired: ManagedHook | null;
  /** What the ledger recorded the last time the agent wrote this file, if anything. */
  owned: OwnershipRecord | undefined;
}

export interface HookPlan {
  /** The text the file should have; null when it should not exist. Identical to the input text when nothing changes. */
  text: string | null;
  /** The ownership record to keep for this file afterwards; undefined when the agent no longer owns anything in it. */
  owned: OwnershipRecord | undefined;
  /** Managed entries found in the input (more than one means duplicates that the plan collapses). */
  managedFound: number;
}

export interface HarnessAdapter {
  readonly name: HarnessName;
  /** The harness's configuration root, honouring its environment overrides (CLAUDE_CONFIG_DIR, CODEX_HOME, ...). */
  configRoot(ctx: Context): string;
  /**
   * Absolute path of the file the managed hook of `interval` lives in. May look at the disk (Codex keeps hooks in
   * hooks.json when the user already does).
   */
  hookFile(ctx: Context, interval: Interval): Promise<string>;
  /**
   * Every file a managed hook of this harness may live in, whatever the profile (Codex: config.toml and hooks.json).
   * Reconcile removes managed entries from all of them except the one `hookFile` names.
   */
  knownHookFiles(ctx: Context): string[];
  /**
   * Pure: from the current text and the desired managed hook, the next text. User entries and every byte outside the
   * managed entries are kept. Throws a BlueError `NATIVE_CONFIG_PARSE` with line and column when the text does not
   * parse, and `NATIVE_CONFIG_CONFLICT` when the managed entry cannot be added without changing the user's entries.
   */
  planHook(input: HookPlanInput): HookPlan;
  /**
   * After the file holds the managed hook: a state that still keeps it from running, such as Codex's hook trust.
   * Undefined when the hook will run.
   */
  pendingState?(ctx: Context, text: string, hook: ManagedHook): { state: 'awaiting_trust'; reason: string } | undefined;
}

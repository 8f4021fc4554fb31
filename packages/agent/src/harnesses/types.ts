/**
 * The one interface every harness implements. Adding a harness means one folder under src/harnesses/ exporting a
 * HarnessAdapter, one line in src/harnesses/index.ts, its transcript reader in the contract's src/harnesses/<name>/
 * (one line in that registry too), one profile file in profiles/ (then `npm run gen`), its fixtures and tests, and
 * its entry in harness-versions.lock.json (ARCHITECTURE.md, "Adding a harness").
 */
import type { SessionFile } from '@blue-agent/contract/bundle/input.js';
import type { Context } from '../context.js';
import type { TranscriptReader } from '@blue-agent/contract/harnesses/types.js';
import type { BundleFile, BundleManifest } from '@blue-agent/contract/schema/generated/bundle-manifest.js';
import type { HarnessName, Interval } from '@blue-agent/contract/schema/index.js';

/** A setting the harness needs: the key path from the top-level object, and its value. */
export interface RequiredSetting {
  readonly key: readonly string[];
  readonly value: boolean | number | string;
}

/** The managed capture hook the agent wants in a harness's native configuration. */
export interface ManagedHook {
  harness: HarnessName;
  profile: string;
  /** Lifecycle event that triggers capture (the profile's capture.event: `SessionEnd`, `session.idle`). */
  event: string;
  /** Shell command line: [`/bin/sh` and the sh hook,] quoted Node binary, quoted agent entry, `capture --harness <h>
   * --profile <p>`. */
  command: string;
  /** The same command as an argument vector, for hooks that spawn without a shell (a plugin). */
  argv: readonly string[];
  timeoutSeconds: number;
  /** Settings the harness needs before it runs hooks at all (the profile's capture.hook.requires), added with the hook.
   * */
  requires?: readonly RequiredSetting[];
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

/** The native lifecycle payload a harness hands to `blue-agent capture`, validated. */
export interface HookPayload {
  /** The native session id: 1 to 512 characters of [A-Za-z0-9._-]. */
  session_id: string;
  cwd?: string;
  /** Some harnesses name the transcript; others leave it to the adapter to find. */
  transcript_path?: string;
  hook_event_name?: string;
  reason?: string;
}

export type ArtifactRole = BundleFile['role'];

/** One file of a captured session, before it is packed: the bundle's input, defined beside the writer. */
export type { SessionFile };

/** Everything a bundle needs from the harness: its files and, when there is one, a title and preview. */
export interface CollectedSession {
  sessionId: string;
  /** The session's working directory, as the harness recorded it. */
  cwd?: string;
  /** The session root every `path` lies inside and native paths are relative to (the profile's session.root). */
  root?: string;
  files: SessionFile[];
  /** Title and preview, already normalised, bounded and with obvious secrets masked. */
  title?: string;
  summary?: string;
}

export interface CollectInput {
  interval: Interval;
  payload: HookPayload;
}

export interface RestoreInput {
  /** The verified manifest (extractBundle checked it against the profile it names). */
  manifest: BundleManifest;
  /** Absolute path of each extracted file, in manifest order (`files[i]` holds `manifest.files[i]`). */
  files: readonly string[];
  /** Where the session is resumed: absolute and resolved (realpath), so it matches the harness's own cwd. */
  destination: string;
  /** The interval of the manifest's profile. */
  interval: Interval;
  /**
   * The version of the harness that will resume the session here, when known (`blue-agent resume` reads it): a harness
   * whose layout changed between versions restores into the layout this version reads. Absent: the captured layout.
   */
  installedVersion?: string;
}

/**
 * A change a restore makes to a file's bytes because the harness refuses the captured bytes in another folder (a
 * recorded working directory, a key derived from it). Allowed only for a role whose profile declares
 * `restore_rewrite`; the bundle keeps the captured bytes, the journal records the bytes written.
 */
export interface RestoreRewrite {
  /** What changes, for people (`the first record's cwd, to /home/me/proj`). */
  what: string;
  /**
   * Pure: the captured bytes (at most one bundle file, 64 MiB) -> the bytes to write; the same bytes when nothing needs
   * to change. Throws a BlueError `RESTORE_UNSAFE` when the file cannot be rewritten as the harness needs.
   */
  apply(captured: Buffer): Buffer;
}

/** One extracted file and the native place it goes. */
export interface RestorePlacement {
  /** The extracted file in the staging folder (after a rewrite: the rewritten copy beside it). */
  from: string;
  /** Absolute target, inside the plan's root. */
  to: string;
  /** The target relative to the plan's root, `/`-separated. */
  rel: string;
  role: ArtifactRole;
  /** Size and SHA-256 of the bytes to write (after a rewrite: the rewritten bytes). */
  size: number;
  sha256: string;
  /** Set by the harness's planner when the bytes must change for this destination; applied by the restore engine. */
  rewrite?: RestoreRewrite;
  /** Set by the restore engine once it has rewritten the file: the digest the bundle holds, and what changed. */
  rewritten?: { captured_sha256: string; what: string };
}

/** A native index the session must be entered in; merged into, never replaced. */
export interface RestoreIndexMerge {
  /** Absolute path of the index file. */
  file: string;
  /** Short description for summaries (`work_dirs entry for /home/me/proj`). */
  what: string;
  /**
   * Pure: the current bytes (null when there is no file) -> the bytes to write, keeping every other byte exactly (a
   * merge never decodes and re-encodes what it does not change). Returning equal bytes means there is nothing to
   * write. Throws a BlueError when the file cannot be merged without losing the user's content.
   */
  merge(current: Buffer | null): Buffer;
}

/** A session restored through the harness itself (its own `import` command), run in the destination. */
export interface RestoreImport {
  /** Executable name, searched on the agent's PATH. */
  binary: string;
  args: readonly string[];
  cwd: string;
  /** The native id the harness reports, or undefined when it reported none. */
  parseId(stdout: string, stderr: string): string | undefined;
  /** Whether this machine already holds the session: absent, the same conversation, or a different one. */
  existing(ctx: Context): Promise<'none' | 'identical' | 'different'>;
  /** Arguments that remove an imported session again (rollback), given its id. */
  removeArgs(id: string): readonly string[];
  /**
   * How rollback confirms that the removal worked: `args` (given the id) ask the harness for the session; a non-zero
   * exit whose stderr matches `missing` means it is gone, exit 0 that it is still there, anything else is unknown.
   */
  existsCheck(id: string): { args: readonly string[]; missing: RegExp };
}

/** A copy of the session the harness would find besides the restored one (RestorePlan.duplicates). */
export interface RestoreDuplicate {
  file: string;
  why: string;
  hint: string;
}

/** What restoring one bundle means on this machine. Planning writes nothing. */
export interface RestorePlan {
  harness: HarnessName;
  /** The native session id (for imports: the id the bundle carries, until the harness reports its own). */
  sessionId: string;
  /** The harness's home (its config or data directory, after its environment overrides). */
  home: string;
  /** Every placement target lies inside this folder (the profile's session root under the home). */
  root: string;
  placements: RestorePlacement[];
  merges: RestoreIndexMerge[];
  import?: RestoreImport;
  /**
   * Files already on this machine that hold this session under another native name (a rollout of the same id in
   * another date folder): identical content makes `sameAs` nothing to write, different content is a conflict.
   */
  aliases?: { file: string; sameAs: RestorePlacement }[];
  /**
   * Other copies of this session already on this machine, looked for whenever the plan is inspected: files the
   * harness would also take for this session (a transcript of the same id in another project folder).
   * Whatever their content, each is a conflict, with its reason and what to do: a second copy would make the
   * session ambiguous. Reads only; writes nothing.
   */
  duplicates?(): Promise<RestoreDuplicate[]>;
  /** The harness's native resume command, run from the destination. */
  resumeArgv: string[];
}

/** A doctor verdict: every warning and failure carries what to run or do. */
export type DoctorVerdict =
  | { status: 'ok'; message: string }
  | { status: 'warn' | 'fail'; message: string; fix: string };

/** What a harness's own doctor check is told about it (the harness's line of `blue-agent status`). */
export interface DoctorHarnessFacts {
  state: string;
  reason: string;
  /** What reconcile would still do to the managed hook, or null when the files match. */
  pending: string | null;
}

/** A check a harness adds to `blue-agent doctor`, after the per-harness lines. */
export interface HarnessDoctorCheck {
  /** Stable id (`<harness>-<what>`), as `doctor --json` names it. */
  id: string;
  /** `facts` is undefined when the harness was not inspected. */
  judge(facts: DoctorHarnessFacts | undefined): DoctorVerdict;
}

/** What `blue-agent demo` needs to play a recorded session of this harness (shipped in `demo/sessions/<name>/`). */
export interface HarnessDemo {
  /** The executable the stand-in takes on PATH (it only answers `--version`). */
  binary: string;
  /** Where the harness keeps sessions, relative to HOME; the recording's tree of the same base name is copied there. */
  sessionsHome: string;
  /** Placeholders the recording's file names and contents use, beyond ROOT and OS_RELEASE. */
  placeholders(input: { root: string; cwd: string }): Record<string, string>;
  /** The folder (relative to sessionsHome) that holds the session, given the placeholders. */
  sessionDir(placeholders: Record<string, string>): string;
  /** The base name of the file reconcile writes the managed hook to. */
  hookFile: string;
  /** The managed hook in that file's text, exactly as reconcile wrote it, or undefined. */
  managedHook(text: string): { command: string; timeoutSeconds: number } | undefined;
}

/**
 * A session found on disk by `listSessions`: what its end hook would have handed over, and the file whose size and
 * modification time say whether it changed (the transcript, written at every turn).
 */
export interface NativeSession {
  payload: HookPayload;
  file: string;
  size: number;
  mtimeMs: number;
  /** The harness version that wrote the session, as its files say; undefined when they do not. Reads the file's head.
   * */
  version(): Promise<string | undefined>;
}

/** Every session of one harness on this machine, as far as the profile can read them. */
export interface SessionListing {
  /** Folders to watch for sessions changing, and how many folder levels below each the sessions' files lie. */
  watch: { dir: string; depth: number }[];
  sessions: NativeSession[];
  /** The listing stopped at its bound (`limit` sessions, or too many folders). */
  truncated: boolean;
}

/** A harness's own deletion of old sessions (a retention setting). */
export interface SessionCleanup {
  /** Sessions not changed for this many days are deleted by the harness. */
  days: number;
  /** The setting and the file it is read from (or its default), for messages. */
  setting: string;
  file: string;
}

export interface HarnessAdapter {
  readonly name: HarnessName;
  /** How people call it (the profile's display_name). */
  readonly displayName: string;
  /** Environment variables that move the harness's home; passed on to the service, never read from a demo HOME. */
  readonly environment: readonly string[];
  /** The native hook format (the profile's capture.hook.format) this adapter's planner writes. */
  readonly hookFormat: string;
  /**
   * Reads the harness's transcripts: the conversation for exports and the user's turn for titles. The contract's
   * reader for the harness (`@blue-agent/contract/harnesses/<name>/transcript.js`), which the Control API reads with.
   */
  readonly transcript: TranscriptReader;
  /** Checks of its own for `blue-agent doctor` (such as a hook trust the harness keeps). */
  readonly doctorChecks?: readonly HarnessDoctorCheck[];
  /** The recorded session `blue-agent demo` plays, for the harness it demonstrates. */
  readonly demo?: HarnessDemo;
  /** The harness's configuration root, honouring its environment overrides. */
  configRoot(ctx: Context): string;
  /**
   * Absolute path of the file the managed hook of `interval` lives in. May look at the disk (a harness with two hook
   * files keeps the hook where the user already keeps theirs).
   */
  hookFile(ctx: Context, interval: Interval): Promise<string>;
  /**
   * Every file a managed hook of this harness may live in, whatever the profile (a config file and a hooks file).
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
   * Finds the session's native files (and title and preview) from the hook payload, by the rules of `input.interval`.
   * Runs in the capture worker, never in the hook itself; may run the harness CLI (its export command). Throws a
   * BlueError `ARTIFACT_INVALID` naming the file and the reason for anything that must not be captured.
   */
  collectSession(ctx: Context, input: CollectInput): Promise<CollectedSession>;
  /**
   * Every session of this harness on disk that `interval` can capture (at most `limit`), for the idle sweep and
   * backfill. Reads folder listings and `stat`s only. Absent: this harness's sessions are captured by its hook alone.
   */
  listSessions?(ctx: Context, interval: Interval, limit: number): Promise<SessionListing>;
  /** The harness's own deletion of old sessions, when it has one (read from its settings). */
  sessionCleanup?(ctx: Context): Promise<SessionCleanup | undefined>;
  /**
   * After the file holds the managed hook: a state that still keeps it from running, such as a hook trust
   * (`awaiting_trust`) or the user's switch that turns every hook off (`hooks_disabled`; the reason names it).
   * Undefined when the hook will run.
   */
  pendingState?(
    ctx: Context,
    text: string,
    hook: ManagedHook,
  ): { state: 'awaiting_trust' | 'hooks_disabled'; reason: string } | undefined;
  /**
   * Mirror image of collectSession: where each file of a verified bundle goes on this machine, which native indexes
   * must name the session, and how to resume it. Reads (the staged files, the disk) but never writes. Throws a
   * BlueError `RESTORE_UNSAFE` for any file whose role or native path the profile does not allow.
   */
  planRestore(ctx: Context, input: RestoreInput): Promise<RestorePlan>;
}

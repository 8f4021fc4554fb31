/**
 * The decisions of `resume`, pure: which options make sense together, whether the destination must be asked for,
 * whether the installed harness may resume a bundle of a given profile under the policy, whether two repositories
 * are the same, and how the resume command is printed. Everything here is text in, answer out.
 */
import semver from 'semver';
import { selectInterval } from '@blue-agent/contract/profiles/index.js';
import { BlueError, usageError } from '@blue-agent/contract/errors.js';
import type { HarnessProfiles, Interval } from '@blue-agent/contract/schema/index.js';
import type { GovernancePolicy, HarnessName } from '@blue-agent/contract/schema/index.js';
import { printable } from '@blue-agent/contract/util/terminal-text.js';

/** A remote as shown (messages, prompts): it comes from a bundle's manifest or a local git config. */
const MAX_REMOTE_SHOWN = 300;
function shownRemote(remote: string): string {
  const text = printable(remote);
  return text.length > MAX_REMOTE_SHOWN ? `${text.slice(0, MAX_REMOTE_SHOWN)}…` : text;
}

export interface ResumeOptions {
  dest?: string | undefined;
  yes?: boolean | undefined;
  /** False with --no-launch. */
  launch?: boolean | undefined;
  json?: boolean | undefined;
}

export interface Mode {
  /** Questions may be asked (a terminal on stdin and stderr, and not --json). */
  interactive: boolean;
  /** Restoring was asked for without a question (--yes). */
  yes: boolean;
  /** Only report what would be done (--json without --yes). */
  planOnly: boolean;
  /** Run the harness afterwards (not with --no-launch, --json, or without a terminal). */
  launch: boolean;
  json: boolean;
}

/** Checks the options against each other and the terminal; throws a usage error for combinations that cannot work. */
export function decideMode(id: string | undefined, options: ResumeOptions, terminal: boolean): Mode {
  const json = options.json === true;
  if (json && id === undefined) {
    throw usageError(
      'resume --json needs a session id: it never shows the picker',
      'Run `blue-agent sessions list` to find the id, then `blue-agent resume ID --json`.',
    );
  }
  if (id === undefined && !terminal) {
    throw new BlueError('NOT_A_TERMINAL', 'resume without a session id shows a picker, but this is not a terminal', {
      hint: 'Give the session id (`blue-agent resume ID --dest DIR --yes`), or run it from a terminal.',
      exitCode: 2,
    });
  }
  const interactive = terminal && !json;
  return {
    interactive,
    yes: options.yes === true,
    planOnly: json && options.yes !== true,
    launch: options.launch !== false && !json && terminal,
    json,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Destination

export type DestinationDecision =
  | { kind: 'given'; dir: string }
  /** The recorded directory is the current one (or nothing was recorded): no question. */
  | { kind: 'current'; dir: string; recorded: string | null }
  | { kind: 'ask'; current: string; recorded: string };

/** `current` and `recorded` are already resolved (realpath when they exist). */
export function decideDestination(
  given: string | undefined,
  current: string,
  recorded: string | null,
): DestinationDecision {
  if (given !== undefined) return { kind: 'given', dir: given };
  if (recorded === null || recorded === current) return { kind: 'current', dir: current, recorded };
  return { kind: 'ask', current, recorded };
}

export function destinationNeeded(current: string, recorded: string, recordedExists: boolean): BlueError {
  return new BlueError(
    'DESTINATION_INVALID',
    `the session was recorded in ${recorded}, not in the current directory ${current}, and there is no terminal to ` +
      `ask where to restore it`,
    {
      hint:
        `Say where with --dest: \`--dest .\` for the current directory` +
        `${recordedExists ? `, or \`--dest ${shellQuote(recorded)}\`` : ''}.`,
      exitCode: 2,
    },
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Eligibility of the installed harness for the bundle's profile

export type Eligibility = { ok: true; verified: boolean; note: string } | { ok: false; error: BlueError };

/**
 * May the installed `version` resume a bundle captured under `interval` (the manifest's profile)? The version must
 * lie in that profile's interval or in a later one that lists it under `resumes` (it reads that older data), be
 * allowed by the policy (`allowed_harnesses`, `version_requirement`), and be certified (below its interval's
 * `verified_before`) unless the policy sets `allow_unverified_versions` — the same rules reconcile applies to capture.
 */
export function eligibility(
  harness: HarnessName,
  doc: HarnessProfiles,
  interval: Interval,
  version: string,
  policy: GovernancePolicy,
): Eligibility {
  const name = doc.display_name;
  const fail = (message: string, hint: string): Eligibility => ({
    ok: false,
    error: new BlueError('VERSION_INELIGIBLE', message, { hint }),
  });
  if (policy.allowed_harnesses !== undefined && !policy.allowed_harnesses.includes(harness)) {
    return fail(
      `policy revision ${policy.revision} does not list ${harness} in allowed_harnesses`,
      'Ask the policy administrator; nothing was changed.',
    );
  }
  const installed = selectInterval(doc, version)?.interval;
  if (
    installed === undefined ||
    (installed.profile !== interval.profile && !(installed.resumes ?? []).includes(interval.profile))
  ) {
    const readers = doc.intervals.filter(
      (i) => i.profile === interval.profile || (i.resumes ?? []).includes(interval.profile),
    );
    const ranges = readers.map((i) => `[${i.introduced}, ${i.before ?? '∞'})`).join(' or ');
    const newest = readers.reduce((a, b) => (semver.compare(a.introduced, b.introduced) >= 0 ? a : b));
    const why =
      installed === undefined
        ? `no profile covers ${name} ${version}`
        : `${installed.profile} (${name} [${installed.introduced}, ${installed.before ?? '∞'})) does not read ` +
          `sessions of ${interval.profile}`;
    return fail(
      `${name} ${version} cannot resume this session: it was captured under profile ${interval.profile}, which ` +
        `${name} ${ranges} can resume; ${why}`,
      newest.before === undefined
        ? `Install ${name} ${newest.introduced} or newer, then try again.`
        : `Install a ${name} version in ${ranges}, then try again.`,
    );
  }
  interval = installed;
  const rule = policy.harnesses?.[harness];
  if (
    rule?.version_requirement !== undefined &&
    !semver.satisfies(version, rule.version_requirement, { includePrerelease: true })
  ) {
    return fail(
      `${name} ${version} does not satisfy the policy's version_requirement "${rule.version_requirement}"`,
      `Install a ${name} version the policy allows (${rule.version_requirement}).`,
    );
  }
  const verified = semver.compare(version, interval.verified_before) < 0;
  if (!verified && rule?.allow_unverified_versions !== true) {
    return fail(
      `${name} ${version} is at or past the certified ceiling ${interval.verified_before} of ${interval.profile}, ` +
        `and the policy does not allow unverified versions`,
      `Install a ${name} version below ${interval.verified_before}, or ask the policy administrator to set ` +
        `allow_unverified_versions.`,
    );
  }
  return { ok: true, verified, note: verified ? '' : ` (unverified ${version}, allowed by policy)` };
}

// ---------------------------------------------------------------------------------------------------------------
// Repository identity

export type RepositoryCheck =
  /** The manifest names no remote: nothing to compare. */
  | { kind: 'unknown' }
  | { kind: 'same'; remote: string }
  /**
   * The destination has another remote, or none, or is not in a repository. `recorded`, `local` and `why` are for
   * display: control characters removed, bounded.
   */
  | {
      kind: 'mismatch';
      recorded: string;
      local: string | undefined;
      why: string;
      destination: 'folder' | 'repository';
    };

/**
 * `git@host:org/x.git`, `ssh://git@host/org/x`, `https://host/org/x.git/` all name `host/org/x`: the host in lower
 * case, no user, no port for the usual schemes, no `.git`, no trailing slash.
 */
export function normaliseRemote(url: string): string {
  let text = url.trim();
  const scp = /^(?:[^@/:]+@)?([^/:]+):(?!\/)(.*)$/.exec(text);
  let host: string;
  let rest: string;
  if (scp !== null && !/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(text)) {
    host = scp[1]!;
    rest = scp[2]!;
  } else {
    const match = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/(?:[^@/]*@)?([^/]*)(\/.*)?$/.exec(text);
    if (match === null) return text.replace(/\/+$/, '').replace(/\.git$/, '');
    host = match[1]!.replace(/:(22|80|443)$/, '');
    rest = match[2] ?? '';
  }
  text = `${host.toLowerCase()}/${rest.replace(/^\/+/, '')}`;
  return text
    .replace(/\/+$/, '')
    .replace(/\.git$/, '')
    .replace(/\/+$/, '');
}

export function compareRepository(
  recorded: { root: string; remote?: string | undefined } | undefined,
  local: { root: string; remote?: string | undefined } | undefined,
): RepositoryCheck {
  const remote = recorded?.remote;
  if (remote === undefined || remote === '') return { kind: 'unknown' };
  const shown = shownRemote(remote);
  if (local === undefined)
    return {
      kind: 'mismatch',
      recorded: shown,
      local: undefined,
      why: 'the destination is not in a git repository',
      destination: 'folder',
    };
  if (local.remote === undefined) {
    return {
      kind: 'mismatch',
      recorded: shown,
      local: undefined,
      why: `the destination's repository (${printable(local.root)}) has no remote`,
      destination: 'repository',
    };
  }
  if (normaliseRemote(local.remote) === normaliseRemote(remote)) return { kind: 'same', remote: shown };
  return {
    kind: 'mismatch',
    recorded: shown,
    local: shownRemote(local.remote),
    why: `the destination's repository has remote ${shownRemote(local.remote)}`,
    destination: 'repository',
  };
}

/** What the resume prompt asks on a mismatch: a folder outside any repository is not "another repository". */
export function mismatchQuestion(check: Extract<RepositoryCheck, { kind: 'mismatch' }>): string {
  return check.destination === 'folder'
    ? 'Restore it into this folder, outside any repository, anyway?'
    : 'Restore it into this other repository anyway?';
}

export function repositoryRefused(
  check: Extract<RepositoryCheck, { kind: 'mismatch' }>,
  reason: 'declined' | 'no-terminal',
): BlueError {
  return new BlueError(
    'REPOSITORY_MISMATCH',
    `the session was recorded in a repository with remote ${shownRemote(check.recorded)}, but ${printable(check.why)}`,
    {
      hint:
        reason === 'declined'
          ? 'Nothing was changed. Choose a destination inside a clone of that repository.'
          : 'Nothing was changed. A repository mismatch is only accepted when confirmed at a terminal (--yes does ' +
            'not confirm it); or choose --dest inside a clone of that repository.',
    },
  );
}

// ---------------------------------------------------------------------------------------------------------------
// The command people run afterwards

const SAFE = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** POSIX shell quoting: bare when safe, else single quotes (a `'` inside becomes `'\''`). */
export function shellQuote(arg: string): string {
  if (arg !== '' && SAFE.test(arg)) return arg;
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

export function launchLine(destination: string, argv: readonly string[]): string {
  return `cd ${shellQuote(destination)} && ${argv.map(shellQuote).join(' ')}`;
}

/** The exit status to pass on for a child that ended by `code` or `signal`. */
export function exitStatus(
  code: number | null,
  signal: NodeJS.Signals | null,
  signals: Record<string, number>,
): number {
  if (code !== null) return code;
  if (signal !== null) return 128 + (signals[signal] ?? 1);
  return 1;
}

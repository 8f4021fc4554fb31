/**
 * Session -> bundle: the one path from a hook payload to a blue-session-bundle-v1 file, shared by the drain's build
 * stage and `blue-agent bundle create`. The harness adapter finds the native files by the rules of the recorded
 * profile, git names the repository, and the bundle writer packs, bounds and hashes everything.
 */
import { writeBundle, type BundleRedaction, type BundleResult } from '@blue-agent/contract/bundle/index.js';
import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { ADAPTERS } from '../harnesses/index.js';
import type { HookPayload } from '../harnesses/types.js';
import { findInterval, type ProfileSet } from '@blue-agent/contract/profiles/index.js';
import type { HarnessName, Interval } from '@blue-agent/contract/schema/index.js';
import { readRepository, type RepositoryCache } from './repository.js';

export interface AssembleInput {
  harness: HarnessName;
  interval: Interval;
  payload: HookPayload;
  /** The capture's time (the hook's), not the build's: a rebuilt bundle says when the session ended. */
  capturedAtUnixMs: number;
  /** Shared by the builds of one drain, so git is asked once per directory. */
  repositories?: RepositoryCache;
  /** Not the end hook's capture: the bundle must be a consistent snapshot (SESSION_CHANGING otherwise). */
  captureReason?: 'idle' | 'backfill';
  resumable?: false;
  /** The policy's session_upload.redact: the redactor every file goes through. */
  redaction?: BundleRedaction;
}

/** Builds the bundle into `outFile`; with `profiles`, the files' roles are checked against the profile before any is
 * read. */
export async function assembleBundle(
  ctx: Context,
  input: AssembleInput,
  outFile: string,
  profiles?: ProfileSet,
): Promise<BundleResult> {
  const adapter = ADAPTERS[input.harness];
  const collected = await adapter.collectSession(ctx, { interval: input.interval, payload: input.payload });
  const cwd = collected.cwd ?? input.payload.cwd;
  const repository = await readRepository(ctx, cwd, input.repositories);
  return writeBundle(
    {
      harness: input.harness,
      profile: input.interval.profile,
      sessionId: collected.sessionId,
      capturedAtUnixMs: input.capturedAtUnixMs,
      ...(cwd === undefined ? {} : { cwd }),
      ...(repository === undefined ? {} : { repository }),
      ...(collected.title === undefined ? {} : { title: collected.title }),
      ...(collected.summary === undefined ? {} : { summary: collected.summary }),
      ...(collected.root === undefined ? {} : { root: collected.root }),
      ...(input.captureReason === undefined ? {} : { captureReason: input.captureReason }),
      ...(input.resumable === undefined ? {} : { resumable: input.resumable }),
      files: collected.files,
    },
    outFile,
    {
      ...(profiles === undefined ? {} : { profiles }),
      ...(input.captureReason === undefined ? {} : { stable: true }),
      ...(input.redaction === undefined ? {} : { redaction: input.redaction }),
    },
  );
}

/**
 * The interval a recorded profile names, checked against the harness: a bundle is always made by the profile the
 * capture was installed with, never by whatever profile is newest.
 */
export function captureInterval(
  profiles: ProfileSet,
  harness: string,
  profile: string,
): { harness: HarnessName; interval: Interval } {
  const found = findInterval(profiles, profile);
  if (found === undefined) {
    throw new BlueError('PROFILE_UNKNOWN', `compatibility profile ${profile} is not known to this blue-agent`, {
      hint:
        'Profiles are only added, never renamed; this capture was made by a different blue-agent install. Run ' +
        '`blue-agent profiles list`.',
    });
  }
  if (found.harness !== harness) {
    throw new BlueError('CAPTURE_REFUSED', `profile ${profile} belongs to ${found.harness}, not to ${harness}`, {
      hint: 'Run `blue-agent reconcile` to reinstall the managed hooks.',
    });
  }
  if (!found.interval.operations.includes('session_capture')) {
    throw new BlueError('CAPTURE_REFUSED', `profile ${profile} does not support session capture`, {
      hint: 'Run `blue-agent reconcile`: it installs capture hooks only for versions that support capture.',
    });
  }
  return found;
}

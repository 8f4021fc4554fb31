/**
 * Restores that change a file's bytes: some harnesses refuse a session in another folder unless a recorded working
 * directory (or a key derived from it) names the new one. The harness's planner says so on the placement
 * (`RestorePlacement.rewrite`); this applies it, only for a role whose profile declares `restore_rewrite`. The bundle
 * is never changed: the rewritten bytes go to a new file beside the extracted one in this restore's staging folder,
 * the placement then names that file with the size and digest of what will be written, and keeps the bundle's digest
 * (`rewritten.captured_sha256`) for the summary and the journal.
 */
import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { LIMITS } from '@blue-agent/contract/bundle/limits.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import type { RestorePlacement, RestorePlan } from '../harnesses/types.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';
import { readChecked } from '@blue-agent/contract/util/safe-read.js';

const REWRITTEN_SUFFIX = '.rewritten';

export async function applyRewrites(plan: RestorePlan, interval: Interval): Promise<void> {
  for (const [i, placement] of plan.placements.entries()) {
    if (placement.rewrite === undefined) continue;
    plan.placements[i] = await rewritten(placement, interval);
  }
}

async function rewritten(placement: RestorePlacement, interval: Interval): Promise<RestorePlacement> {
  const { rewrite, ...rest } = placement;
  const declared = interval.session?.roles.find((r) => r.role === placement.role)?.restore_rewrite;
  if (declared === undefined || !interval.operations.includes('restore_rewrite')) {
    throw new BlueError(
      'PROFILE_INVALID',
      `profile ${interval.profile} does not let a restore rewrite ${placement.role} files, yet the plan rewrites ` +
        `${placement.rel} (${rewrite!.what})`,
      {
        hint:
          `Declare it in the profile: operation restore_rewrite, and session.roles[].restore_rewrite on role ` +
          `${placement.role}.`,
      },
    );
  }
  const captured = (await readChecked(placement.from, { code: 'RESTORE_UNSAFE', maxBytes: LIMITS.fileBytes }))!;
  const bytes = rewrite!.apply(captured);
  if (bytes.equals(captured)) return rest;
  if (bytes.length > LIMITS.fileBytes) {
    throw new BlueError(
      'RESTORE_UNSAFE',
      `${placement.rel}: rewriting it for this folder (${rewrite!.what}) would make it larger than one bundle file ` +
        `may be`,
      {
        hint: 'Restore into the folder the session was captured in, where nothing needs rewriting.',
      },
    );
  }
  const to = `${placement.from}${REWRITTEN_SUFFIX}`;
  const handle = await open(to, 'wx', 0o600);
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
  return {
    ...rest,
    from: to,
    size: bytes.length,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    rewritten: { captured_sha256: placement.sha256, what: rewrite!.what },
  };
}

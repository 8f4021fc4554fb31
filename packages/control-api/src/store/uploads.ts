/**
 * The rules of an upload's life, once for both databases: what a presign does with the bytes it is asked for, and what
 * a complete makes of a verified artifact. Each backend reads the facts below in its transaction (the captured
 * session locked), asks these planners, and writes what they decide: the backends hold the SQL, these the decisions.
 */
import { isExpired, READABLE_FORMATS, type Artifact, type NewArtifact } from './types.js';

/** What a presign finds of an existing captured session, read with the session locked. */
export interface PresignFacts {
  /** The session's current artifact (the newest that completed), if any. */
  current: Artifact | undefined;
  /** The session's newest artifact of the bytes asked for, whatever its status. */
  sameBytes: Artifact | undefined;
  /** The highest revision among the session's artifacts (0: none). */
  lastRevision: number;
}

/**
 * What a presign does: nothing to upload (`complete`), the same artifact again with a fresh URL and the new description
 * (`reused`), or a new artifact of the next revision (`created`); a reused or created one is kept until `deadline`.
 */
export type PresignPlan =
  | { outcome: 'complete'; artifact: Artifact }
  | { outcome: 'reused'; artifactId: string; deadline: number }
  | { outcome: 'created'; revision: number; deadline: number };

/**
 * A session seen for the first time (`facts` undefined) gets its first artifact, revision 1. Bytes already the
 * session's current artifact, and not expired, need no upload. A retried presign of bytes not yet verified (pending,
 * or failed their check) whose object was not collected gets that artifact again. Anything else is a new revision.
 */
export function planPresign(
  facts: PresignFacts | undefined,
  input: Pick<NewArtifact, 'sha256' | 'size_bytes'>,
  now: number,
  retentionMs: number,
): PresignPlan {
  const deadline = now + retentionMs;
  if (facts === undefined) return firstPresign(now, retentionMs);
  const { current, sameBytes } = facts;
  if (current !== undefined && current.status === 'complete' && !isExpired(current, now) && sameContent(current, input))
    return { outcome: 'complete', artifact: current };
  if (
    sameBytes !== undefined &&
    sameContent(sameBytes, input) &&
    (sameBytes.status === 'pending' || sameBytes.status === 'failed') &&
    !sameBytes.blob_deleted
  ) {
    return { outcome: 'reused', artifactId: sameBytes.id, deadline };
  }
  return { outcome: 'created', revision: facts.lastRevision + 1, deadline };
}

/** What planPresign decides for a session seen for the first time (a backend may write it before it reads anything). */
export function firstPresign(now: number, retentionMs: number): Extract<PresignPlan, { outcome: 'created' }> {
  return { outcome: 'created', revision: 1, deadline: now + retentionMs };
}

function sameContent(
  artifact: Pick<Artifact, 'sha256' | 'size_bytes'>,
  input: Pick<NewArtifact, 'sha256' | 'size_bytes'>,
): boolean {
  return artifact.sha256 === input.sha256 && artifact.size_bytes === input.size_bytes;
}

/**
 * What a complete does to a verified artifact: its status, kept until `deadline`; whether it becomes the session's
 * current artifact (the session's complete one before it superseded, its search entry taking this one's title,
 * summary and place); and whether the indexer is to read its object (a bundle or a session record), the entry keeping
 * the previous upload's text until then.
 */
export interface CompletePlan {
  status: 'complete' | 'superseded';
  current: boolean;
  readable: boolean;
  deadline: number;
}

/**
 * `artifact` read with its session locked, and the revision of the session's current artifact (undefined: none).
 * Undefined when there is nothing to do: completing again is a retry whose answer was lost. The newest artifact that
 * completed is current, so one that completes after a newer one did is superseded at once: a retried upload never
 * rolls a session back.
 */
export function planComplete(
  artifact: Pick<Artifact, 'status' | 'revision' | 'artifact_format'>,
  currentRevision: number | undefined,
  now: number,
  retentionMs: number,
): CompletePlan | undefined {
  if (artifact.status === 'complete' || artifact.status === 'superseded') return undefined;
  const current = currentRevision === undefined || currentRevision < artifact.revision;
  return {
    status: current ? 'complete' : 'superseded',
    current,
    readable: current && READABLE_FORMATS.has(artifact.artifact_format),
    deadline: now + retentionMs,
  };
}

/**
 * An upload's life, once for both databases: the rules (what a presign does with the bytes it is asked for, what a
 * complete makes of a verified artifact) and the flows that apply them (which facts are read, in which transaction,
 * with the captured session locked, and what is written). Each backend's repository holds the SQL.
 */
import { type Flow, step, type Step, type Transactions } from './flow.js';
import { isExpired, READABLE_FORMATS, type Artifact, type NewArtifact, type PresignResult } from './types.js';

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

/** The statements of an upload's life, in one transaction of the backend's. */
export interface UploadRepository {
  /** The captured session `input` names, locked until the transaction ends; made (with its tags) when absent. */
  lockSession(input: NewArtifact, now: number): Step<{ id: string; made: boolean; currentArtifactId: string | null }>;
  /** What planPresign decides on, read after the session's lock. */
  presignFacts(sessionId: string, currentArtifactId: string | null, input: NewArtifact): Step<PresignFacts>;
  /** The session's tags replaced (undefined: they stay), and, with `now`, its updated_at. */
  touchSession(sessionId: string, tags: readonly string[] | undefined, now: number | undefined): Step<void>;
  /** The artifact pending again, with a fresh deadline and `input`'s description. */
  reuseArtifact(artifactId: string, input: NewArtifact, now: number, deadline: number): Step<Artifact>;
  insertArtifact(
    sessionId: string,
    revision: number,
    input: NewArtifact,
    now: number,
    deadline: number,
  ): Step<Artifact>;
  /** The artifact, read with its session locked. */
  lockArtifact(artifactId: string): Step<Artifact | undefined>;
  /** The revision of the session's current artifact (undefined: none), read after the lock. */
  currentRevision(sessionId: string): Step<number | undefined>;
  /** What `plan` says of `artifact` (its status; when current, the session's, its search entry's and queue's). */
  writeComplete(artifact: Artifact, plan: CompletePlan, now: number): Step<Artifact>;
}

/** Where the upload flows run: one transaction of the backend's, and its first presign when it has one. */
export interface UploadBackend extends Transactions<UploadRepository> {
  /**
   * A session seen for the first time and its first artifact (`plan`), made at once (one statement, its own
   * transaction); undefined when the session exists, and the presign flow then runs.
   */
  presignFirst?(input: NewArtifact, now: number, plan: ReturnType<typeof firstPresign>): Promise<Artifact | undefined>;
}

export async function presign(
  backend: UploadBackend,
  input: NewArtifact,
  now: number,
  retentionMs: number,
): Promise<PresignResult> {
  const first = await backend.presignFirst?.(input, now, firstPresign(now, retentionMs));
  if (first !== undefined) return { artifact: first, outcome: 'created' };
  return backend.run((repo) => presignFlow(repo, input, now, retentionMs));
}

/** A presign, with the session locked (made when absent): its facts, planPresign's decision, and what it writes. */
function* presignFlow(
  repo: UploadRepository,
  input: NewArtifact,
  now: number,
  retentionMs: number,
): Flow<PresignResult> {
  const session = yield* step(repo.lockSession(input, now));
  const facts = session.made ? undefined : yield* step(repo.presignFacts(session.id, session.currentArtifactId, input));
  const plan = planPresign(facts, input, now, retentionMs);
  if (plan.outcome === 'complete') {
    // Nothing to upload, and no change of content: updated_at stays.
    if (input.tags !== undefined) yield* step(repo.touchSession(session.id, input.tags, undefined));
    return { artifact: plan.artifact, outcome: 'complete' };
  }
  if (!session.made) yield* step(repo.touchSession(session.id, input.tags, now));
  if (plan.outcome === 'reused') {
    const artifact = yield* step(repo.reuseArtifact(plan.artifactId, input, now, plan.deadline));
    return { artifact, outcome: 'reused' };
  }
  const artifact = yield* step(repo.insertArtifact(session.id, plan.revision, input, now, plan.deadline));
  return { artifact, outcome: 'created' };
}

export async function complete(
  backend: UploadBackend,
  artifactId: string,
  now: number,
  retentionMs: number,
): Promise<Artifact | undefined> {
  return backend.run((repo) => completeFlow(repo, artifactId, now, retentionMs));
}

/** A complete, with the artifact's session locked: planComplete's decision on what it reads, and its writes. */
function* completeFlow(
  repo: UploadRepository,
  artifactId: string,
  now: number,
  retentionMs: number,
): Flow<Artifact | undefined> {
  const artifact = yield* step(repo.lockArtifact(artifactId));
  if (artifact === undefined) return undefined;
  const plan = planComplete(artifact, yield* step(repo.currentRevision(artifact.session_id)), now, retentionMs);
  if (plan === undefined) return artifact;
  return yield* step(repo.writeComplete(artifact, plan, now));
}

/**
 * The rules of presign and complete, as both databases apply them: what a presign does with the bytes it is asked
 * for, and what a complete makes of a verified artifact.
 */
import { describe, expect, it } from 'vitest';
import type { Artifact } from '../../src/store/types.js';
import { planComplete, planPresign } from '../../src/store/uploads.js';

const DAY = 86_400_000;

function artifact(fields: Partial<Artifact>): Artifact {
  return {
    id: 'art-1',
    session_id: 'ses-1',
    revision: 1,
    status: 'pending',
    size_bytes: 10,
    sha256: 'a'.repeat(64),
    content_type: 'application/octet-stream',
    compatibility_profile: 'legacy',
    artifact_format: 'legacy-raw',
    resumable: false,
    cwd: null,
    title: null,
    summary: null,
    captured_at_unix_ms: null,
    repository_root: null,
    repository_remote: null,
    blob_key: 'sessions/art-1.tar.gz',
    failure: null,
    created_at: 1,
    updated_at: 1,
    completed_at: null,
    retention_deadline: 30 * DAY,
    blob_deleted: false,
    ...fields,
  };
}

const bytesA = { sha256: 'a'.repeat(64), size_bytes: 10 };
const bytesB = { sha256: 'b'.repeat(64), size_bytes: 10 };

describe('planPresign', () => {
  it('gives a session seen for the first time its first artifact, kept for the retention period', () => {
    expect(planPresign(undefined, bytesA, 1000, DAY)).toEqual({
      outcome: 'created',
      revision: 1,
      deadline: 1000 + DAY,
    });
  });

  it('asks for no upload of bytes that are already the current artifact, while it is not expired', () => {
    const current = artifact({ status: 'complete', revision: 3 });
    const facts = { current, sameBytes: current, lastRevision: 3 };
    expect(planPresign(facts, bytesA, 1000, DAY)).toEqual({ outcome: 'complete', artifact: current });
    // Past its deadline, or its object collected, the bytes are uploaded again as a new revision.
    expect(planPresign(facts, bytesA, current.retention_deadline, DAY)).toEqual({
      outcome: 'created',
      revision: 4,
      deadline: current.retention_deadline + DAY,
    });
    const collected = artifact({ status: 'complete', revision: 3, blob_deleted: true });
    expect(planPresign({ current: collected, sameBytes: collected, lastRevision: 3 }, bytesA, 1000, DAY)).toMatchObject(
      { outcome: 'created', revision: 4 },
    );
    // The same digest of another size is other bytes.
    expect(planPresign(facts, { ...bytesA, size_bytes: 11 }, 1000, DAY)).toMatchObject({
      outcome: 'created',
      revision: 4,
    });
  });

  it('gives a retried presign of bytes not yet verified the same artifact again, unless its object went', () => {
    const current = artifact({ id: 'art-1', status: 'complete', revision: 1 });
    for (const status of ['pending', 'failed'] as const) {
      const retried = artifact({ id: 'art-2', ...bytesB, status, revision: 2 });
      expect(planPresign({ current, sameBytes: retried, lastRevision: 2 }, bytesB, 1000, DAY)).toEqual({
        outcome: 'reused',
        artifactId: 'art-2',
        deadline: 1000 + DAY,
      });
    }
    const collected = artifact({ id: 'art-2', ...bytesB, status: 'pending', revision: 2, blob_deleted: true });
    expect(planPresign({ current, sameBytes: collected, lastRevision: 2 }, bytesB, 1000, DAY)).toMatchObject({
      outcome: 'created',
      revision: 3,
    });
    // Bytes that completed once and were superseded since are uploaded again.
    const superseded = artifact({ id: 'art-0', ...bytesB, status: 'superseded', revision: 1 });
    expect(
      planPresign(
        { current: artifact({ id: 'art-9', revision: 2, status: 'complete' }), sameBytes: superseded, lastRevision: 2 },
        bytesB,
        1000,
        DAY,
      ),
    ).toMatchObject({ outcome: 'created', revision: 3 });
  });
});

describe('planComplete', () => {
  it('makes the first verified artifact current; the indexer reads it only when it is a bundle or a record', () => {
    expect(planComplete(artifact({}), undefined, 1000, DAY)).toEqual({
      status: 'complete',
      current: true,
      readable: false,
      deadline: 1000 + DAY,
    });
    for (const format of ['blue-session-bundle-v1', 'blue-session-record-v1']) {
      expect(planComplete(artifact({ artifact_format: format }), undefined, 1000, DAY)).toMatchObject({
        current: true,
        readable: true,
      });
    }
  });

  it('makes an artifact newer than the current one current, and one older superseded at once (no roll back)', () => {
    expect(planComplete(artifact({ revision: 3, artifact_format: 'blue-session-bundle-v1' }), 2, 1000, DAY)).toEqual({
      status: 'complete',
      current: true,
      readable: true,
      deadline: 1000 + DAY,
    });
    expect(planComplete(artifact({ revision: 2, artifact_format: 'blue-session-bundle-v1' }), 3, 1000, DAY)).toEqual({
      status: 'superseded',
      current: false,
      readable: false,
      deadline: 1000 + DAY,
    });
  });

  it('does nothing more to an artifact already verified (a retried complete)', () => {
    expect(planComplete(artifact({ status: 'complete' }), 1, 1000, DAY)).toBeUndefined();
    expect(planComplete(artifact({ status: 'superseded' }), 2, 1000, DAY)).toBeUndefined();
  });
});

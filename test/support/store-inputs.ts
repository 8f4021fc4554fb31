/**
 * What the Control API's store tests presign: a legacy upload (no profile, raw bytes) of a Claude Code session, with
 * only what a test names changed.
 */
import type { NewArtifact } from '../../packages/control-api/src/store/index.js';

export function newArtifact(ownerId: string, fields: Partial<NewArtifact> = {}): NewArtifact {
  return {
    owner_id: ownerId,
    harness: 'claude',
    native_session_id: 'sess-1',
    sha256: 'a'.repeat(64),
    size_bytes: 10,
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
    ...fields,
  };
}

/**
 * Rows as both databases return them, mapped to the store's types: SQLite's booleans are 0 and 1, PostgreSQL's true
 * and false; times and sizes are numbers on both (the PostgreSQL pool reads bigint as a number).
 */
import type {
  Artifact,
  ArtifactStatus,
  CapturedSession,
  ClientStatusRecord,
  NewArtifact,
  SharingMode,
  User,
} from './types.js';

export type Row = Record<string, unknown>;

const str = (value: unknown): string | null => (value === null || value === undefined ? null : String(value));
const num = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));
const bool = (value: unknown): boolean => value === true || Number(value) === 1;

export function toUser(row: Row): User {
  return {
    id: String(row.id),
    email: String(row.email),
    is_admin: bool(row.is_admin),
    created_at: Number(row.created_at),
  };
}

export function toArtifact(row: Row): Artifact {
  return {
    id: String(row.id),
    session_id: String(row.session_id),
    revision: Number(row.revision),
    status: String(row.status) as ArtifactStatus,
    size_bytes: Number(row.size_bytes),
    sha256: String(row.sha256),
    content_type: String(row.content_type),
    compatibility_profile: String(row.compatibility_profile),
    artifact_format: String(row.artifact_format),
    resumable: bool(row.resumable),
    cwd: str(row.cwd),
    title: str(row.title),
    summary: str(row.summary),
    captured_at_unix_ms: num(row.captured_at_unix_ms),
    repository_root: str(row.repository_root),
    repository_remote: str(row.repository_remote),
    blob_key: String(row.blob_key),
    failure: str(row.failure),
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
    completed_at: num(row.completed_at),
    retention_deadline: Number(row.retention_deadline),
    blob_deleted: bool(row.blob_deleted),
  };
}

export function toSession(row: Row, current: Artifact | undefined): CapturedSession {
  return {
    id: String(row.id),
    owner_id: String(row.owner_id),
    owner_email: String(row.owner_email),
    harness: String(row.harness),
    native_session_id: String(row.native_session_id),
    sharing_mode: String(row.sharing_mode) as SharingMode,
    current_artifact_id: str(row.current_artifact_id),
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
    share_recipient_count: Number(row.share_recipient_count),
    tags: tagsOf(row.tags),
    current,
  };
}

/** The tags column (a JSON array of strings; absent before the column existed). */
function tagsOf(value: unknown): string[] {
  if (typeof value !== 'string') return [];
  try {
    const tags = JSON.parse(value) as unknown;
    return Array.isArray(tags) ? tags.filter((t): t is string => typeof t === 'string') : [];
  } catch {
    return [];
  }
}

export function toClientStatus(row: Row): ClientStatusRecord {
  return {
    user_id: String(row.user_id),
    user_email: String(row.user_email),
    instance_id: String(row.instance_id),
    report: JSON.parse(String(row.report)) as unknown,
    received_at: Number(row.received_at),
  };
}

/** A case-insensitive literal substring, for LIKE ... ESCAPE '\'. */
export function likePattern(q: string): string {
  return `%${q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** The artifact's described columns, in the order presign writes them (booleans as each database binds them). */
export function describe<B>(input: NewArtifact, bool: (value: boolean) => B): (string | number | B | null)[] {
  return [
    input.content_type,
    input.compatibility_profile,
    input.artifact_format,
    bool(input.resumable),
    input.cwd,
    input.title,
    input.summary,
    input.captured_at_unix_ms,
    input.repository_root,
    input.repository_remote,
  ];
}

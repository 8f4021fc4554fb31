/** A captured session as the Control API lists it: checked against the contract, made printable, and named. */
import type { CapturedSession as Answer } from '@blue-agent/contract/schema/generated/control-captured-session.js';
import * as validators from '@blue-agent/contract/schema/generated/validators.js';
import { printable } from '@blue-agent/contract/util/terminal-text.js';
import { checkAnswer } from './client.js';

export type SharingMode = Answer['sharing_mode'];

/**
 * A captured session (Blue's CapturedSession: `id` is the captured session's id, the artifact fields are its current
 * artifact's), every optional field made explicit (null when the server did not say), its text fit for a terminal.
 * `shared` is there only in the resume picker's listing (`resumable=true`); `sha256` and `artifact_id` are this
 * project's extensions, null from Blue's server.
 */
export interface CapturedSession {
  id: string;
  user_id: string;
  user_email: string;
  harness: string;
  compatibility_profile: string;
  native_session_id: string;
  cwd: string | null;
  artifact_format: string;
  resumable: boolean;
  title: string | null;
  summary: string | null;
  source_captured_at: string | null;
  repository: { root: string | null; remote: string | null };
  sharing_mode: SharingMode;
  share_recipient_count: number;
  /** Words a stored or imported record carries (this project's extension; none from Blue's server). */
  tags: string[];
  shared?: boolean;
  updated_at: string;
  status: string | null;
  size_bytes: number | null;
  content_type: string | null;
  retention_expires_at: string | null;
  sha256: string | null;
  artifact_id: string | null;
  /** With a search: what the session says around the match, the matched words in [brackets] (blue-agent's Control API).
   * */
  snippet?: string;
}

/** One upload of a session (`artifacts` of GET /session-uploads/{id}), newest first. */
export interface SessionArtifact {
  id: string;
  status: string;
  size_bytes: number;
  sha256: string;
  created_at: string;
  completed_at: string | null;
  retention_expires_at: string | null;
}

/** GET /session-uploads/{id}: the session, the user ids it is shared with, its artifacts. */
export interface SessionDetail {
  session: CapturedSession;
  shared_with: string[];
  artifacts: SessionArtifact[];
}

/** GET /session-uploads/{id}/sharing. */
export interface Sharing {
  mode: SharingMode;
  /** The caller owns the session (only the owner changes its sharing). */
  can_edit: boolean;
  recipient_count: number;
  recipients: { id: string; email: string }[];
}

/** PUT /session-uploads/{id}/sharing's answer. */
export interface SharingUpdate {
  id: string;
  mode: SharingMode;
  user_ids: string[];
}

/** GET /auth/me: who the token belongs to. */
export interface Identity {
  id: string;
  email: string;
  role: 'admin' | 'member';
}

export interface SessionQuery {
  /** Searched by the server in titles, summaries, native ids and directories. */
  q?: string;
  harness?: string;
  /** The resume picker's listing: sessions the caller owns or that were shared with them, resumable. */
  resumable?: boolean;
  /** Our extension: sessions whose id starts with it (Blue's server ignores it: see `page`). */
  id_prefix?: string;
}

export interface DownloadProgress {
  received: number;
  /** Undefined when neither the server nor the listing says how large the bundle is. */
  total: number | undefined;
}
export function opt(value: string | null | undefined, max = 4096): string | null {
  return value === null || value === undefined ? null : printable(value).slice(0, max);
}

/** Checks one listing item against the contract (schemas/control-captured-session.schema.json); made printable. */
export function parseSession(value: unknown, where: string): CapturedSession {
  return forDisplay(checkAnswer<Answer>(validators.validateCapturedSession, value, where));
}

/** Every optional field explicit, everything shown bounded and stripped of control characters: it comes from other
 * people. */
export function forDisplay(s: Answer): CapturedSession {
  return {
    id: s.id,
    user_id: printable(s.user_id),
    user_email: printable(s.user_email).slice(0, 320),
    harness: printable(s.harness),
    compatibility_profile: printable(s.compatibility_profile).slice(0, 256),
    native_session_id: printable(s.native_session_id),
    cwd: opt(s.cwd),
    artifact_format: printable(s.artifact_format),
    resumable: s.resumable,
    title: opt(s.title, 500),
    summary: opt(s.summary, 2000),
    source_captured_at: opt(s.source_captured_at, 64),
    repository: { root: opt(s.repository?.root), remote: opt(s.repository?.remote) },
    sharing_mode: s.sharing_mode,
    share_recipient_count: s.share_recipient_count,
    tags: (s.tags ?? []).map((t) => printable(t).slice(0, 64)),
    ...(s.shared === undefined ? {} : { shared: s.shared }),
    updated_at: printable(s.updated_at),
    status: opt(s.status, 32),
    size_bytes: s.size_bytes ?? null,
    content_type: opt(s.content_type, 256),
    retention_expires_at: opt(s.retention_expires_at, 64),
    sha256: s.sha256 ?? null,
    artifact_id: s.artifact_id ?? null,
    ...(typeof s.snippet === 'string' && s.snippet !== ''
      ? { snippet: printable(s.snippet).replace(/\s+/g, ' ').slice(0, 2000) }
      : {}),
  };
}

/**
 * The name people know a session by, the same everywhere (`sessions list`, `show`, the resume picker): its title,
 * else `Session <first 8 characters of its id>`.
 */
export function sessionLabel(s: Pick<CapturedSession, 'title' | 'id'>): string {
  const title = printable(s.title ?? '')
    .replace(/\s+/g, ' ')
    .trim();
  return title === '' ? `Session ${s.id.slice(0, 8)}` : title;
}

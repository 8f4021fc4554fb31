/**
 * Persistent metadata of the reference Control API: users, policy revisions, session uploads and their revisions,
 * sharing and client status, in SQLite (`<data>/control.db`). WAL lets the admin commands write while `serve` runs.
 * Bearer tokens are never stored: only their SHA-256.
 */
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { chmodSync, closeSync, constants, existsSync, fchmodSync, lstatSync, mkdirSync, openSync, statSync } from 'node:fs';
import { BlueError } from '../errors.js';
import type { SessionUploadDetail } from '../schema/generated/control-session-upload.js';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { migrate } from './migrations.js';

export const UPLOAD_STATUSES = ['pending', 'complete', 'superseded', 'failed'] as const;
export type UploadStatus = (typeof UPLOAD_STATUSES)[number];
export type SharingMode = 'private' | 'workspace' | 'selected';

export interface User {
  id: string;
  email: string;
  is_admin: boolean;
  created_at: number;
}

export interface PolicyRevision {
  revision: number;
  body: Record<string, unknown>;
  etag: string;
  created_at: number;
}

/** The fields a stored upload shares, as spelled, with what the API answers about it (schemas/). */
type DescribedFields =
  | 'session_id'
  | 'revision'
  | 'size_bytes'
  | 'sha256'
  | 'content_type'
  | 'compatibility_profile'
  | 'cwd'
  | 'artifact_format'
  | 'resumable'
  | 'title'
  | 'summary'
  | 'captured_at_unix_ms'
  | 'repository_root'
  | 'repository_remote';

/** An upload's row: the described fields, and what only the server keeps (owner, blob key, times in ms). */
export interface Upload extends Pick<SessionUploadDetail, DescribedFields> {
  id: string;
  owner_id: string;
  owner_email: string;
  harness: string;
  status: UploadStatus;
  blob_key: string;
  failure: string | null;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
  retention_deadline: number;
  blob_deleted: boolean;
  sharing_mode: SharingMode;
}

export interface NewUpload {
  owner_id: string;
  harness: string;
  session_id: string;
  sha256: string;
  size_bytes: number;
  content_type: string;
  compatibility_profile?: string | undefined;
  cwd?: string | undefined;
  artifact_format?: string | undefined;
  resumable?: boolean | undefined;
  title?: string | undefined;
  summary?: string | undefined;
  captured_at_unix_ms?: number | undefined;
  repository_root?: string | undefined;
  repository_remote?: string | undefined;
}

export interface UploadQuery {
  q?: string | undefined;
  /** Upload ids that start with this (lower-case hex and dashes). */
  id_prefix?: string | undefined;
  harness?: string | undefined;
  user_id?: string | undefined;
  status?: UploadStatus | undefined;
  resumable?: boolean | undefined;
  updated_from?: number | undefined;
  updated_to?: number | undefined;
  /** Position after which to continue: the last row of the previous page. */
  after?: { updated_at: number; id: string } | undefined;
  limit: number;
}

export const TOKEN_PREFIX = 'blue_';

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export function newToken(): string {
  return `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
}

type Row = Record<string, unknown>;

/**
 * An upload past its retention deadline, or whose object gc has deleted, is expired — even while its object is still
 * stored: it can no longer be downloaded (410), so it is never a session's current revision, never resumable, and
 * presigning its bytes again makes a new revision.
 */
export function isExpired(upload: Pick<Upload, 'blob_deleted' | 'retention_deadline'>, now: number): boolean {
  return upload.blob_deleted || now >= upload.retention_deadline;
}

/** The same rule in SQL, for `uploads` as `u`: not expired at the one parameter, `now`. */
const NOT_EXPIRED = '(u.blob_deleted = 0 AND u.retention_deadline > ?)';

const UPLOAD_SELECT = `SELECT u.*, us.email AS owner_email, COALESCE(s.mode, 'private') AS sharing_mode
  FROM uploads u JOIN users us ON us.id = u.owner_id LEFT JOIN sharing s ON s.upload_id = u.id`;

export class ControlStore {
  readonly file: string;
  readonly db: DatabaseSync;

  private constructor(file: string, db: DatabaseSync) {
    this.file = file;
    this.db = db;
  }

  /**
   * Opens `<dataDir>/control.db`. With `create` (the default; `serve` and `users add`) a missing directory (0700) and
   * database are made; without it, a directory that does not exist or holds no control.db is refused, so a mistyped
   * --data never starts a new, empty Control API. A new database and its -wal/-shm files are 0600 whatever the umask.
   */
  static open(dataDir: string, options: { create?: boolean } = {}): ControlStore {
    const file = path.join(dataDir, 'control.db');
    if (options.create === false) {
      requireDataDir(dataDir);
    } else {
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      createPrivate(file);
    }
    const db = new DatabaseSync(file);
    try {
      db.exec('PRAGMA journal_mode = WAL');
      db.exec('PRAGMA busy_timeout = 5000');
      db.exec('PRAGMA foreign_keys = ON');
      db.exec('PRAGMA synchronous = NORMAL');
      migrate(db, file);
    } catch (error) {
      db.close();
      throw error;
    }
    // SQLite gives -wal and -shm the database file's mode; make sure anyway (they may predate this release).
    for (const extra of [`${file}-wal`, `${file}-shm`]) tightenIfLoose(extra);
    return new ControlStore(file, db);
  }

  close(): void {
    if (this.db.isOpen) this.db.close();
  }

  /** Runs `fn` in one IMMEDIATE transaction, so concurrent writers (serve + admin commands) serialise cleanly. */
  transaction<T>(fn: () => T): T {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const result = fn();
      this.db.exec('COMMIT');
      return result;
    } catch (error) {
      this.db.exec('ROLLBACK');
      throw error;
    }
  }

  // Users

  addUser(email: string, isAdmin: boolean, now: number): { user: User; token: string } {
    const token = newToken();
    const user: User = { id: randomUUID(), email, is_admin: isAdmin, created_at: now };
    this.db
      .prepare('INSERT INTO users (id, email, is_admin, token_hash, created_at) VALUES (?, ?, ?, ?, ?)')
      .run(user.id, email, isAdmin ? 1 : 0, hashToken(token), now);
    return { user, token };
  }

  userByToken(token: string): User | undefined {
    const hash = hashToken(token);
    const row = this.db.prepare('SELECT * FROM users WHERE token_hash = ?').get(hash) as Row | undefined;
    if (row === undefined) return undefined;
    // The index lookup already matched; compare again in constant time so the answer never depends on a prefix.
    if (!timingSafeEqual(Buffer.from(String(row.token_hash), 'hex'), Buffer.from(hash, 'hex'))) return undefined;
    return toUser(row);
  }

  userById(id: string): User | undefined {
    const row = this.db.prepare('SELECT * FROM users WHERE id = ?').get(id) as Row | undefined;
    return row === undefined ? undefined : toUser(row);
  }

  userByEmail(email: string): User | undefined {
    const row = this.db.prepare('SELECT * FROM users WHERE email = ?').get(email) as Row | undefined;
    return row === undefined ? undefined : toUser(row);
  }

  listUsers(): User[] {
    return (this.db.prepare('SELECT * FROM users ORDER BY created_at, email').all() as Row[]).map(toUser);
  }

  /** The stored hash of a user's token (for checks that a token was never stored in clear). */
  tokenHashOf(userId: string): string | undefined {
    const row = this.db.prepare('SELECT token_hash FROM users WHERE id = ?').get(userId) as Row | undefined;
    return row === undefined ? undefined : String(row.token_hash);
  }

  // Policy

  publishPolicy(body: Record<string, unknown>, now: number): PolicyRevision {
    return this.transaction(() => {
      const last = this.db.prepare('SELECT MAX(revision) AS r FROM policy_revisions').get() as { r: number | null };
      const revision = (last.r ?? 0) + 1;
      const full = { ...body, revision };
      const text = JSON.stringify(full);
      const etag = `"${createHash('sha256').update(text).digest('base64url').slice(0, 32)}"`;
      this.db.prepare('INSERT INTO policy_revisions (revision, body, etag, created_at) VALUES (?, ?, ?, ?)').run(revision, text, etag, now);
      return { revision, body: full, etag, created_at: now };
    });
  }

  currentPolicy(): PolicyRevision | undefined {
    const row = this.db.prepare('SELECT * FROM policy_revisions ORDER BY revision DESC LIMIT 1').get() as Row | undefined;
    if (row === undefined) return undefined;
    return {
      revision: Number(row.revision),
      body: JSON.parse(String(row.body)) as Record<string, unknown>,
      etag: String(row.etag),
      created_at: Number(row.created_at),
    };
  }

  // Client status

  recordClientStatus(userId: string, instanceId: string, report: unknown, now: number): void {
    this.db
      .prepare(
        `INSERT INTO client_status (user_id, instance_id, report, received_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (user_id, instance_id) DO UPDATE SET report = excluded.report, received_at = excluded.received_at`,
      )
      .run(userId, instanceId, JSON.stringify(report), now);
  }

  clientStatuses(): { user_id: string; instance_id: string; report: unknown; received_at: number }[] {
    return (this.db.prepare('SELECT * FROM client_status ORDER BY received_at DESC').all() as Row[]).map((r) => ({
      user_id: String(r.user_id),
      instance_id: String(r.instance_id),
      report: JSON.parse(String(r.report)) as unknown,
      received_at: Number(r.received_at),
    }));
  }

  // Uploads

  /**
   * A pending revision for this bundle: the existing one when the same owner re-presigns the same bytes of the same
   * session (a retried presign must not pile up revisions), else a new revision numbered after the session's last.
   * Neither an expired pending upload nor an expired current revision is reused: the bytes are uploaded again.
   */
  presign(input: NewUpload, now: number, retentionMs: number): { upload: Upload; created: boolean } {
    return this.transaction(() => {
      const same = this.db
        .prepare(
          `SELECT id FROM uploads u WHERE owner_id = ? AND harness = ? AND session_id = ? AND sha256 = ? AND status = 'pending'
             AND ${NOT_EXPIRED}
           ORDER BY revision DESC LIMIT 1`,
        )
        .get(input.owner_id, input.harness, input.session_id, input.sha256, now) as Row | undefined;
      if (same !== undefined) return { upload: this.upload(String(same.id))!, created: false };
      // The same bytes are already the session's current revision: nothing to upload.
      const current = this.currentRevision(input.owner_id, input.harness, input.session_id, now);
      if (current !== undefined && current.sha256 === input.sha256 && current.size_bytes === input.size_bytes) {
        return { upload: current, created: false };
      }
      const last = this.db
        .prepare('SELECT MAX(revision) AS r FROM uploads WHERE owner_id = ? AND harness = ? AND session_id = ?')
        .get(input.owner_id, input.harness, input.session_id) as { r: number | null };
      const id = randomUUID();
      this.db
        .prepare(
          `INSERT INTO uploads (id, owner_id, harness, session_id, revision, status, size_bytes, sha256, content_type,
             compatibility_profile, cwd, artifact_format, resumable, title, summary, captured_at_unix_ms, repository_root,
             repository_remote, blob_key, created_at, updated_at, retention_deadline)
           VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
          id,
          input.owner_id,
          input.harness,
          input.session_id,
          (last.r ?? 0) + 1,
          input.size_bytes,
          input.sha256,
          input.content_type,
          input.compatibility_profile ?? null,
          input.cwd ?? null,
          input.artifact_format ?? null,
          input.resumable === true ? 1 : 0,
          input.title ?? null,
          input.summary ?? null,
          input.captured_at_unix_ms ?? null,
          input.repository_root ?? null,
          input.repository_remote ?? null,
          `sessions/${id}.tar.gz`,
          now,
          now,
          now + retentionMs,
        );
      return { upload: this.upload(id)!, created: true };
    });
  }

  upload(id: string): Upload | undefined {
    const row = this.db.prepare(`${UPLOAD_SELECT} WHERE u.id = ?`).get(id) as Row | undefined;
    return row === undefined ? undefined : toUpload(row);
  }

  markFailed(id: string, reason: string, now: number): Upload {
    this.db.prepare(`UPDATE uploads SET status = 'failed', failure = ?, updated_at = ? WHERE id = ?`).run(reason, now, id);
    return this.upload(id)!;
  }

  /**
   * Marks the upload verified. The newest verified revision of a session is its current one: older complete
   * revisions become superseded, and a revision completed after a newer one is superseded at once. Sharing belongs to
   * the session (see setSharing): a revision presigned before the latest sharing change already carries it; one
   * presigned after it takes the session's sharing here, so recipients do not lose the session by a re-upload.
   */
  complete(id: string, now: number, retentionMs: number): Upload {
    return this.transaction(() => {
      const upload = this.upload(id)!;
      const session = [upload.owner_id, upload.harness, upload.session_id] as const;
      const newer = this.db
        .prepare(`SELECT 1 FROM uploads WHERE owner_id = ? AND harness = ? AND session_id = ? AND status IN ('complete', 'superseded') AND revision > ?`)
        .get(...session, upload.revision);
      this.db
        .prepare(`UPDATE uploads SET status = ?, failure = NULL, completed_at = ?, updated_at = ?, retention_deadline = ? WHERE id = ?`)
        .run(newer === undefined ? 'complete' : 'superseded', now, now, now + retentionMs, id);
      if (this.db.prepare('SELECT 1 FROM sharing WHERE upload_id = ?').get(id) === undefined) {
        // The session's sharing: that of its current revision, else of its newest revision that has one.
        const source = this.db
          .prepare(
            `SELECT u.id FROM uploads u JOIN sharing s ON s.upload_id = u.id
             WHERE u.owner_id = ? AND u.harness = ? AND u.session_id = ? AND u.id <> ?
             ORDER BY (u.status = 'complete') DESC, u.revision DESC LIMIT 1`,
          )
          .get(...session, id) as Row | undefined;
        if (source !== undefined) this.copySharing(String(source.id), id);
      }
      if (newer !== undefined) return this.upload(id)!;
      this.db
        .prepare(
          `UPDATE uploads SET status = 'superseded', updated_at = ?
           WHERE owner_id = ? AND harness = ? AND session_id = ? AND status = 'complete' AND revision < ?`,
        )
        .run(now, ...session, upload.revision);
      return this.upload(id)!;
    });
  }

  private copySharing(from: string, to: string): void {
    this.db.prepare('INSERT INTO sharing (upload_id, mode) SELECT ?, mode FROM sharing WHERE upload_id = ? ON CONFLICT (upload_id) DO UPDATE SET mode = excluded.mode').run(to, from);
    this.db.prepare('DELETE FROM sharing_recipients WHERE upload_id = ?').run(to);
    this.db.prepare('INSERT INTO sharing_recipients (upload_id, user_id) SELECT ?, user_id FROM sharing_recipients WHERE upload_id = ?').run(to, from);
  }

  /** The session's current verified revision at `now`, when it has one (an expired one is not). */
  currentRevision(ownerId: string, harness: string, sessionId: string, now: number): Upload | undefined {
    const row = this.db
      .prepare(
        `SELECT id FROM uploads u WHERE owner_id = ? AND harness = ? AND session_id = ? AND status = 'complete' AND ${NOT_EXPIRED}
         ORDER BY revision DESC LIMIT 1`,
      )
      .get(ownerId, harness, sessionId, now) as Row | undefined;
    return row === undefined ? undefined : this.upload(String(row.id));
  }

  /** Whether `viewer` may see the upload: owner, administrator, or a recipient of its sharing. */
  canView(upload: Upload, viewer: User): boolean {
    if (upload.owner_id === viewer.id || viewer.is_admin) return true;
    // Recipients see verified revisions only, as in listings.
    return (upload.status === 'complete' || upload.status === 'superseded') && this.isSharedWith(upload, viewer);
  }

  isSharedWith(upload: Upload, viewer: User): boolean {
    if (upload.sharing_mode === 'workspace') return true;
    if (upload.sharing_mode !== 'selected') return false;
    return this.db.prepare('SELECT 1 FROM sharing_recipients WHERE upload_id = ? AND user_id = ?').get(upload.id, viewer.id) !== undefined;
  }

  recipients(uploadId: string): User[] {
    return (
      this.db
        .prepare('SELECT us.* FROM sharing_recipients r JOIN users us ON us.id = r.user_id WHERE r.upload_id = ? ORDER BY us.email')
        .all(uploadId) as Row[]
    ).map(toUser);
  }

  /**
   * Sets the sharing of the session `uploadId` is a revision of: every revision of it (pending ones included, so a
   * revision uploading right now becomes current with it; superseded ones, so sharing the id someone still has works).
   * Sharing is not a change of content: `updated_at`, and so the order of listings, stays as it was.
   */
  setSharing(uploadId: string, mode: SharingMode, userIds: readonly string[], _now?: number): void {
    this.transaction(() => {
      const revisions = this.db
        .prepare(
          `SELECT o.id FROM uploads u JOIN uploads o ON o.owner_id = u.owner_id AND o.harness = u.harness AND o.session_id = u.session_id
           WHERE u.id = ?`,
        )
        .all(uploadId) as Row[];
      const upsert = this.db.prepare('INSERT INTO sharing (upload_id, mode) VALUES (?, ?) ON CONFLICT (upload_id) DO UPDATE SET mode = excluded.mode');
      const clear = this.db.prepare('DELETE FROM sharing_recipients WHERE upload_id = ?');
      const insert = this.db.prepare('INSERT OR IGNORE INTO sharing_recipients (upload_id, user_id) VALUES (?, ?)');
      for (const { id } of revisions) {
        upsert.run(String(id), mode);
        clear.run(String(id));
        if (mode === 'selected') for (const userId of userIds) insert.run(String(id), userId);
      }
    });
  }

  /**
   * One page of uploads `viewer` may see, newest first. Administrators see everything, members their own and what is
   * shared with them; `resumable=true` asks "what can I resume", which for everyone (administrators included) is only
   * owned or explicitly shared sessions. `status=complete` asks for current revisions and `resumable=true` for what
   * can be restored: neither includes an expired upload.
   */
  listUploads(viewer: User, query: UploadQuery, now: number): Upload[] {
    const where: string[] = [];
    const args: (string | number)[] = [];
    const shared = `(COALESCE(s.mode, 'private') = 'workspace' OR (s.mode = 'selected' AND EXISTS
      (SELECT 1 FROM sharing_recipients r WHERE r.upload_id = u.id AND r.user_id = ?)))`;
    const ownOrShared = `(u.owner_id = ? OR (${shared} AND u.status IN ('complete', 'superseded')))`;
    if (query.resumable === true || !viewer.is_admin) {
      where.push(ownOrShared);
      args.push(viewer.id, viewer.id);
    }
    if (query.resumable !== undefined) {
      where.push('u.resumable = ?');
      args.push(query.resumable ? 1 : 0);
    }
    if (query.q !== undefined && query.q !== '') {
      const like = `%${query.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      where.push(`(u.title LIKE ? ESCAPE '\\' OR u.summary LIKE ? ESCAPE '\\' OR u.session_id LIKE ? ESCAPE '\\' OR u.cwd LIKE ? ESCAPE '\\')`);
      args.push(like, like, like, like);
    }
    if (query.id_prefix !== undefined) {
      where.push('substr(u.id, 1, ?) = ?');
      args.push(query.id_prefix.length, query.id_prefix);
    }
    if (query.harness !== undefined) {
      where.push('u.harness = ?');
      args.push(query.harness);
    }
    if (query.user_id !== undefined) {
      where.push('u.owner_id = ?');
      args.push(query.user_id);
    }
    if (query.status !== undefined) {
      where.push('u.status = ?');
      args.push(query.status);
    }
    if (query.status === 'complete' || query.resumable === true) {
      where.push(NOT_EXPIRED);
      args.push(now);
    }
    if (query.updated_from !== undefined) {
      where.push('u.updated_at >= ?');
      args.push(query.updated_from);
    }
    if (query.updated_to !== undefined) {
      where.push('u.updated_at <= ?');
      args.push(query.updated_to);
    }
    if (query.after !== undefined) {
      where.push('(u.updated_at < ? OR (u.updated_at = ? AND u.id < ?))');
      args.push(query.after.updated_at, query.after.updated_at, query.after.id);
    }
    const sql = `${UPLOAD_SELECT} ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY u.updated_at DESC, u.id DESC LIMIT ?`;
    args.push(query.limit);
    return (this.db.prepare(sql).all(...args) as Row[]).map(toUpload);
  }

  /** Uploads past their retention deadline whose object is still stored. */
  expiredUploads(now: number, limit = 1000): Upload[] {
    return (
      this.db.prepare(`${UPLOAD_SELECT} WHERE u.retention_deadline < ? AND u.blob_deleted = 0 ORDER BY u.retention_deadline LIMIT ?`).all(now, limit) as Row[]
    ).map(toUpload);
  }

  markBlobDeleted(id: string): void {
    this.db.prepare('UPDATE uploads SET blob_deleted = 1 WHERE id = ?').run(id);
  }
}

/** Creates `file` empty with mode 0600 (umask-independent) unless it exists. */
function createPrivate(file: string): void {
  let fd: number;
  try {
    fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw error;
  }
  try {
    fchmodSync(fd, 0o600);
  } finally {
    closeSync(fd);
  }
}

function tightenIfLoose(file: string): void {
  try {
    const info = lstatSync(file);
    if (info.isFile() && (info.mode & 0o077) !== 0) chmodSync(file, info.mode & 0o600);
  } catch {
    // Absent (not created yet) or not ours to change: nothing to do.
  }
}

/** An existing Control API data directory: the folder and its control.db must be there. */
export function requireDataDir(dataDir: string): void {
  const hint = 'Check --data (or BLUE_CONTROL_DATA). `blue-agent control-plane users add EMAIL --admin` or `serve` creates a new data directory.';
  let info;
  try {
    info = statSync(dataDir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new BlueError('USAGE', `the Control API data directory ${dataDir} does not exist${code === 'ENOENT' ? '' : ` (${code ?? 'unreadable'})`}`, { hint, file: dataDir });
  }
  if (!info.isDirectory()) throw new BlueError('USAGE', `the Control API data directory ${dataDir} is not a directory`, { hint, file: dataDir });
  const file = path.join(dataDir, 'control.db');
  if (!existsSync(file)) {
    throw new BlueError('USAGE', `${dataDir} is not a Control API data directory: it holds no control.db`, { hint, file });
  }
}

function toUser(row: Row): User {
  return { id: String(row.id), email: String(row.email), is_admin: Number(row.is_admin) === 1, created_at: Number(row.created_at) };
}

function str(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

function num(value: unknown): number | null {
  return value === null || value === undefined ? null : Number(value);
}

function toUpload(row: Row): Upload {
  return {
    id: String(row.id),
    owner_id: String(row.owner_id),
    owner_email: String(row.owner_email),
    harness: String(row.harness),
    session_id: String(row.session_id),
    revision: Number(row.revision),
    status: String(row.status) as UploadStatus,
    size_bytes: Number(row.size_bytes),
    sha256: String(row.sha256),
    content_type: String(row.content_type),
    compatibility_profile: str(row.compatibility_profile),
    cwd: str(row.cwd),
    artifact_format: str(row.artifact_format),
    resumable: Number(row.resumable) === 1,
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
    blob_deleted: Number(row.blob_deleted) === 1,
    sharing_mode: String(row.sharing_mode) as SharingMode,
  };
}

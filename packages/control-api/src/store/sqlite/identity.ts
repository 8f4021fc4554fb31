/**
 * Sign-ins on the embedded database (SQLite): the IdentityStore of sqlite.ts. Every change that must be whole (a
 * device code turned into tokens, a refresh token spent for new ones) is one IMMEDIATE transaction.
 */
import { randomUUID } from 'node:crypto';
import type { Transactions } from '../flow.js';
import { judgeToken, pollDeviceCode, refresh, type SignInRepository } from '../sign-ins.js';
import { GRANT_HISTORY_MS, hashToken, newSecret, newToken, toDeviceCode, toGrant } from '../tokens.js';
import { signInLinkMade, tokenCreated, tokenRevoked } from '../audit.js';
import type {
  AttemptLimit,
  AuditActor,
  BrowserSession,
  DeviceCode,
  DevicePoll,
  Grant,
  IdentityStore,
  IssuedTokens,
  NewDeviceCode,
  OidcLogin,
  TokenCaller,
  TokenLifetimes,
  User,
} from '../types.js';
import { toUser } from '../rows.js';
import { insertAudit } from './audit.js';
import { type SqliteDb, transactions } from './db.js';

const GRANT_SELECT = 'SELECT g.*, u.email AS user_email FROM grants g JOIN users u ON u.id = g.user_id';
const USER_COLUMNS = 'u.id, u.email, u.is_admin, u.created_at';

export class SqliteIdentity implements IdentityStore {
  private readonly signIns: Transactions<SignInRepository>;

  constructor(private readonly db: SqliteDb) {
    this.signIns = transactions(db, new SqliteSignIns(db));
  }

  async authenticate(token: string, now: number): Promise<TokenCaller | 'expired' | undefined> {
    const hash = hashToken(token);
    const row = this.db.get(
      `SELECT t.hash, t.kind AS token_kind, t.expires_at AS token_expires_at, g.id AS grant_id, g.scopes,
         g.last_used_at,
         g.revoked_at, ${USER_COLUMNS}
       FROM tokens t JOIN grants g ON g.id = t.grant_id JOIN users u ON u.id = g.user_id WHERE t.hash = ?`,
      hash,
    );
    const judged = judgeToken(row, hash, now);
    if (judged === undefined || judged === 'expired') return judged;
    if (judged.touch) this.db.run('UPDATE grants SET last_used_at = ? WHERE id = ?', now, judged.grantId);
    return { user: toUser(row!), grant_id: judged.grantId, scopes: judged.scopes };
  }

  async addPersonalToken(
    userId: string,
    scopes: readonly string[],
    label: string,
    now: number,
    by?: AuditActor,
  ): Promise<{ token: string; grant: Grant }> {
    return this.db.transaction(() => this.insertPersonalToken(userId, scopes, label, now, by));
  }

  /** A personal sign-in and its token (with `by`, in the audit log); inside the caller's transaction. */
  insertPersonalToken(
    userId: string,
    scopes: readonly string[],
    label: string,
    now: number,
    by?: AuditActor,
  ): { token: string; grant: Grant } {
    const token = newToken();
    const id = randomUUID();
    this.db.run(
      `INSERT INTO grants (id, user_id, kind, scopes, label, created_at) VALUES (?, ?, 'personal', ?, ?, ?)`,
      id,
      userId,
      scopes.join(' '),
      label,
      now,
    );
    this.db.run(`INSERT INTO tokens (hash, grant_id, kind) VALUES (?, ?, 'access')`, hashToken(token), id);
    const grant = toGrant(this.db.get(`${GRANT_SELECT} WHERE g.id = ?`, id)!);
    if (by !== undefined) insertAudit(this.db, tokenCreated(by, grant), now);
    return { token, grant };
  }

  async grants(userId: string | undefined): Promise<Grant[]> {
    const rows =
      userId === undefined
        ? this.db.all(`${GRANT_SELECT} ORDER BY g.created_at DESC, g.id`)
        : this.db.all(`${GRANT_SELECT} WHERE g.user_id = ? ORDER BY g.created_at DESC, g.id`, userId);
    return rows.map(toGrant);
  }

  async grant(id: string): Promise<Grant | undefined> {
    const row = this.db.get(`${GRANT_SELECT} WHERE g.id = ?`, id);
    return row === undefined ? undefined : toGrant(row);
  }

  async revokeGrant(id: string, now: number, by?: AuditActor): Promise<Grant | undefined> {
    return this.db.transaction(() => {
      const revoked = this.db.run('UPDATE grants SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', now, id);
      const row = this.db.get(`${GRANT_SELECT} WHERE g.id = ?`, id);
      const grant = row === undefined ? undefined : toGrant(row);
      if (grant !== undefined && revoked > 0 && by !== undefined) insertAudit(this.db, tokenRevoked(by, grant), now);
      return grant;
    });
  }

  async revokeToken(token: string, now: number): Promise<boolean> {
    const row = this.db.get('SELECT grant_id FROM tokens WHERE hash = ?', hashToken(token));
    if (row === undefined) return false;
    this.db.run('UPDATE grants SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', now, String(row.grant_id));
    return true;
  }

  async createDeviceCode(code: NewDeviceCode): Promise<boolean> {
    const added = this.db.run(
      `INSERT INTO device_codes (device_hash, user_code, client_id, scopes, client_label, created_at, expires_at,
         interval_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (user_code) DO NOTHING`,
      code.device_hash,
      code.user_code,
      code.client_id,
      code.scopes.join(' '),
      code.client_label,
      code.created_at,
      code.expires_at,
      code.interval_ms,
    );
    return added === 1;
  }

  async pendingDeviceCode(userCode: string, now: number): Promise<DeviceCode | undefined> {
    const row = this.db.get(
      `SELECT * FROM device_codes WHERE user_code = ? AND status = 'pending' AND expires_at > ?`,
      userCode,
      now,
    );
    return row === undefined ? undefined : toDeviceCode(row);
  }

  async decideDeviceCode(userCode: string, userId: string | undefined, now: number): Promise<boolean> {
    const changed = this.db.run(
      `UPDATE device_codes SET status = ?, user_id = ? WHERE user_code = ? AND status = 'pending' AND expires_at > ?`,
      userId === undefined ? 'denied' : 'approved',
      userId ?? null,
      userCode,
      now,
    );
    return changed === 1;
  }

  async pollDeviceCode(
    deviceHash: string,
    clientId: string,
    now: number,
    lifetimes: TokenLifetimes,
    slowDownMs: number,
  ): Promise<DevicePoll> {
    return this.signIns.run((repo) => pollDeviceCode(repo, deviceHash, clientId, now, lifetimes, slowDownMs));
  }

  async refresh(
    refreshToken: string,
    clientId: string,
    now: number,
    lifetimes: TokenLifetimes,
  ): Promise<IssuedTokens | undefined> {
    return this.signIns.run((repo) => refresh(repo, refreshToken, clientId, now, lifetimes));
  }

  async takeAttempt(key: string, limit: AttemptLimit, now: number): Promise<number | undefined> {
    const row = this.db.get(
      `INSERT INTO rate_windows (key, used, ends_at) VALUES (?, 1, ?)
       ON CONFLICT (key) DO UPDATE SET
         used = CASE WHEN ends_at <= ? THEN 1 ELSE used + 1 END,
         ends_at = CASE WHEN ends_at <= ? THEN excluded.ends_at ELSE ends_at END
       WHERE ends_at <= ? OR used < ?
       RETURNING ends_at`,
      key,
      now + limit.windowMs,
      now,
      now,
      now,
      limit.allowed,
    );
    return row === undefined ? undefined : Number(row.ends_at);
  }

  async returnAttempt(key: string, windowEnd: number): Promise<void> {
    this.db.run('UPDATE rate_windows SET used = used - 1 WHERE key = ? AND ends_at = ? AND used > 0', key, windowEnd);
  }

  async createBrowserSession(userId: string, now: number, ttlMs: number): Promise<{ token: string; csrf: string }> {
    const token = newSecret();
    const csrf = newSecret();
    this.db.run(
      'INSERT INTO browser_sessions (hash, user_id, csrf, created_at, expires_at) VALUES (?, ?, ?, ?, ?)',
      hashToken(token),
      userId,
      csrf,
      now,
      now + ttlMs,
    );
    return { token, csrf };
  }

  async browserSession(token: string, now: number): Promise<BrowserSession | undefined> {
    const row = this.db.get(
      `SELECT b.csrf, b.expires_at AS session_expires_at, ${USER_COLUMNS} FROM browser_sessions b JOIN users u ON ` +
        `u.id = b.user_id WHERE b.hash = ? AND b.expires_at > ?`,
      hashToken(token),
      now,
    );
    return row === undefined
      ? undefined
      : { user: toUser(row), csrf: String(row.csrf), expires_at: Number(row.session_expires_at) };
  }

  async endBrowserSession(token: string): Promise<void> {
    this.db.run('DELETE FROM browser_sessions WHERE hash = ?', hashToken(token));
  }

  async createSignInLink(userId: string, now: number, ttlMs: number, by?: AuditActor): Promise<string> {
    const token = newSecret();
    return this.db.transaction(() => {
      this.db.run(
        'INSERT INTO sign_in_links (hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)',
        hashToken(token),
        userId,
        now,
        now + ttlMs,
      );
      const row = by === undefined ? undefined : this.db.get('SELECT * FROM users WHERE id = ?', userId);
      if (by !== undefined && row !== undefined)
        insertAudit(this.db, signInLinkMade(by, toUser(row), now + ttlMs), now);
      return token;
    });
  }

  async useSignInLink(token: string, now: number): Promise<User | undefined> {
    return this.db.transaction(() => {
      const hash = hashToken(token);
      const row = this.db.get(
        `SELECT l.expires_at AS link_expires_at, ${USER_COLUMNS} FROM sign_in_links l JOIN users u ON u.id = ` +
          `l.user_id WHERE l.hash = ?`,
        hash,
      );
      if (row === undefined) return undefined;
      this.db.run('DELETE FROM sign_in_links WHERE hash = ?', hash);
      return Number(row.link_expires_at) > now ? toUser(row) : undefined;
    });
  }

  async oidcUser(issuer: string, subject: string): Promise<User | undefined> {
    const row = this.db.get(
      `SELECT ${USER_COLUMNS} FROM oidc_subjects o JOIN users u ON u.id = o.user_id WHERE o.issuer = ? AND ` +
        `o.subject = ?`,
      issuer,
      subject,
    );
    return row === undefined ? undefined : toUser(row);
  }

  async bindOidcSubject(issuer: string, subject: string, userId: string): Promise<boolean> {
    this.db.run(
      'INSERT INTO oidc_subjects (issuer, subject, user_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING',
      issuer,
      subject,
      userId,
    );
    return (
      this.db.get(
        'SELECT 1 FROM oidc_subjects WHERE issuer = ? AND subject = ? AND user_id = ?',
        issuer,
        subject,
        userId,
      ) !== undefined
    );
  }

  async createOidcLogin(state: string, login: OidcLogin, now: number, ttlMs: number): Promise<void> {
    this.db.run(
      'INSERT INTO oidc_logins (state_hash, code_verifier, nonce, next, expires_at) VALUES (?, ?, ?, ?, ?)',
      hashToken(state),
      login.code_verifier,
      login.nonce,
      login.next,
      now + ttlMs,
    );
  }

  async takeOidcLogin(state: string, now: number): Promise<OidcLogin | undefined> {
    const row = this.db.get('DELETE FROM oidc_logins WHERE state_hash = ? RETURNING *', hashToken(state));
    if (row === undefined || Number(row.expires_at) <= now) return undefined;
    return { code_verifier: String(row.code_verifier), nonce: String(row.nonce), next: String(row.next) };
  }

  async purgeExpired(now: number): Promise<number> {
    return this.db.transaction(() => {
      let rows = 0;
      rows += this.db.run('DELETE FROM device_codes WHERE expires_at <= ?', now);
      rows += this.db.run('DELETE FROM browser_sessions WHERE expires_at <= ?', now);
      rows += this.db.run('DELETE FROM sign_in_links WHERE expires_at <= ?', now);
      rows += this.db.run('DELETE FROM oidc_logins WHERE expires_at <= ?', now);
      rows += this.db.run('DELETE FROM rate_windows WHERE ends_at <= ?', now);
      rows += this.db.run('DELETE FROM tokens WHERE expires_at IS NOT NULL AND expires_at <= ?', now);
      const before = now - GRANT_HISTORY_MS;
      rows += this.db.run('DELETE FROM grants WHERE revoked_at <= ? OR expires_at <= ?', before, before);
      return rows;
    });
  }
}

/** In one IMMEDIATE transaction: the write lock, taken first, is the row's lock. */
class SqliteSignIns implements SignInRepository {
  constructor(private readonly db: SqliteDb) {}

  lockDeviceCode(
    deviceHash: string,
  ): { code: DeviceCode & { last_poll_at: number | null }; admin: boolean } | undefined {
    const row = this.db.get(
      'SELECT d.*, u.is_admin FROM device_codes d LEFT JOIN users u ON u.id = d.user_id WHERE d.device_hash = ?',
      deviceHash,
    );
    if (row === undefined) return undefined;
    const code = { ...toDeviceCode(row), last_poll_at: row.last_poll_at === null ? null : Number(row.last_poll_at) };
    return { code, admin: Number(row.is_admin) === 1 };
  }

  recordPoll(deviceHash: string, now: number, slowDownMs: number): void {
    this.db.run(
      'UPDATE device_codes SET interval_ms = interval_ms + ?, last_poll_at = ? WHERE device_hash = ?',
      slowDownMs,
      now,
      deviceHash,
    );
  }

  deleteDeviceCode(deviceHash: string): void {
    this.db.run('DELETE FROM device_codes WHERE device_hash = ?', deviceHash);
  }

  insertDeviceGrant(
    grantId: string,
    userId: string,
    clientId: string,
    scopes: readonly string[],
    label: string,
    now: number,
  ): void {
    this.db.run(
      `INSERT INTO grants (id, user_id, kind, client_id, scopes, label, created_at)
       VALUES (?, ?, 'device', ?, ?, ?, ?)`,
      grantId,
      userId,
      clientId,
      scopes.join(' '),
      label,
      now,
    );
  }

  lockToken(hash: string): Record<string, unknown> | undefined {
    return this.db.get(
      `SELECT t.kind AS token_kind, t.expires_at AS token_expires_at, t.used_at, g.id AS grant_id, g.client_id,
         g.scopes, g.revoked_at
       FROM tokens t JOIN grants g ON g.id = t.grant_id WHERE t.hash = ?`,
      hash,
    );
  }

  revokeGrant(grantId: string, now: number): void {
    this.db.run('UPDATE grants SET revoked_at = ? WHERE id = ?', now, grantId);
  }

  spendRefreshToken(hash: string, grantId: string, now: number): void {
    this.db.run('UPDATE tokens SET used_at = ? WHERE hash = ?', now, hash);
    this.db.run(`DELETE FROM tokens WHERE grant_id = ? AND kind = 'access' AND expires_at <= ?`, grantId, now);
  }

  insertToken(hash: string, grantId: string, kind: 'access' | 'refresh', expiresAt: number): void {
    this.db.run(
      'INSERT INTO tokens (hash, grant_id, kind, expires_at) VALUES (?, ?, ?, ?)',
      hash,
      grantId,
      kind,
      expiresAt,
    );
  }

  extendGrant(grantId: string, expiresAt: number, now: number): void {
    this.db.run('UPDATE grants SET expires_at = ?, last_used_at = ? WHERE id = ?', expiresAt, now, grantId);
  }
}

/**
 * Sign-ins on PostgreSQL: the IdentityStore of postgres.ts, statement for statement the embedded one's
 * (sqlite/identity.ts). What must be whole across replicas (a device code turned into tokens once, a refresh token
 * spent once) locks its row (FOR UPDATE) in one transaction.
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
import { type Db, type Pg, storable, transactions } from './db.js';

const GRANT_SELECT = 'SELECT g.*, u.email AS user_email FROM grants g JOIN users u ON u.id = g.user_id';
const USER_COLUMNS = 'u.id, u.email, u.is_admin, u.created_at';

export class PostgresIdentity implements IdentityStore {
  private readonly signIns: Transactions<SignInRepository>;

  constructor(private readonly pg: Pg) {
    this.signIns = transactions(pg, (db) => new PgSignIns(db));
  }

  async authenticate(token: string, now: number): Promise<TokenCaller | 'expired' | undefined> {
    if (!storable(token)) return undefined;
    const hash = hashToken(token);
    const row = await this.pg.db.get(
      `SELECT t.hash, t.kind AS token_kind, t.expires_at AS token_expires_at, g.id AS grant_id, g.scopes,
         g.last_used_at,
         g.revoked_at, ${USER_COLUMNS}
       FROM tokens t JOIN grants g ON g.id = t.grant_id JOIN users u ON u.id = g.user_id WHERE t.hash = $1`,
      hash,
    );
    const judged = judgeToken(row, hash, now);
    if (judged === undefined || judged === 'expired') return judged;
    if (judged.touch) await this.pg.db.run('UPDATE grants SET last_used_at = $1 WHERE id = $2', now, judged.grantId);
    return { user: toUser(row!), grant_id: judged.grantId, scopes: judged.scopes };
  }

  async addPersonalToken(
    userId: string,
    scopes: readonly string[],
    label: string,
    now: number,
    by?: AuditActor,
  ): Promise<{ token: string; grant: Grant }> {
    return this.pg.transaction(async (db) => {
      const made = await insertPersonalToken(db, userId, scopes, label, now);
      if (by !== undefined) await insertAudit(db, tokenCreated(by, made.grant), now);
      return made;
    });
  }

  async grants(userId: string | undefined): Promise<Grant[]> {
    if (userId !== undefined && !storable(userId)) return [];
    const rows =
      userId === undefined
        ? await this.pg.db.all(`${GRANT_SELECT} ORDER BY g.created_at DESC, g.id`)
        : await this.pg.db.all(`${GRANT_SELECT} WHERE g.user_id = $1 ORDER BY g.created_at DESC, g.id`, userId);
    return rows.map(toGrant);
  }

  async grant(id: string): Promise<Grant | undefined> {
    if (!storable(id)) return undefined;
    const row = await this.pg.db.get(`${GRANT_SELECT} WHERE g.id = $1`, id);
    return row === undefined ? undefined : toGrant(row);
  }

  async revokeGrant(id: string, now: number, by?: AuditActor): Promise<Grant | undefined> {
    if (!storable(id)) return undefined;
    return this.pg.transaction(async (db) => {
      const revoked = await db.run('UPDATE grants SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', now, id);
      const row = await db.get(`${GRANT_SELECT} WHERE g.id = $1`, id);
      const grant = row === undefined ? undefined : toGrant(row);
      if (grant !== undefined && revoked > 0 && by !== undefined) await insertAudit(db, tokenRevoked(by, grant), now);
      return grant;
    });
  }

  async revokeToken(token: string, now: number): Promise<boolean> {
    if (!storable(token)) return false;
    const row = await this.pg.db.get('SELECT grant_id FROM tokens WHERE hash = $1', hashToken(token));
    if (row === undefined) return false;
    await this.pg.db.run(
      'UPDATE grants SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL',
      now,
      String(row.grant_id),
    );
    return true;
  }

  async createDeviceCode(code: NewDeviceCode): Promise<boolean> {
    const added = await this.pg.db.run(
      `INSERT INTO device_codes (device_hash, user_code, client_id, scopes, client_label, created_at, expires_at,
         interval_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
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
    if (!storable(userCode)) return undefined;
    const row = await this.pg.db.get(
      `SELECT * FROM device_codes WHERE user_code = $1 AND status = 'pending' AND expires_at > $2`,
      userCode,
      now,
    );
    return row === undefined ? undefined : toDeviceCode(row);
  }

  async decideDeviceCode(userCode: string, userId: string | undefined, now: number): Promise<boolean> {
    if (!storable(userCode)) return false;
    const changed = await this.pg.db.run(
      `UPDATE device_codes SET status = $1, user_id = $2 WHERE user_code = $3 AND status = 'pending' AND ` +
        `expires_at > $4`,
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
    if (!storable(refreshToken)) return undefined;
    return this.signIns.run((repo) => refresh(repo, refreshToken, clientId, now, lifetimes));
  }

  async takeAttempt(key: string, limit: AttemptLimit, now: number): Promise<number | undefined> {
    // One statement: the row's lock orders concurrent takes of one key, each seeing the count the last one left.
    const row = await this.pg.db.get(
      `INSERT INTO rate_windows AS w (key, used, ends_at) VALUES ($1, 1, $2)
       ON CONFLICT (key) DO UPDATE SET
         used = CASE WHEN w.ends_at <= $3 THEN 1 ELSE w.used + 1 END,
         ends_at = CASE WHEN w.ends_at <= $3 THEN excluded.ends_at ELSE w.ends_at END
       WHERE w.ends_at <= $3 OR w.used < $4
       RETURNING ends_at`,
      key,
      now + limit.windowMs,
      now,
      limit.allowed,
    );
    return row === undefined ? undefined : Number(row.ends_at);
  }

  async returnAttempt(key: string, windowEnd: number): Promise<void> {
    await this.pg.db.run(
      'UPDATE rate_windows SET used = used - 1 WHERE key = $1 AND ends_at = $2 AND used > 0',
      key,
      windowEnd,
    );
  }

  async createBrowserSession(userId: string, now: number, ttlMs: number): Promise<{ token: string; csrf: string }> {
    const token = newSecret();
    const csrf = newSecret();
    await this.pg.db.run(
      'INSERT INTO browser_sessions (hash, user_id, csrf, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)',
      hashToken(token),
      userId,
      csrf,
      now,
      now + ttlMs,
    );
    return { token, csrf };
  }

  async browserSession(token: string, now: number): Promise<BrowserSession | undefined> {
    if (!storable(token)) return undefined;
    const row = await this.pg.db.get(
      `SELECT b.csrf, b.expires_at AS session_expires_at, ${USER_COLUMNS} FROM browser_sessions b JOIN users u ON ` +
        `u.id = b.user_id WHERE b.hash = $1 AND b.expires_at > $2`,
      hashToken(token),
      now,
    );
    return row === undefined
      ? undefined
      : { user: toUser(row), csrf: String(row.csrf), expires_at: Number(row.session_expires_at) };
  }

  async endBrowserSession(token: string): Promise<void> {
    if (!storable(token)) return;
    await this.pg.db.run('DELETE FROM browser_sessions WHERE hash = $1', hashToken(token));
  }

  async createSignInLink(userId: string, now: number, ttlMs: number, by?: AuditActor): Promise<string> {
    const token = newSecret();
    const insert = (db: Db) =>
      db.run(
        'INSERT INTO sign_in_links (hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)',
        hashToken(token),
        userId,
        now,
        now + ttlMs,
      );
    if (by === undefined) {
      await insert(this.pg.db);
      return token;
    }
    return this.pg.transaction(async (db) => {
      await insert(db);
      const row = await db.get(`SELECT ${USER_COLUMNS} FROM users u WHERE u.id = $1`, userId);
      if (row !== undefined) await insertAudit(db, signInLinkMade(by, toUser(row), now + ttlMs), now);
      return token;
    });
  }

  async useSignInLink(token: string, now: number): Promise<User | undefined> {
    if (!storable(token)) return undefined;
    // Spent by whichever request deletes it: one sign-in per link, across replicas.
    const spent = await this.pg.db.get(
      'DELETE FROM sign_in_links WHERE hash = $1 RETURNING user_id, expires_at',
      hashToken(token),
    );
    if (spent === undefined || Number(spent.expires_at) <= now) return undefined;
    const row = await this.pg.db.get(`SELECT ${USER_COLUMNS} FROM users u WHERE u.id = $1`, String(spent.user_id));
    return row === undefined ? undefined : toUser(row);
  }

  async oidcUser(issuer: string, subject: string): Promise<User | undefined> {
    if (!storable(issuer) || !storable(subject)) return undefined;
    const row = await this.pg.db.get(
      `SELECT ${USER_COLUMNS} FROM oidc_subjects o JOIN users u ON u.id = o.user_id WHERE o.issuer = $1 AND ` +
        `o.subject = $2`,
      issuer,
      subject,
    );
    return row === undefined ? undefined : toUser(row);
  }

  async bindOidcSubject(issuer: string, subject: string, userId: string): Promise<boolean> {
    if (!storable(issuer) || !storable(subject)) return false;
    await this.pg.db.run(
      'INSERT INTO oidc_subjects (issuer, subject, user_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
      issuer,
      subject,
      userId,
    );
    return (
      (await this.pg.db.get(
        'SELECT 1 FROM oidc_subjects WHERE issuer = $1 AND subject = $2 AND user_id = $3',
        issuer,
        subject,
        userId,
      )) !== undefined
    );
  }

  async createOidcLogin(state: string, login: OidcLogin, now: number, ttlMs: number): Promise<void> {
    await this.pg.db.run(
      'INSERT INTO oidc_logins (state_hash, code_verifier, nonce, next, expires_at) VALUES ($1, $2, $3, $4, $5)',
      hashToken(state),
      login.code_verifier,
      login.nonce,
      login.next,
      now + ttlMs,
    );
  }

  async takeOidcLogin(state: string, now: number): Promise<OidcLogin | undefined> {
    if (!storable(state)) return undefined;
    // Taken by whichever request deletes it: one callback per sign-in, across replicas.
    const row = await this.pg.db.get('DELETE FROM oidc_logins WHERE state_hash = $1 RETURNING *', hashToken(state));
    if (row === undefined || Number(row.expires_at) <= now) return undefined;
    return { code_verifier: String(row.code_verifier), nonce: String(row.nonce), next: String(row.next) };
  }

  async purgeExpired(now: number): Promise<number> {
    return this.pg.transaction(async (db) => {
      let rows = 0;
      rows += await db.run('DELETE FROM device_codes WHERE expires_at <= $1', now);
      rows += await db.run('DELETE FROM browser_sessions WHERE expires_at <= $1', now);
      rows += await db.run('DELETE FROM sign_in_links WHERE expires_at <= $1', now);
      rows += await db.run('DELETE FROM oidc_logins WHERE expires_at <= $1', now);
      rows += await db.run('DELETE FROM rate_windows WHERE ends_at <= $1', now);
      rows += await db.run('DELETE FROM tokens WHERE expires_at IS NOT NULL AND expires_at <= $1', now);
      const before = now - GRANT_HISTORY_MS;
      rows += await db.run('DELETE FROM grants WHERE revoked_at <= $1 OR expires_at <= $1', before);
      return rows;
    });
  }
}

/** A personal sign-in and its token, in `db` (the caller's transaction). */
export async function insertPersonalToken(
  db: Db,
  userId: string,
  scopes: readonly string[],
  label: string,
  now: number,
): Promise<{ token: string; grant: Grant }> {
  const token = newToken();
  const id = randomUUID();
  await db.run(
    `INSERT INTO grants (id, user_id, kind, scopes, label, created_at) VALUES ($1, $2, 'personal', $3, $4, $5)`,
    id,
    userId,
    scopes.join(' '),
    label,
    now,
  );
  await db.run(`INSERT INTO tokens (hash, grant_id, kind) VALUES ($1, $2, 'access')`, hashToken(token), id);
  return { token, grant: toGrant((await db.get(`${GRANT_SELECT} WHERE g.id = $1`, id))!) };
}

/** On one transaction's client: what a flow decides on is locked (FOR UPDATE) as it is read. */
class PgSignIns implements SignInRepository {
  constructor(private readonly db: Db) {}

  async lockDeviceCode(
    deviceHash: string,
  ): Promise<{ code: DeviceCode & { last_poll_at: number | null }; admin: boolean } | undefined> {
    const row = await this.db.get(
      'SELECT d.*, u.is_admin FROM device_codes d LEFT JOIN users u ON u.id = d.user_id WHERE d.device_hash = $1 ' +
        'FOR UPDATE OF d',
      deviceHash,
    );
    if (row === undefined) return undefined;
    const code = { ...toDeviceCode(row), last_poll_at: row.last_poll_at === null ? null : Number(row.last_poll_at) };
    return { code, admin: row.is_admin === true };
  }

  async recordPoll(deviceHash: string, now: number, slowDownMs: number): Promise<void> {
    await this.db.run(
      'UPDATE device_codes SET interval_ms = interval_ms + $1, last_poll_at = $2 WHERE device_hash = $3',
      slowDownMs,
      now,
      deviceHash,
    );
  }

  async deleteDeviceCode(deviceHash: string): Promise<void> {
    await this.db.run('DELETE FROM device_codes WHERE device_hash = $1', deviceHash);
  }

  async insertDeviceGrant(
    grantId: string,
    userId: string,
    clientId: string,
    scopes: readonly string[],
    label: string,
    now: number,
  ): Promise<void> {
    await this.db.run(
      `INSERT INTO grants (id, user_id, kind, client_id, scopes, label, created_at)
       VALUES ($1, $2, 'device', $3, $4, $5, $6)`,
      grantId,
      userId,
      clientId,
      scopes.join(' '),
      label,
      now,
    );
  }

  async lockToken(hash: string): Promise<Record<string, unknown> | undefined> {
    return this.db.get(
      `SELECT t.kind AS token_kind, t.expires_at AS token_expires_at, t.used_at, g.id AS grant_id, g.client_id,
         g.scopes, g.revoked_at
       FROM tokens t JOIN grants g ON g.id = t.grant_id WHERE t.hash = $1 FOR UPDATE OF t, g`,
      hash,
    );
  }

  async revokeGrant(grantId: string, now: number): Promise<void> {
    await this.db.run('UPDATE grants SET revoked_at = $1 WHERE id = $2', now, grantId);
  }

  async spendRefreshToken(hash: string, grantId: string, now: number): Promise<void> {
    await this.db.run('UPDATE tokens SET used_at = $1 WHERE hash = $2', now, hash);
    await this.db.run(`DELETE FROM tokens WHERE grant_id = $1 AND kind = 'access' AND expires_at <= $2`, grantId, now);
  }

  async insertToken(hash: string, grantId: string, kind: 'access' | 'refresh', expiresAt: number): Promise<void> {
    await this.db.run(
      'INSERT INTO tokens (hash, grant_id, kind, expires_at) VALUES ($1, $2, $3, $4)',
      hash,
      grantId,
      kind,
      expiresAt,
    );
  }

  async extendGrant(grantId: string, expiresAt: number, now: number): Promise<void> {
    await this.db.run('UPDATE grants SET expires_at = $1, last_used_at = $2 WHERE id = $3', expiresAt, now, grantId);
  }
}

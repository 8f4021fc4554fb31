/**
 * The shared database: PostgreSQL (`--database-url`), for any number of stateless replicas of the Control API: the
 * store (store.ts) over its repositories, one topic a file in postgres/. What SQLite gets from its single writer, this
 * gets from row and advisory locks:
 * - presign and complete lock the captured session's row (SELECT ... FOR UPDATE) before reading
 *   it (postgres/uploads.ts);
 * - the first administrator and the first policy are made under an advisory transaction lock that ordinary additions
 *   take shared, so "only when there is none" holds across replicas;
 * - transactions run at READ COMMITTED (each statement sees what committed before it, the locks order the rest) and
 *   are retried once on a deadlock or serialization failure (postgres/db.ts).
 * The URL's password never appears in `location`, a message or a hint. Bearer tokens are never stored: only their
 * SHA-256.
 */
import type pg from 'pg';
import { schemaTooNew } from './sqlite/migrations.js';
import { type Backend, Store } from './store.js';
import * as audit from './postgres/audit.js';
import { openPool } from './postgres/connect.js';
import { Db, type Pg, transaction, transactions } from './postgres/db.js';
import * as fleet from './postgres/fleet.js';
import { PostgresIdentity } from './postgres/identity.js';
import * as listing from './postgres/listing.js';
import { POSTGRES_MIGRATIONS } from './postgres/migrations.js';
import * as policy from './postgres/policy.js';
import * as search from './postgres/search.js';
import * as sessions from './postgres/sessions.js';
import { PgUploadBackend } from './postgres/uploads.js';
import * as users from './postgres/users.js';

export class PostgresStore extends Store {
  /** Connects (a bounded pool), brings the schema up to date, and refuses a database of a newer release. */
  static async open(url: string): Promise<PostgresStore> {
    const { pool, location } = await openPool(url);
    return new PostgresStore(backendOf(location, pool));
  }
}

function backendOf(location: string, pool: pg.Pool): Backend {
  const p: Pg = { db: new Db(pool), transaction: (fn) => transaction(pool, fn) };
  const uploads = new PgUploadBackend(p);
  let closing: Promise<void> | undefined;
  let organization: string | undefined;
  return {
    backend: 'postgres',
    location,
    identity: new PostgresIdentity(p),
    close: async () => {
      closing ??= pool.end();
      await closing;
    },
    check: async () => {
      // SELECT 1 and the schema's version in one round trip.
      const row = await p.db.get('SELECT 1 AS ok, (SELECT MAX(version) FROM schema_version) AS v');
      const version = Number(row?.v ?? 0);
      if (version > POSTGRES_MIGRATIONS.length) throw schemaTooNew(location, version, POSTGRES_MIGRATIONS.length);
    },
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    uploads,
    users: transactions(p, (db) => new users.PgUsers(db)),
    policies: transactions(p, (db) => new policy.PgPolicies(db)),
    sessions: transactions(p, (db) => new sessions.PgSessions(db)),
    granted: (sessionId, userId) => new sessions.PgSessions(p.db).granted(sessionId, userId),
    statements: {
      organizationId: async () => {
        // Made once by the first migration; it never changes.
        organization ??= String((await p.db.get(`SELECT value FROM settings WHERE key = 'organization_id'`))!.value);
        return organization;
      },
      userById: (id) => users.userById(p, id),
      userByEmail: (email) => users.userByEmail(p.db, email),
      listUsers: () => users.listUsers(p),
      searchUsers: (q, excludeId, limit) => users.searchUsers(p, q, excludeId, limit),
      publicUrl: () => policy.publicUrl(p),
      setPublicUrl: (url) => policy.setPublicUrl(p, url),
      currentPolicy: () => policy.currentPolicy(p),
      policyRevision: (revision) => policy.policyRevision(p, revision),
      recordClientStatus: (userId, instanceId, report, now) =>
        fleet.recordClientStatus(p, userId, instanceId, report, now),
      clientStatuses: (query) => fleet.clientStatuses(p, query),
      artifact: (id) => sessions.artifact(p, id),
      uploadWanted: (blobKey, now) => uploads.uploadWanted(blobKey, now),
      markFailed: (artifactId, reason, now) => uploads.markFailed(artifactId, reason, now),
      claimSearchWork: (now, leaseMs, limit) => search.claimSearchWork(p, now, leaseMs, limit),
      searchWorkDone: (sessionId, artifactId) => search.searchWorkDone(p, sessionId, artifactId),
      searchIndexed: (done, now) => search.searchIndexed(p, done, now),
      snippets: (sessionIds, q, now, marks) => search.snippets(p, sessionIds, q, now, marks),
      indexable: (afterId, limit) => search.indexable(p, afterId, limit),
      countIndexable: () => search.countIndexable(p),
      setSearchText: (sessionId, artifactId, text, now) => search.setSearchText(p, sessionId, artifactId, text, now),
      dropExpiredSearch: (now) => search.dropExpiredSearch(p, now),
      reindexCursor: () => policy.reindexCursor(p),
      setReindexCursor: (after) => policy.setReindexCursor(p, after),
      session: (id) => sessions.session(p, id),
      artifactsOf: (sessionId) => sessions.artifactsOf(p, sessionId),
      grants: (sessionId) => sessions.grants(p, sessionId),
      recipients: (session) => sessions.recipients(p, session),
      listSessions: (viewer, query, now) => listing.listSessions(p, viewer, query, now),
      facets: (viewer, userQ, selectedUserId) => listing.facets(p, viewer, userQ, selectedUserId),
      countByHarness: (viewer, query, now) => listing.countByHarness(p, viewer, query, now),
      expiredArtifacts: (now, limit) => sessions.expiredArtifacts(p, now, limit),
      markBlobDeleted: (artifactId) => sessions.markBlobDeleted(p, artifactId),
      blobDeletionsDue: (now, limit) => sessions.blobDeletionsDue(p, now, limit),
      blobDeleted: (key, now) => sessions.blobDeleted(p, key, now),
      appendAudit: (event, now) => audit.appendAudit(p, event, now),
      appendAudits: (events, now) => audit.appendAudits(p, events, now),
      auditEvents: (query) => audit.auditEvents(p, query),
    },
  };
}

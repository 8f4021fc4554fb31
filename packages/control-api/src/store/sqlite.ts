/**
 * The embedded database: SQLite (`<data>/control.db`, `node:sqlite`), for one machine or a small team: the store
 * (store.ts) over its repositories, one topic a file in sqlite/. Bearer tokens are never stored: only their SHA-256.
 */
import { type Backend, Store } from './store.js';
import { auditEvents, insertAudit } from './sqlite/audit.js';
import { SqliteDb, transactions } from './sqlite/db.js';
import { clientStatuses, recordClientStatus } from './sqlite/fleet.js';
import { SqliteIdentity } from './sqlite/identity.js';
import { countByHarness, facets, listSessions } from './sqlite/listing.js';
import { SQLITE_MIGRATIONS, schemaTooNew, sqliteSchemaVersion } from './sqlite/migrations.js';
import { SqlitePolicies } from './sqlite/policy.js';
import * as search from './sqlite/search.js';
import * as sessions from './sqlite/sessions.js';
import { SqliteUploads } from './sqlite/uploads.js';
import { SqliteUsers } from './sqlite/users.js';

export { requireDataDir } from './sqlite/db.js';

export class SqliteStore extends Store {
  constructor(db: SqliteDb) {
    super(backendOf(db));
  }

  /** Opens `<dataDir>/control.db` (see SqliteDb.open: `create` false refuses a missing one), migrated. */
  static open(dataDir: string, options: { create?: boolean | undefined } = {}): SqliteStore {
    return new SqliteStore(SqliteDb.open(dataDir, options));
  }
}

function backendOf(db: SqliteDb): Backend {
  const identity = new SqliteIdentity(db);
  const uploads = new SqliteUploads(db);
  const users = new SqliteUsers(db, identity);
  const policies = new SqlitePolicies(db);
  const sessionRows = new sessions.SqliteSessions(db);
  return {
    backend: 'sqlite',
    location: db.file,
    identity,
    close: async () => db.close(),
    check: async () => {
      const version = sqliteSchemaVersion(db.connection);
      if (version > SQLITE_MIGRATIONS.length) throw schemaTooNew(db.file, version, SQLITE_MIGRATIONS.length);
      db.connection.prepare('SELECT 1').get();
    },
    uploads,
    users: transactions(db, users),
    policies: transactions(db, policies),
    sessions: transactions(db, sessionRows),
    granted: (sessionId, userId) => sessionRows.granted(sessionId, userId),
    statements: {
      organizationId: () => policies.setting('organization_id')!,
      userById: (id) => users.userById(id),
      userByEmail: (email) => users.userByEmail(email),
      listUsers: () => users.listUsers(),
      searchUsers: (q, excludeId, limit) => users.searchUsers(q, excludeId, limit),
      publicUrl: () => policies.setting('public_url'),
      setPublicUrl: (url) => policies.setSetting('public_url', url),
      currentPolicy: () => policies.currentPolicy(),
      policyRevision: (revision) => policies.policyRevision(revision),
      recordClientStatus: (userId, instanceId, report, now) => recordClientStatus(db, userId, instanceId, report, now),
      clientStatuses: (query) => clientStatuses(db, query),
      artifact: (id) => uploads.artifactWithSession(id),
      uploadWanted: (blobKey, now) => uploads.uploadWanted(blobKey, now),
      markFailed: (artifactId, reason, now) => uploads.markFailed(artifactId, reason, now),
      claimSearchWork: (now, leaseMs, limit) => search.claimSearchWork(db, now, leaseMs, limit),
      searchWorkDone: (sessionId, artifactId) => search.searchWorkDone(db, sessionId, artifactId),
      searchIndexed: (done, now) => search.searchIndexed(db, done, now),
      snippets: (sessionIds, q, now, marks) => search.snippets(db, sessionIds, q, now, marks),
      indexable: (afterId, limit) => search.indexable(db, afterId, limit),
      countIndexable: () => search.countIndexable(db),
      setSearchText: (sessionId, artifactId, text, now) =>
        db.transaction(() => search.setSearchText(db, sessionId, artifactId, text, now)),
      dropExpiredSearch: (now) => search.dropExpiredSearch(db, now),
      reindexCursor: () => policies.setting('reindex_after'),
      setReindexCursor: (after) => policies.setSetting('reindex_after', after),
      session: (id) => sessions.sessionById(db, id),
      artifactsOf: (sessionId) => sessions.artifactsOf(db, sessionId),
      grants: (sessionId) => sessions.grants(db, sessionId),
      recipients: (session) => sessions.recipients(db, session),
      listSessions: (viewer, query, now) => listSessions(db, viewer, query, now),
      facets: (viewer, userQ, selectedUserId) => facets(db, viewer, userQ, selectedUserId),
      countByHarness: (viewer, query, now) => countByHarness(db, viewer, query, now),
      expiredArtifacts: (now, limit) => sessions.expiredArtifacts(db, now, limit),
      markBlobDeleted: (artifactId) => sessions.markBlobDeleted(db, artifactId),
      blobDeletionsDue: (now, limit) => sessions.blobDeletionsDue(db, now, limit),
      blobDeleted: (key, now) => sessions.blobDeleted(db, key, now),
      appendAudit: (event, now) => insertAudit(db, event, now),
      appendAudits: (events, now) =>
        db.transaction(() => {
          for (const event of events) insertAudit(db, event, now);
        }),
      auditEvents: (query) => auditEvents(db, query),
    },
  };
}

/**
 * The embedded store compiles each statement once per connection. SQLite calls a connection's authorizer only while it
 * compiles a statement, so after one round of the store's work, a second round with other values must not call it at
 * all: a statement compiled again there costs its parse and plan on every call (the token lookup behind every
 * request was one: ~10 µs each time).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { constants, type DatabaseSync, StatementSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../src/store/sqlite.js';
import { SqliteDb } from '../src/store/sqlite/db.js';
import { newArtifact } from '../../../test/support/store-inputs.js';

type Method = 'get' | 'all' | 'run' | 'iterate';
const METHODS: Method[] = ['get', 'all', 'run', 'iterate'];
/** The tables FTS5 keeps the full-text index in. */
const FTS5_SHADOW = /^session_search_(data|idx|content|docsize|config)$/;
/** Authorizer actions that begin the compile of a statement. */
const BEGINS = new Set([
  constants.SQLITE_SELECT,
  constants.SQLITE_INSERT,
  constants.SQLITE_DELETE,
  constants.SQLITE_TRANSACTION,
]);

type Asked = { action: number; table: string | null };

/**
 * Whether the authorizer calls `asked` compiled any statement of the store's own. FTS5 compiles statements of its own
 * on its shadow tables while the index is searched or written (on SQLite 3.54 again on every search once the index has
 * several segments): out of the store's reach, and told apart by naming only shadow tables.
 */
function compilesOfTheStore(asked: readonly Asked[]): boolean {
  const compiles: Asked[][] = [];
  for (const call of asked) {
    if (BEGINS.has(call.action) || compiles.length === 0) compiles.push([]);
    compiles.at(-1)!.push(call);
  }
  return compiles.some((calls) => {
    const tables = calls.flatMap((c) => (c.table === null ? [] : [c.table]));
    return tables.length === 0 || !tables.every((t) => FTS5_SHADOW.test(t));
  });
}

describe('SQLite store statements', () => {
  let dir: string;
  let store: SqliteStore;
  /** The store's one connection. */
  let connection: DatabaseSync;
  const originals = new Map<Method, (...args: never[]) => unknown>();

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'blue-control-statements-'));
    const db = SqliteDb.open(dir);
    connection = db.connection;
    store = new SqliteStore(db);
  });
  afterEach(async () => {
    for (const [name, fn] of originals) (StatementSync.prototype as unknown as Record<Method, unknown>)[name] = fn;
    originals.clear();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  /**
   * The statements SQLite compiled (by their SQL, `BEGIN`/`COMMIT` and the like included) while `again` ran, after
   * `first` had run (setAuthorizer expires what was compiled before it, so `first` compiles everything once more).
   */
  async function compiledAgain(first: () => Promise<void>, again: () => Promise<void>): Promise<string[]> {
    const db = connection;
    const compiled = new Set<string>();
    // What the authorizer was asked while one statement was prepared or ran (or outside any: an exec).
    let asked: Asked[] = [];
    let counting = false;
    const settle = (sql: string | undefined): void => {
      if (counting && compilesOfTheStore(asked)) compiled.add((sql ?? '(run by exec)').replace(/\s+/g, ' '));
      asked = [];
    };
    for (const name of METHODS) {
      const original = StatementSync.prototype[name] as (...args: never[]) => unknown;
      originals.set(name, original);
      (StatementSync.prototype as unknown as Record<Method, unknown>)[name] = function (
        this: StatementSync,
        ...args: never[]
      ) {
        settle(undefined);
        try {
          return original.apply(this, args);
        } finally {
          settle(this.sourceSQL);
        }
      };
    }
    const prepare = db.prepare.bind(db);
    db.prepare = (sql: string) => {
      settle(undefined);
      try {
        return prepare(sql);
      } finally {
        settle(`(prepared) ${sql}`);
      }
    };
    db.setAuthorizer((action, table) => {
      asked.push({ action, table });
      return constants.SQLITE_OK;
    });
    await first();
    counting = true;
    await again();
    settle(undefined);
    return [...compiled];
  }

  /** Most of what a server does: sign-ins, uploads, listings, sharing, search, deletion and the sweeps. */
  async function rounds(n: number): Promise<void> {
    const now = 1_000_000 * n;
    const operator = { kind: 'cli' as const, name: 'ops' };
    const { user: ada, token } = await store.addUser(`ada${n}@example.com`, true, now, { by: operator });
    const { user: bob } = await store.addUser(`bob${n}@example.com`, false, now);
    const byAda = { kind: 'user' as const, id: ada.id, email: ada.email };
    await store.identity.authenticate(token, now + 1);
    await store.userById(bob.id);
    await store.userByEmail(`BOB${n}@example.com`);
    await store.listUsers();
    await store.searchUsers('bob', ada.id, 10);
    await store.publishPolicy({ allowed_harnesses: ['claude'], n }, now, { by: operator });
    const current = await store.currentPolicy();
    await store.publishPolicyOver({ allowed_harnesses: ['codex'], n }, current!.revision, now, { by: byAda });
    await store.setAdmin(bob.id, true, { by: byAda, now });
    await store.setAdmin(bob.id, false, { by: byAda, now });
    await store.provisionUser(`carol${n}@example.com`, now, {
      kind: 'identity_provider',
      issuer: 'https://idp.example',
    });
    await store.recordClientStatus(ada.id, `laptop-${n}`, { ok: true }, now);
    await store.clientStatuses({ limit: 10, offset: 0 });
    await store.clientStatuses({ user_id: ada.id, limit: 10, offset: 0 });

    const presigned = await store.presign(
      newArtifact(ada.id, { native_session_id: `s-${n}`, title: `title ${n}` }),
      now,
      60_000,
    );
    await store.presign(newArtifact(ada.id, { native_session_id: `s-${n}`, title: `title ${n}` }), now + 1, 60_000);
    const artifact = (await store.complete(presigned.artifact.id, now + 2, 60_000))!;
    const failed = await store.presign(
      newArtifact(ada.id, { native_session_id: `f-${n}`, sha256: 'b'.repeat(64) }),
      now,
      60_000,
    );
    await store.markFailed(failed.artifact.id, 'bad bytes', now + 2);
    await store.uploadWanted(artifact.blob_key, now + 3);
    const found = await store.artifact(artifact.id);
    const session = found!.session;
    await store.session(session.id);
    await store.artifactsOf(session.id);
    await store.setSharing(session.id, 'selected', [bob.id]);
    await store.grants(session.id);
    await store.recipients(session);
    await store.canView(session, bob);

    const claimed = await store.claimSearchWork(now + 3, 60_000, 10);
    await store.searchIndexed(
      claimed.map((c) => ({ session_id: c.session_id, artifact_id: c.artifact.id, text: `fixing the parser ${n}` })),
      now + 3,
    );
    await store.setSearchText(session.id, artifact.id, `fixing the parser again ${n}`, now + 3);
    await store.snippets([session.id], 'parser', now + 3);
    await store.indexable('', 10);
    await store.countIndexable();
    await store.setReindexCursor(session.id);
    await store.reindexCursor();

    const base = { sort: 'updated_desc' as const, limit: 10 };
    await store.listSessions(ada, base, now + 4);
    await store.listSessions(bob, { ...base, q: 'parser', sort: 'relevance', count: true }, now + 4);
    await store.listSessions(
      ada,
      { ...base, harness: 'claude', status: 'complete', updated_from: 0, after_id: session.id },
      now + 4,
    );
    await store.facets(ada, 'bo', undefined);
    await store.countByHarness(ada, {}, now + 4);

    const audit = {
      actor: byAda,
      action: 'session.read' as const,
      session_id: session.id,
      owner_id: ada.id,
      details: {},
    };
    await store.appendAudit(audit, now + 5);
    await store.appendAudits([audit, audit], now + 5);
    await store.auditEvents({ limit: 10, session_id: session.id });
    await store.expiredArtifacts(now + 120_000, 10);
    await store.dropExpiredSearch(now + 120_000);
    await store.deleteSession(session.id, { ...audit, action: 'session.delete' }, now + 6, now + 7);
    const keys = await store.blobDeletionsDue(now + 8, 10);
    for (const key of keys) await store.blobDeleted(key, now + 8);

    const id = store.identity;
    const personal = await id.addPersonalToken(bob.id, ['session:read'], `laptop ${n}`, now, operator);
    await id.grants(bob.id);
    await id.grant(personal.grant.id);
    await id.revokeGrant(personal.grant.id, now + 1, byAda);
    await id.revokeToken(personal.token, now + 1);
    const device = {
      device_hash: `d${n}`.padEnd(64, '0'),
      user_code: `CODE-${n}`,
      client_id: 'blue-agent',
      scopes: ['session:read'],
      client_label: 'laptop',
      created_at: now,
      expires_at: now + 60_000,
      interval_ms: 0,
    };
    await id.createDeviceCode(device);
    await id.pendingDeviceCode(device.user_code, now + 1);
    await id.decideDeviceCode(device.user_code, bob.id, now + 1);
    const poll = await id.pollDeviceCode(
      device.device_hash,
      'blue-agent',
      now + 2,
      { accessMs: 60_000, refreshMs: 120_000 },
      0,
    );
    if (poll.outcome === 'approved')
      await id.refresh(poll.tokens.refresh_token, 'blue-agent', now + 3, { accessMs: 60_000, refreshMs: 120_000 });
    const browser = await id.createBrowserSession(bob.id, now, 60_000);
    await id.browserSession(browser.token, now + 1);
    await id.endBrowserSession(browser.token);
    await id.useSignInLink(await id.createSignInLink(bob.id, now, 60_000), now + 1);
    await id.createSignInLink(bob.id, now, 60_000, operator);
    await id.bindOidcSubject('https://idp.example', `sub-${n}`, bob.id);
    await id.oidcUser('https://idp.example', `sub-${n}`);
    await id.createOidcLogin(`state-${n}`, { code_verifier: 'v', nonce: 'n', next: '/' }, now, 60_000);
    await id.takeOidcLogin(`state-${n}`, now + 1);
    const window = await id.takeAttempt(`misses-${n}`, { allowed: 1, windowMs: 60_000 }, now);
    await id.takeAttempt(`misses-${n}`, { allowed: 1, windowMs: 60_000 }, now + 1);
    await id.returnAttempt(`misses-${n}`, window!);
    await id.purgeExpired(now + 10_000_000);
  }

  it('compiles nothing the second time the same work runs', async () => {
    expect(
      await compiledAgain(
        () => rounds(1),
        () => rounds(2),
      ),
    ).toEqual([]);
  });

  it('would see a statement compiled again', async () => {
    // A LIKE on an indexed column with a bound pattern: SQLite compiles it again for each new pattern (documented for
    // sqlite3_prepare_v2, and so in every version).
    const db = connection;
    const lookup = db.prepare('SELECT id FROM users WHERE email LIKE ?');
    const compiled = await compiledAgain(
      async () => void lookup.get('ada%'),
      async () => void lookup.get('bob%'),
    );
    expect(compiled).toEqual([lookup.sourceSQL]);
  });
});

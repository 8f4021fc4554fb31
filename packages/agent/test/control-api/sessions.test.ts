/**
 * What the session client accepts from the Control API and sends to it, in the contract's shapes: listing items held
 * to schemas/control-captured-session.schema.json before use (and made fit for a terminal), cursor and numbered
 * listings, short ids against a server that ignores `id_prefix` (Blue's), sharing by member id, e-mail addresses
 * resolved through the members search, and downloads checked against what is known of the bundle.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ControlClient } from '../../src/control-api/client.js';
import { parseSession, SessionsApi } from '../../src/control-api/sessions.js';
import { BlueError } from '@blue-agent/contract/errors.js';

const TOKEN = 'tok_SECRET_sessions_0123456789';
const ID = '3f2a91c0-1111-4222-8333-444455556666';
const NOW = Date.parse('2026-03-01T00:00:00Z');

function item(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: ID,
    user_id: 'u-1',
    user_email: 'ada@example.com',
    harness: 'claude',
    compatibility_profile: 'claude-v2_0_12',
    native_session_id: 'sess-1',
    cwd: '/home/ada/p',
    artifact_format: 'blue-session-bundle-v1',
    resumable: true,
    title: 'Fix the build',
    summary: null,
    source_captured_at: '2026-01-01T00:00:00Z',
    repository: { root: '/home/ada/p', remote: null },
    sharing_mode: 'private',
    share_recipient_count: 0,
    updated_at: '2026-01-01T00:00:00Z',
    status: 'complete',
    size_bytes: 10,
    content_type: 'application/vnd.blue.session-bundle+tar+gzip',
    retention_expires_at: '2026-04-01T00:00:00Z',
    ...over,
  };
}

const idOf = (n: number) => `${n.toString(16).padStart(8, '0')}-0000-4000-8000-000000000000`;

function refused(value: unknown): BlueError {
  try {
    parseSession(value, `GET /session-uploads`);
  } catch (error) {
    expect(error).toBeInstanceOf(BlueError);
    expect((error as BlueError).code).toBe('UPLOAD_FAILED');
    expect((error as BlueError).message).toContain("the Control API's answer is not usable");
    return error as BlueError;
  }
  throw new Error('accepted');
}

describe('parseSession', () => {
  it("accepts Blue's CapturedSession, ignoring fields it does not know, every optional field made explicit", () => {
    const s = parseSession(
      item({ added_later: { x: 1 }, cwd: undefined, title: undefined, repository: undefined }),
      'here',
    );
    expect(s).toMatchObject({
      id: ID,
      harness: 'claude',
      native_session_id: 'sess-1',
      sharing_mode: 'private',
      cwd: null,
      title: null,
      repository: { root: null, remote: null },
      sha256: null,
      artifact_id: null,
    });
    expect(s).not.toHaveProperty('added_later');
    expect(s).not.toHaveProperty('shared');
    expect(parseSession(item({ shared: true, sha256: 'a'.repeat(64), artifact_id: idOf(7) }), 'here')).toMatchObject({
      shared: true,
      sha256: 'a'.repeat(64),
      artifact_id: idOf(7),
    });
  });

  it('refuses what the contract does not allow, naming the field', () => {
    expect(refused(item({ id: '../../etc' })).message).toContain('/id');
    expect(refused(item({ sha256: 'zz' })).message).toContain('/sha256');
    expect(refused(item({ size_bytes: -1 })).message).toContain('/size_bytes');
    expect(refused(item({ sharing_mode: 'public' })).message).toContain('/sharing_mode');
    expect(refused(item({ user_id: 'x'.repeat(65) })).message).toContain('/user_id');
    expect(refused(item({ resumable: undefined })).message).toContain('"resumable"');
    refused([item()]);
    refused(null);
  });

  it('makes text from other people fit for a terminal, bounded', () => {
    const s = parseSession(
      item({
        title: 'evil\u001b[2Jtitle\u0007',
        user_email: 'a\u0000@x',
        cwd: '/p\r\nq',
        native_session_id: 'n\u202e1',
      }),
      'here',
    );
    for (const text of [s.title, s.user_email, s.cwd, s.native_session_id])
      expect(text).not.toMatch(/[\u0000-\u001f\u007f\u202e]/);
  });
});

interface Seen {
  method: string;
  url: URL;
  headers: IncomingMessage['headers'];
  body: string;
}

let server: Server;
let origin: string;
let seen: Seen[];
let handle: (req: Seen, res: ServerResponse) => void;
let api: SessionsApi;
let dir: string;

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

beforeEach(async () => {
  seen = [];
  handle = (_req, res) => json(res, 404, { error: 'not found' });
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = {
        method: req.method ?? '',
        url: new URL(req.url ?? '/', 'http://x'),
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      seen.push(r);
      handle(r, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = await ControlClient.create({
    controlUrl: origin,
    token: TOKEN,
    tokenSource: 't',
    env: {},
    userAgent: 'x',
    timeoutMs: 5_000,
  });
  api = new SessionsApi(client, () => NOW);
  dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-sessions-'));
});

afterEach(async () => {
  await api.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

describe('listing', () => {
  it('walks cursor pages (limit at most 100, cursor = the last id), refusing a page that breaks contract', async () => {
    handle = (req, res) => {
      const cursor = req.url.searchParams.get('cursor');
      if (cursor === null)
        json(res, 200, { items: [item({ id: idOf(1) }), item({ id: idOf(2) })], next_cursor: idOf(2) });
      else json(res, 200, { items: [item({ id: idOf(3) })], next_cursor: null });
    };
    const listed = await api.list({ harness: 'claude' });
    expect(listed).toMatchObject({ truncated: false });
    expect(listed.items.map((s) => s.id)).toEqual([idOf(1), idOf(2), idOf(3)]);
    expect(seen.map((r) => Object.fromEntries(r.url.searchParams))).toEqual([
      { harness: 'claude', limit: '100' },
      { harness: 'claude', limit: '100', cursor: idOf(2) },
    ]);
    handle = (_req, res) =>
      json(res, 200, { items: [item(), item({ share_recipient_count: 'two' })], next_cursor: null });
    await expect(api.page({})).rejects.toMatchObject({
      code: 'UPLOAD_FAILED',
      message: expect.stringContaining(
        "GET /session-uploads: the Control API's answer is not usable: /items/1/share_recipient_count",
      ),
    });
  });

  it('searches (q) in numbered mode, never beside cursor or limit (Blue refuses the mix)', async () => {
    handle = (req, res) => {
      const page = Number(req.url.searchParams.get('page'));
      json(res, 200, { items: [item({ id: idOf(page) })], page, per_page: 100, total: 2, total_pages: 2 });
    };
    const listed = await api.list({ q: 'build' });
    expect(listed.items.map((s) => s.id)).toEqual([idOf(1), idOf(2)]);
    for (const r of seen) {
      expect(r.url.searchParams.get('q')).toBe('build');
      expect(r.url.searchParams.get('per_page')).toBe('100');
      expect(r.url.searchParams.has('cursor') || r.url.searchParams.has('limit')).toBe(false);
    }
  });

  it('derives expired from retention_expires_at', () => {
    expect(api.expired({ retention_expires_at: '2026-02-28T23:59:59Z' })).toBe(true);
    expect(api.expired({ retention_expires_at: '2026-03-01T00:00:01Z' })).toBe(false);
    expect(api.expired({ retention_expires_at: null })).toBe(false);
  });
});

describe('ids people type', () => {
  /** Like Blue's server: `id_prefix` is ignored, pages of two. */
  function ignoringPrefix(ids: string[]) {
    handle = (req, res) => {
      const cursor = req.url.searchParams.get('cursor');
      const from = cursor === null ? 0 : ids.indexOf(cursor) + 1;
      const page = ids.slice(from, from + 2);
      json(res, 200, {
        items: page.map((id) => item({ id })),
        next_cursor: from + 2 < ids.length ? page.at(-1) : null,
      });
    };
  }

  it('finds a prefix among pages when the server ignores id_prefix; tells not found and ambiguous apart', async () => {
    ignoringPrefix([
      idOf(1),
      idOf(2),
      'abcdef12-0000-4000-8000-000000000001',
      idOf(4),
      'abcdef12-0000-4000-8000-000000000002',
      'fedcba98-0000-4000-8000-000000000000',
    ]);
    expect((await api.resolve('FEDCBA98')).id).toBe('fedcba98-0000-4000-8000-000000000000');
    expect(seen.every((r) => r.url.searchParams.get('id_prefix') === 'fedcba98')).toBe(true);
    await expect(api.resolve('abcdef12')).rejects.toMatchObject({
      code: 'SESSION_AMBIGUOUS',
      message: expect.stringContaining('names 2 sessions'),
    });
    await expect(api.resolve('12345678')).rejects.toMatchObject({ code: 'SESSION_NOT_FOUND' });
  });

  it('a full id is fetched (its detail); one the caller may not see is not found (404, or 403 from Blue)', async () => {
    handle = (req, res) =>
      req.url.pathname === `/session-uploads/${ID}`
        ? json(res, 200, { session: item(), sharing: { user_ids: ['u-2'] }, artifacts: [] })
        : json(res, 403, { error: 'session access denied' });
    expect((await api.resolve(ID.toUpperCase())).title).toBe('Fix the build');
    expect((await api.detail(ID)).shared_with).toEqual(['u-2']);
    await expect(api.resolve(idOf(9))).rejects.toMatchObject({ code: 'SESSION_NOT_FOUND' });
    await expect(api.resolve('nope')).rejects.toMatchObject({ code: 'SESSION_ID_MALFORMED' });
  });

  it('resume takes what the picker listing holds; a session not resumable, or expired, is told apart', async () => {
    handle = (req, res) => {
      const picker = req.url.searchParams.get('resumable') === 'true';
      const items = picker
        ? [
            item({ id: idOf(1), shared: true }),
            item({ id: idOf(3), shared: false, retention_expires_at: '2026-02-01T00:00:00Z' }),
          ]
        : [item({ id: idOf(1) }), item({ id: idOf(2), resumable: false }), item({ id: idOf(3) })];
      json(res, 200, { items, next_cursor: null });
    };
    expect(await api.resolveForResume(idOf(1).slice(0, 8))).toMatchObject({ id: idOf(1), shared: true });
    await expect(api.resolveForResume(idOf(2).slice(0, 8))).rejects.toMatchObject({ code: 'SESSION_NOT_RESUMABLE' });
    await expect(api.resolveForResume(idOf(3).slice(0, 8))).rejects.toMatchObject({ code: 'SESSION_EXPIRED' });
    await expect(api.resolveForResume(idOf(4).slice(0, 8))).rejects.toMatchObject({ code: 'SESSION_NOT_FOUND' });
  });
});

describe('sharing', () => {
  it('PUTs exactly {mode, user_ids} ({mode} alone unless selected), reads {id, mode, user_ids} back', async () => {
    handle = (req, res) => {
      const body = JSON.parse(req.body) as { mode: string; user_ids?: string[] };
      json(res, 200, { id: ID, mode: body.mode, user_ids: body.user_ids ?? [] });
    };
    expect(await api.setSharing(ID, 'selected', ['u-2', 'u-3'])).toEqual({
      id: ID,
      mode: 'selected',
      user_ids: ['u-2', 'u-3'],
    });
    expect(await api.setSharing(ID, 'workspace', [])).toEqual({ id: ID, mode: 'workspace', user_ids: [] });
    expect(seen.map((r) => JSON.parse(r.body))).toEqual([
      { mode: 'selected', user_ids: ['u-2', 'u-3'] },
      { mode: 'workspace' },
    ]);
  });

  it("says SESSION_NOT_OWNED for Blue's 403 and SHARE_RECIPIENT_UNKNOWN for its 400 about members", async () => {
    handle = (_req, res) => json(res, 403, { error: 'only the session owner may change sharing' });
    await expect(api.setSharing(ID, 'private', [])).rejects.toMatchObject({ code: 'SESSION_NOT_OWNED' });
    handle = (_req, res) => json(res, 400, { error: 'all recipients must be active workspace members' });
    await expect(api.setSharing(ID, 'selected', ['u-9'])).rejects.toMatchObject({
      code: 'SHARE_RECIPIENT_UNKNOWN',
      message: expect.stringContaining('u-9'),
    });
    handle = (_req, res) => json(res, 400, { error: 'no such user "u-9"', code: 'unknown_user' });
    await expect(api.setSharing(ID, 'selected', ['u-9'])).rejects.toMatchObject({ code: 'SHARE_RECIPIENT_UNKNOWN' });
  });

  it(
    'resolves e-mail addresses through the members search: one exact match, case-insensitive; else ' +
      'SHARE_RECIPIENT_UNKNOWN',
    async () => {
      const members = [
        { id: 'u-bob', email: 'Bob@Example.com' },
        { id: 'u-bobby', email: 'bobby@example.com' },
        { id: 'u-twin-1', email: 'twin@example.com' },
        { id: 'u-twin-2', email: 'TWIN@example.com' },
      ];
      handle = (req, res) => {
        const q = req.url.searchParams.get('q') ?? '';
        json(res, 200, { items: members.filter((m) => m.email.toLowerCase().includes(q.toLowerCase())) });
      };
      expect(await api.memberIds(['bob@example.COM'])).toEqual(new Map([['bob@example.COM', 'u-bob']]));
      expect(seen[0]!.url.pathname).toBe('/session-uploads/members');
      const error = (await api
        .memberIds(['bob@example.com', 'nobody@example.com', 'twin@example.com'])
        .catch((e: unknown) => e)) as BlueError;
      expect(error.code).toBe('SHARE_RECIPIENT_UNKNOWN');
      expect(error.message).toBe(
        'unknown recipients nobody@example.com, twin@example.com: no such member on the Control API (or more than ' +
          'one with that address)',
      );
    },
  );
});

describe('download', () => {
  const bytes = Buffer.from('the bundle bytes');
  const digest = createHash('sha256').update(bytes).digest('hex');
  let storage: Server;
  let storageSeen: IncomingMessage['headers'][];
  let storageOrigin: string;

  beforeEach(async () => {
    storageSeen = [];
    storage = createServer((req, res) => {
      storageSeen.push(req.headers);
      res.writeHead(200, { 'content-length': bytes.length }).end(bytes);
    });
    await new Promise<void>((resolve) => storage.listen(0, '127.0.0.1', resolve));
    storageOrigin = `http://127.0.0.1:${(storage.address() as AddressInfo).port}`;
  });
  afterEach(async () => {
    storage.closeAllConnections();
    await new Promise((resolve) => storage.close(resolve));
  });

  const session = (over: Record<string, unknown> = {}) =>
    parseSession(item({ size_bytes: bytes.length, ...over }), 'here');

  it(
    "Blue's answer ({download_url, expires_in_seconds}, no digest): the size is checked here, never the token " +
      'sent to storage',
    async () => {
      handle = (_req, res) =>
        json(res, 200, { download_url: `${storageOrigin}/obj?X-Amz-Signature=abc`, expires_in_seconds: 300 });
      const file = path.join(dir, 'a.tgz');
      expect(await api.download(session(), file)).toEqual({ size: bytes.length, sha256: digest });
      expect((await readFile(file)).equals(bytes)).toBe(true);
      expect(storageSeen[0]!.authorization).toBeUndefined();
      expect(JSON.stringify(storageSeen)).not.toContain(TOKEN);
      // A listing that says another size: refused, and the file removed.
      await expect(
        api.download(session({ size_bytes: bytes.length + 1 }), path.join(dir, 'b.tgz')),
      ).rejects.toMatchObject({ code: 'DOWNLOAD_FAILED' });
    },
  );

  it('ours (sha256, size, headers): checked against the bytes; an Authorization header in it is dropped', async () => {
    handle = (_req, res) =>
      json(res, 200, {
        download_url: `${storageOrigin}/obj`,
        method: 'GET',
        headers: { 'x-extra': '1', Authorization: 'Bearer leak' },
        sha256: 'b'.repeat(64),
        size_bytes: bytes.length,
        artifact_id: idOf(5),
      });
    const error = (await api.download(session(), path.join(dir, 'c.tgz')).catch((e: unknown) => e)) as BlueError;
    expect(error.code).toBe('DOWNLOAD_FAILED');
    expect(error.message).toContain(`the Control API recorded ${bytes.length} bytes and SHA-256 ${'b'.repeat(64)}`);
    expect(storageSeen[0]).toMatchObject({ 'x-extra': '1' });
    expect(storageSeen[0]!.authorization).toBeUndefined();
  });

  it(
    'refuses an answer whose digest differs from the listing for the same artifact, but takes a newer artifact as ' +
      'it says',
    async () => {
      handle = (_req, res) =>
        json(res, 200, {
          download_url: `${storageOrigin}/obj`,
          sha256: 'b'.repeat(64),
          size_bytes: bytes.length,
          artifact_id: idOf(5),
        });
      await expect(
        api.download(session({ sha256: digest, artifact_id: idOf(5) }), path.join(dir, 'd.tgz')),
      ).rejects.toMatchObject({ message: expect.stringContaining('sha256 differs from the session record') });
      handle = (_req, res) =>
        json(res, 200, {
          download_url: `${storageOrigin}/obj`,
          sha256: digest,
          size_bytes: bytes.length,
          artifact_id: idOf(6),
        });
      expect(
        (
          await api.download(
            session({ sha256: 'c'.repeat(64), size_bytes: 3, artifact_id: idOf(5) }),
            path.join(dir, 'e.tgz'),
          )
        ).sha256,
      ).toBe(digest);
    },
  );

  it('refuses a download URL with credentials or another scheme, and a 410 is SESSION_EXPIRED', async () => {
    for (const url of ['ftp://files.example/obj', 'http://u:p@127.0.0.1:1/obj']) {
      handle = (_req, res) => json(res, 200, { download_url: url });
      await expect(api.download(session(), path.join(dir, 'f.tgz'))).rejects.toMatchObject({
        code: 'UPLOAD_FAILED',
        message: expect.stringContaining('download_url'),
      });
    }
    handle = (_req, res) => json(res, 410, { error: 'session artifact has expired' });
    await expect(api.download(session(), path.join(dir, 'g.tgz'))).rejects.toMatchObject({ code: 'SESSION_EXPIRED' });
    expect(storageSeen).toHaveLength(0);
  });
});

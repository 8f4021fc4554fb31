/**
 * `GET /governance-config/events`: the current revision at once, each published one after it (whoever published it:
 * this server, another replica on the same database, or the admin CLI's store), keepalives between, and the limits
 * that keep a server with thousands of listening agents healthy.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createControlServer } from '../src/server.js';
import { openStore } from '../src/store/index.js';
import { createLocalBlobStore } from '../src/blobs/local.js';
import { BACKENDS, startTestServer, type TestServer } from '../../../test/support/control-server.js';
import { nextEvent, openEventStream, type OpenStream } from '../../../test/support/event-stream.js';

const EVENTS = '/governance-config/events';

describe.each(BACKENDS)('governance revision events (%s)', (backend) => {
  let t: TestServer | undefined;
  const streams: OpenStream[] = [];
  const open = async (token: string | undefined) => {
    const stream = await openEventStream(`${t!.url}${EVENTS}`, token);
    streams.push(stream);
    return stream;
  };
  afterEach(async () => {
    for (const stream of streams.splice(0)) stream.close();
    await t?.close();
    t = undefined;
  });

  it('sends the current revision at once, then every revision published, once each and in order', async () => {
    t = await startTestServer({ backend, events: { pollMs: 50 } });
    const first = await t.server.store.publishPolicy({ allowed_harnesses: ['claude'] }, t.clock.now());
    const stream = await open(t.alice.token);
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(stream.headers['cache-control']).toBe('no-store');
    expect(await nextEvent(stream)).toEqual({
      kind: 'event',
      event: 'revision',
      id: first.revision,
      data: JSON.stringify({ revision: first.revision }),
    });

    const published: string[] = [];
    for (const harnesses of [['codex'], ['kimi'], ['opencode']]) {
      published.push((await t.server.store.publishPolicy({ allowed_harnesses: harnesses }, t.clock.now())).revision);
      const event = await nextEvent(stream);
      expect(event?.id).toBe(published.at(-1));
      expect(JSON.parse(event!.data!)).toEqual({ revision: published.at(-1) });
    }
    // Nothing more: no revision is sent twice.
    await expect(nextEvent(stream, 300)).rejects.toThrow(/no event/);
  });

  it('tells a stream about a revision published through another server on the same database', async () => {
    t = await startTestServer({ backend, events: { pollMs: 50 } });
    await t.server.store.publishPolicy({ allowed_harnesses: ['claude'] }, t.clock.now());
    // A second replica: its own process state, the same database.
    const replica = createControlServer({
      store: await openStore(t.storeOptions),
      blobs: (publicUrl) => createLocalBlobStore({ dir: t!.blobDir, publicUrl, secret: 'x'.repeat(32) }),
      events: { pollMs: 50 },
    });
    const { url } = await replica.listen('127.0.0.1', 0);
    try {
      const stream = await openEventStream(`${url}${EVENTS}`, t.bob.token);
      streams.push(stream);
      await nextEvent(stream);
      // Published as `control-plane policy publish` does: its own connection to the database.
      const admin = await openStore(t.storeOptions);
      const next = await admin.publishPolicy({ allowed_harnesses: ['codex'] }, t.clock.now());
      await admin.close();
      expect((await nextEvent(stream))?.id).toBe(next.revision);
    } finally {
      await replica.close();
    }
  });

  it('waits for the first revision when none is published yet', async () => {
    t = await startTestServer({ backend, events: { pollMs: 50 } });
    const stream = await open(t.alice.token);
    expect(stream.status).toBe(200);
    await expect(nextEvent(stream, 200)).rejects.toThrow(/no event/);
    const first = await t.server.store.publishPolicy({ allowed_harnesses: ['claude'] }, t.clock.now());
    expect((await nextEvent(stream))?.id).toBe(first.revision);
  });

  it('sends a keepalive comment between events', async () => {
    t = await startTestServer({ backend, events: { pollMs: 50, keepaliveMs: 100 } });
    await t.server.store.publishPolicy({ allowed_harnesses: ['claude'] }, t.clock.now());
    const stream = await open(t.alice.token);
    await nextEvent(stream);
    expect(await stream.next()).toEqual({ kind: 'comment', comment: 'keepalive' });
    expect(await stream.next()).toEqual({ kind: 'comment', comment: 'keepalive' });
  });

  it('needs a valid bearer token', async () => {
    t = await startTestServer({ backend });
    const none = await open(undefined);
    expect(none.status).toBe(401);
    expect(JSON.parse(none.body)).toMatchObject({ code: 'unauthenticated' });
    const wrong = await open('not-a-token');
    expect(wrong.status).toBe(401);
    expect(JSON.parse(wrong.body)).toMatchObject({ code: 'invalid_token' });
    expect((await t.call('POST', EVENTS, t.alice.token)).status).toBe(405);
  });

  it('holds at most maxStreams open, answers more with 503 and Retry-After, has room once one closes', async () => {
    t = await startTestServer({ backend, events: { pollMs: 50, maxStreams: 2 } });
    await t.server.store.publishPolicy({ allowed_harnesses: ['claude'] }, t.clock.now());
    const a = await open(t.alice.token);
    const b = await open(t.bob.token);
    await nextEvent(a);
    await nextEvent(b);
    const refused = await open(t.carol.token);
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('30');
    expect(JSON.parse(refused.body)).toMatchObject({ code: 'too_many_streams' });
    a.close();
    await expect.poll(async () => (await open(t!.carol.token)).status, { timeout: 5000 }).toBe(200);
  });

  it('ends a stream after its lifetime so that the client reconnects and is authenticated again', async () => {
    t = await startTestServer({ backend, events: { pollMs: 50, maxLifetimeMs: 300 } });
    await t.server.store.publishPolicy({ allowed_harnesses: ['claude'] }, t.clock.now());
    const stream = await open(t.alice.token);
    await nextEvent(stream);
    const started = Date.now();
    await stream.ended;
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('ends every stream when the server closes', async () => {
    t = await startTestServer({ backend, events: { pollMs: 50 } });
    await t.server.store.publishPolicy({ allowed_harnesses: ['claude'] }, t.clock.now());
    const stream = await open(t.alice.token);
    await nextEvent(stream);
    await t.close();
    t = undefined;
    await stream.ended;
  });
});

/**
 * A session page's address by the start of an id that several sessions share, on both databases: a page that lists
 * them (409), each linked, only among the sessions the person may see. Session ids are random, and two sharing their
 * first 8 characters are too rare to wait for: this file has the store mint ids that all start alike (the rest of
 * each id stays random, so ids stay unique). test/web/dashboard.test.ts covers the other addresses.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  BACKENDS,
  startTestServer,
  type TestServer,
  type TestUser,
} from '../../../../../test/support/control-server.js';
import { conversationBundle } from '../../../../../test/support/conversation-bundle.js';

const SHARED = '5eed5eed';
vi.mock('node:crypto', async (original) => {
  const real = await original<typeof import('node:crypto')>();
  return { ...real, randomUUID: () => `${SHARED}${real.randomUUID().slice(8)}` as ReturnType<typeof real.randomUUID> };
});

let work: string;
beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'blue-session-prefix-'));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe.each(BACKENDS)('a session page by an id prefix several sessions share (%s)', (backend) => {
  let t: TestServer;
  afterEach(async () => {
    await t?.close();
  });

  async function upload(user: TestUser, sessionId: string, title: string): Promise<string> {
    const bytes = await conversationBundle(work, {
      sessionId,
      title,
      cwd: '/home/dev/project',
      turns: ['One.', 'Two.'],
    });
    const done = await t.upload(user, bytes, { session_id: sessionId, title, cwd: '/home/dev/project' });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    return done.sessionId;
  }

  async function page(user: TestUser, route: string) {
    const secret = await t.server.store.identity.createSignInLink(user.id, t.clock.now(), 60_000);
    const signed = await fetch(`${t.url}/auth/link`, {
      method: 'POST',
      redirect: 'manual',
      headers: { origin: t.url, 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${secret}`,
    });
    const cookie = signed.headers.get('set-cookie')!.split(';')[0]!;
    const response = await fetch(`${t.url}${route}`, { redirect: 'manual', headers: { cookie } });
    return { status: response.status, text: await response.text(), location: response.headers.get('location') };
  }

  it('lists the sessions the prefix names, for the person to choose; a longer prefix leads to one', async () => {
    t = await startTestServer({ backend });
    const first = await upload(t.alice, 'sess-one', 'The first <one>');
    const second = await upload(t.alice, 'sess-two', 'The second one');
    await upload(t.bob, 'sess-bobs', 'Not for alice');
    expect([first.slice(0, 8), second.slice(0, 8)]).toEqual([SHARED, SHARED]);

    const both = await page(t.alice, `/sessions/${SHARED}`);
    expect(both.status).toBe(409);
    expect(both.text).toContain(`<h1>Several sessions start with ${SHARED}</h1>`);
    expect(both.text).toContain(`<a class="title clamp" href="/sessions/${first}">The first &lt;one></a>`);
    expect(both.text).toContain(`<a class="title clamp" href="/sessions/${second}">The second one</a>`);
    // Bob's session starts alike, but is not Alice's to see.
    expect(both.text).not.toContain('Not for alice');

    const longer = await page(t.alice, `/sessions/${first.slice(0, 23)}`);
    expect([longer.status, longer.location]).toEqual([303, `/sessions/${first}`]);
  });
});

/**
 * The Sessions dashboard over HTTP, on both databases: the list (search with snippets, facets with counts, filters,
 * paging), a session's page (metadata, revisions, the resume command, the transcript escaped and masked, long text
 * behind "Show more", tool output collapsed), sharing and deleting through its forms, downloads, what members may
 * not reach, administrators' search snippets of others' sessions in the audit log, the administrators' pages
 * (machines, paged; users and tokens, the audit log, policy publish with a diff), and every text on them with its
 * control and bidirectional characters escaped. test/e2e/dashboard.test.ts clicks through the same pages in Chromium.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  BACKENDS,
  startReplica,
  startTestServer,
  type TestServer,
  type TestUser,
} from '../../../../test/support/control-server.js';
import { conversationBundle } from '../../../../test/support/conversation-bundle.js';

const CWD = '/home/dev/project';
let work: string;
beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'blue-dashboard-'));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe.each(BACKENDS)('the Sessions dashboard (%s)', (backend) => {
  let t: TestServer;
  afterEach(async () => {
    await t?.close();
  });

  async function upload(
    user: TestUser,
    sessionId: string,
    title: string,
    turns: string[],
    extra: string[] = [],
  ): Promise<string> {
    const bytes = await conversationBundle(work, { sessionId, title, cwd: CWD, turns, extra });
    const done = await t.upload(user, bytes, {
      session_id: sessionId,
      title,
      cwd: CWD,
      artifact_format: 'blue-session-bundle-v1',
      compatibility_profile: 'claude-v2_0_12',
      resumable: true,
    });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    return done.sessionId;
  }
  /** A signed-in browser of `user` (of the server at `base`, t's unless given). */
  async function browser(user: TestUser, base = t.url) {
    const secret = await t.server.store.identity.createSignInLink(user.id, t.clock.now(), 60_000);
    const signed = await fetch(`${base}/auth/link`, {
      method: 'POST',
      redirect: 'manual',
      headers: { origin: base, 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${secret}`,
    });
    const cookie = signed.headers.get('set-cookie')!.split(';')[0]!;
    const get = async (route: string) => {
      const response = await fetch(`${base}${route}`, { redirect: 'manual', headers: { cookie } });
      return {
        status: response.status,
        text: await response.text(),
        location: response.headers.get('location'),
        headers: response.headers,
      };
    };
    const csrf = /name="csrf" value="([^"]+)"/.exec((await get('/account')).text)![1]!;
    const post = async (route: string, fields: Record<string, string>) => {
      const response = await fetch(`${base}${route}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, origin: base, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrf, ...fields }).toString(),
      });
      return { status: response.status, text: await response.text(), location: response.headers.get('location') };
    };
    return { get, post };
  }

  it('lists, searches with snippets, counts by harness, filters and pages', async () => {
    t = await startTestServer({ backend });
    const flaky = await upload(t.alice, 'sess-flaky', 'Fix the flaky test', [
      'The suite fails.',
      'Found it.',
      'Now look at the watchdog timer please.',
      'The watchdog races the uploader.',
    ]);
    t.clock.advance(60_000);
    await upload(t.alice, 'sess-docs', 'Write the release notes', ['Summarise 1.4.', 'Done.']);
    const alice = await browser(t.alice);
    const all = await alice.get('/sessions');
    expect(all.status).toBe(200);
    expect(all.text).toContain('2 sessions');
    expect(all.text).toMatch(/<option value="claude">claude \(2\)<\/option>/);
    // A word of the third turn finds the session, with the snippet.
    const found = await alice.get('/sessions?q=watchdog');
    expect(found.text).toContain('1 session<');
    expect(found.text).toContain(`href="/sessions/${flaky}"`);
    expect(found.text).toMatch(/class="snippet">[^<]*<mark>watchdog<\/mark>/);
    expect(found.text).not.toContain('Write the release notes');
    expect((await alice.get('/sessions?status=failed')).text).toContain('No sessions match.');
    expect((await alice.get('/sessions?from=2099-01-01')).text).toContain('No sessions match.');
    expect((await alice.get('/sessions?from=yesterday')).text).toContain('From must be a date');
    // Not signed in: to the sign-in page.
    expect((await fetch(`${t.url}/sessions`, { redirect: 'manual' })).headers.get('location')).toBe(
      '/sign-in?next=%2Fsessions',
    );
    // Another member sees none of it.
    expect((await (await browser(t.bob)).get('/sessions?q=watchdog')).text).toContain('No sessions match.');
  });

  it("logs an administrator's search snippets of members' sessions, as their pages are", async () => {
    t = await startTestServer({ backend });
    const alices = await upload(t.alice, 'sess-private', 'Private notes', ['The okapi budget.', 'Noted.']);
    await upload(t.admin, 'sess-admin', 'Own notes', ['An okapi of mine.', 'Mine.']);
    const reads = async () =>
      (await t.server.store.auditEvents({ limit: 100, action: 'session.read' })).map((e) => [
        e.session_id,
        e.actor_id,
        e.details,
      ]);
    const found = await (await browser(t.admin)).get('/sessions?q=okapi');
    expect(found.text).toContain('2 sessions');
    expect(found.text).toMatch(/class="snippet">[^<]*<mark>okapi<\/mark> budget/);
    expect(await reads()).toEqual([[alices, t.admin.id, { what: 'search' }]]);
    // Alice's own search, and the administrator's listing without a search, read nothing of anyone else's.
    expect((await (await browser(t.alice)).get('/sessions?q=okapi')).text).toContain('1 session<');
    expect((await (await browser(t.admin)).get('/sessions')).status).toBe(200);
    expect(await reads()).toHaveLength(1);
  });

  it("highlights a search's matches with <mark>, which no text of a session can forge", async () => {
    t = await startTestServer({ backend });
    // The session's own brackets and markup are text, even around the word searched for.
    const id = await upload(t.alice, 'sess-marks', 'Walrus notes', [
      'The [forged] walrus met a [walrus] and a <mark>fake</mark> one.',
      'Noted.',
    ]);
    await t.server.searchIdle();
    const found = await (await browser(t.alice)).get('/sessions?q=walrus');
    expect(found.text).toContain(`href="/sessions/${id}"`);
    const snippet = /<p class="snippet">([\s\S]*?)<\/p>/.exec(found.text)![1]!;
    // (PostgreSQL's passage leaves markup out, SQLite's keeps it as text.)
    expect(snippet).toContain('forged] <mark>walrus</mark> met a [<mark>walrus</mark>] and a ');
    expect(snippet.match(/<mark>/g)).toHaveLength(2);
    expect(snippet).not.toContain('<mark>fake');
    // The API and the CLI read the snippet as text, the matches between [ and ], as before.
    const listed = await t.call('GET', '/session-uploads?q=walrus', t.alice.token);
    expect(listed.body.items[0].snippet).toContain('forged] [walrus] met a [[walrus]] and a ');
  });

  it('answers a browser a page, an API client JSON, for an address that is no page or session', async () => {
    t = await startTestServer({ backend });
    const html = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };
    const page = await fetch(`${t.url}/no/such/page`, { headers: html });
    expect([page.status, page.headers.get('content-type'), page.headers.get('content-security-policy')]).toEqual([
      404,
      'text/html; charset=utf-8',
      expect.stringContaining("default-src 'none'"),
    ]);
    expect(await page.text()).toContain('<p role="alert">There is no page at /no/such/page.</p>');
    for (const accept of ['application/json', '*/*', 'application/json, text/html;q=0.5']) {
      const api = await fetch(`${t.url}/no/such/page`, { headers: { accept } });
      expect([api.status, api.headers.get('content-type')], accept).toEqual([404, 'application/json; charset=utf-8']);
      expect(await api.json()).toEqual({ error: 'no route /no/such/page', code: 'not_found' });
    }
    // A page's address with a method it does not take: a page too.
    const method = await fetch(`${t.url}/sessions`, { method: 'DELETE', headers: html });
    expect([method.status, method.headers.get('content-type')]).toEqual([405, 'text/html; charset=utf-8']);
    const alice = await browser(t.alice);
    for (const [route, said] of [
      ['/sessions/00000000-0000-4000-8000-000000000000', 'no session 00000000-0000-4000-8000-000000000000'],
      [
        '/sessions/12ab',
        '12ab is not a session id: give its full id, or its first 8 or more characters, as the list shows them.',
      ],
      ['/sessions/0123abcd', 'No session you may see has an id starting with 0123abcd.'],
    ] as const) {
      const missing = await alice.get(route);
      expect([missing.status, missing.headers.get('content-type')], route).toEqual([404, 'text/html; charset=utf-8']);
      expect(missing.text, route).toContain(`<p role="alert">${said}</p>`);
    }
  });

  it('takes the start of a session id, as the CLI does, to the one session it names', async () => {
    t = await startTestServer({ backend });
    const id = await upload(t.alice, 'sess-prefix', 'By its prefix', ['One.', 'Two.']);
    const alice = await browser(t.alice);
    for (const given of [id.slice(0, 8), id.slice(0, 13), id.slice(0, 8).toUpperCase(), id.toUpperCase()]) {
      const answer = await alice.get(`/sessions/${given}?revision=x`);
      expect([answer.status, answer.location], given).toEqual([303, `/sessions/${id}?revision=x`]);
    }
    expect((await alice.get(`/sessions/${id.slice(0, 8)}`)).location).toBe(`/sessions/${id}`);
    // Only among the sessions the person may see, as the CLI's listing.
    const bob = await browser(t.bob);
    expect((await bob.get(`/sessions/${id.slice(0, 8)}`)).status).toBe(404);
  });

  it('shows stored records with their tags, filters by tag, reads a record in the transcript viewer', async () => {
    t = await startTestServer({ backend });
    const record = Buffer.from(
      JSON.stringify({
        format: 'blue-session-record-v1',
        provider: 'notes',
        title: 'Design notes',
        tags: ['design', 'q<3'],
        content: 'We chose <b>the queue</b> design.',
      }) + '\n',
    );
    const done = await t.upload(t.alice, record, {
      harness: 'notes',
      session_id: 'note-1',
      title: 'Design notes',
      artifact_format: 'blue-session-record-v1',
      content_type: 'application/vnd.blue.session-record+json',
      tags: ['design', 'q<3'],
    });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    await upload(t.alice, 'sess-other', 'Something else', ['Hello.', 'Hi.']);
    await t.server.searchIdle();
    const alice = await browser(t.alice);
    const list = await alice.get('/sessions');
    expect(list.text).toContain('href="/sessions?tag=design">#design</a>');
    // Tags are text: escaped like everything else.
    expect(list.text).toContain('#q&lt;3');
    const byTag = await alice.get('/sessions?tag=design');
    expect(byTag.text).toContain('1 session<');
    expect(byTag.text).not.toContain('Something else');
    expect((await alice.get('/sessions?q=queue')).text).toContain(`href="/sessions/${done.sessionId}"`);
    const page = await alice.get(`/sessions/${done.sessionId}`);
    expect(page.text).toContain('<dt>Provider</dt>');
    expect(page.text).toContain('<dt>Kind</dt><dd>a stored record (not resumable)</dd>');
    expect(page.text).not.toContain('Recorded in');
    expect(page.text).toContain('#design #q&lt;3');
    // Its transcript is what the record says, escaped.
    expect(page.text).toContain('<div class="text">We chose &lt;b>the queue&lt;/b> design.</div>');
  });

  it('shows a session: metadata, revisions, the resume command, the transcript escaped, masked and cut', async () => {
    t = await startTestServer({ backend });
    const long = `${'x'.repeat(2_000)}TAIL-OF-THE-LONG-TURN`;
    const tool = JSON.stringify({
      type: 'user',
      sessionId: 'sess-show',
      cwd: CWD,
      message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'OUTPUT-OF-THE-TOOL' }] },
    });
    const lines = Array.from({ length: 40 }, (_, i) => `output line ${i + 1}`).join('\n');
    const longTool = JSON.stringify({
      type: 'user',
      sessionId: 'sess-show',
      cwd: CWD,
      message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't2', content: lines }] },
    });
    const id = await upload(
      t.alice,
      'sess-show',
      'Show <b>me</b>',
      [
        '<script>alert("turn")</script> with key sk-ant-api03-abcdefghijklmnopqrstuvwxyz',
        long,
        'Third turn.',
        'Fourth.',
      ],
      [tool, longTool],
    );
    const alice = await browser(t.alice);
    const page = await alice.get(`/sessions/${id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Show &lt;b>me&lt;/b>');
    expect(page.text).toContain(`value="blue-agent resume ${id}"`);
    expect(page.text).toContain('&lt;script>alert(&quot;turn&quot;)&lt;/script>');
    expect(page.text).not.toContain('<script>alert');
    expect(page.text).not.toContain('sk-ant-api03-abcdefghijklmnopqrstuvwxyz');
    expect(page.text).toContain('[REDACTED:ANTHROPIC_API_KEY]');
    expect(page.text).toMatch(
      /<details class="more"><summary>Show more \([\d,]+ more characters\)<\/summary>[^<]*TAIL-OF-THE-LONG-TURN/,
    );
    expect(page.text).toMatch(
      /<details class="turn tool"><summary>Tool output[^<]*<\/summary><pre>OUTPUT-OF-THE-TOOL<\/pre><\/details>/,
    );
    // Long tool output, once opened, shows its first lines; the rest is behind its own "Show more".
    expect(page.text).toMatch(
      new RegExp(
        String.raw`<pre>output line 1\n[^<]*output line 12\n<\/pre><details class="more ` +
          String.raw`output"><summary>Show more \(28 more lines\)<\/summary><pre>output line 13\n`,
      ),
    );
    // The transcript is the page's main content: first, before what is said about the session and its controls.
    const at = (marker: string) => page.text.indexOf(marker);
    expect(at('id="transcript"')).toBeGreaterThan(0);
    for (const after of ['id="revisions"', 'id="about"', 'id="resume"', 'id="sharing"', 'id="delete"'])
      expect(at('id="transcript"'), after).toBeLessThan(at(after));
    expect(page.text).toMatch(/<td>1<\/td><td>complete<\/td>/);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    // The download is the bundle, through a short-lived URL, and in the audit log.
    const download = await alice.get(`/sessions/${id}/download`);
    expect(download.status).toBe(303);
    const bytes = Buffer.from(await (await fetch(download.location!)).arrayBuffer());
    expect(bytes.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
    expect((await t.server.store.auditEvents({ limit: 10 })).map((e) => e.action)).toEqual(['session.download']);
  });

  it(
    'shares through the page: a member added sees it, a recipient gets no controls, and nobody reaches another’s ' +
      'session by URL',
    async () => {
      t = await startTestServer({ backend });
      const id = await upload(t.alice, 'sess-share', 'Parser work', ['Parse it.', 'Parsed.']);
      const alice = await browser(t.alice);
      const bob = await browser(t.bob);
      const carol = await browser(t.carol);
      expect((await bob.get(`/sessions/${id}`)).status).toBe(404);
      const picker = await alice.get(`/sessions/${id}?find=bob`);
      expect(picker.text).toContain('Share with bob@example.com');
      expect((await alice.post(`/sessions/${id}/sharing`, { action: 'add', user: t.bob.id })).location).toBe(
        `/sessions/${id}?saved=sharing#sharing`,
      );
      expect((await bob.get('/sessions')).text).toContain('shared by alice@example.com');
      const asRecipient = await bob.get(`/sessions/${id}`);
      expect(asRecipient.status).toBe(200);
      expect(asRecipient.text).toContain('Shared with you by alice@example.com');
      expect(asRecipient.text).not.toContain(`action="/sessions/${id}/sharing"`);
      expect(asRecipient.text).not.toContain(`action="/sessions/${id}/delete"`);
      expect((await bob.post(`/sessions/${id}/sharing`, { action: 'mode', mode: 'workspace' })).status).toBe(403);
      expect((await carol.get(`/sessions/${id}`)).status).toBe(404);
      // Removed again: bob no longer reaches it.
      await alice.post(`/sessions/${id}/sharing`, { action: 'remove', user: t.bob.id });
      expect((await bob.get(`/sessions/${id}`)).status).toBe(404);
      await alice.post(`/sessions/${id}/sharing`, { action: 'mode', mode: 'workspace' });
      expect((await carol.get(`/sessions/${id}`)).status).toBe(200);
      expect((await t.server.store.auditEvents({ limit: 10 })).map((e) => e.action)).toEqual([
        'session.share',
        'session.share',
        'session.share',
      ]);
    },
  );

  it('deletes through the page only when confirmed, and only for its owner or an administrator', async () => {
    t = await startTestServer({ backend });
    const id = await upload(t.alice, 'sess-del', 'To delete', ['Go.', 'Gone.']);
    await t.server.store.setSharing(id, 'workspace', []);
    const alice = await browser(t.alice);
    expect((await (await browser(t.bob)).post(`/sessions/${id}/delete`, { confirm: 'yes' })).status).toBe(403);
    expect((await alice.post(`/sessions/${id}/delete`, {})).status).toBe(400);
    expect((await alice.post(`/sessions/${id}/delete`, { confirm: 'yes' })).location).toBe('/sessions?deleted=1');
    expect((await alice.get(`/sessions/${id}`)).status).toBe(404);
  });

  it('shows each text with its control and bidirectional characters escaped, on every page that shows it', async () => {
    t = await startTestServer({ backend });
    // C0 (a bell, an escape), DEL, C1 (NEL, CSI), the marks (ALM, LRM, RLM), an embedding, an override, isolates.
    const controls = '\u0007\u001b\u007f\u0085\u009b\u061c\u200e\u200f\u202a\u202e\u2066\u2067\u2068\u2069';
    const escaped =
      '\\u0007\\u001b\\u007f\\u0085\\u009b\\u061c\\u200e\\u200f\\u202a\\u202e\\u2066\\u2067\\u2068\\u2069';
    const evil = (what: string) => `${what}\u202Egnp.exe${controls}`;
    const shown = (what: string) => `${what}\\u202egnp.exe${escaped}`;
    const raw = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
    const bytes = await conversationBundle(work, {
      sessionId: 'sess-evil',
      title: 'plain',
      cwd: CWD,
      turns: ['Hi.', 'Hello.'],
    });
    const { sessionId: id } = await t.upload(t.alice, bytes, {
      session_id: 'sess-evil',
      title: evil('title'),
      summary: evil('summary'),
      cwd: evil('/home/folder'),
      repository_remote: evil('git@example.com:repo'),
      // A tag holds no C0 control; C1 and bidirectional ones it may.
      tags: ['tag\u202ex\u0085y'],
    });
    await t.server.store.addUser(evil('mallory@example.com'), false, t.clock.now());
    const report = {
      hostname: evil('host'),
      platform: evil('os'),
      client_version: evil('1'),
      config_revision: evil('r'),
      error: evil('error'),
      harnesses: [evil('claude'), { name: evil('codex'), raw_version: evil('0.1') }],
    };
    await t.server.store.recordClientStatus(t.alice.id, 'laptop-1', report, t.clock.now());
    await t.server.store.publishPolicy({ allowed_harnesses: ['claude'] }, t.clock.now(), {
      text: `# ${evil('policy')}\nallowed_harnesses: [claude]\n`,
    });
    const admin = await browser(t.admin);
    const pages: [string, string[]][] = [
      ['/sessions', [shown('title'), 'tag\\u202ex\\u0085y']],
      [
        `/sessions/${id}`,
        [
          `<title>${shown('title')} · Blue Control</title>`,
          shown('summary'),
          shown('/home/folder'),
          shown('git@example.com:repo'),
        ],
      ],
      [`/sessions?owner=${encodeURIComponent(evil('nobody'))}`, [shown('nobody')]],
      ['/admin/clients', ['host', 'os', '1', 'r', 'error', 'claude', 'codex', '0.1'].map(shown)],
      ['/admin/users', [shown('mallory@example.com')]],
      ['/admin/policy', [shown('policy')]],
    ];
    for (const [route, texts] of pages) {
      const page = await admin.get(route);
      expect(page.status, route).toBe(200);
      expect(raw.exec(page.text)?.[0], route).toBeUndefined();
      for (const text of texts) expect(page.text, route).toContain(text);
    }
    // What the audit log keeps of a deleted session: its title.
    expect((await admin.post(`/sessions/${id}/delete`, { confirm: 'yes' })).status).toBe(303);
    const audit = await admin.get('/admin/audit');
    expect(raw.exec(audit.text)?.[0]).toBeUndefined();
    expect(audit.text).toContain('title\\u202egnp.exe');
  });

  it('publishes one policy of many reviewed against the same revision and sent at once, on two replicas', async () => {
    t = await startTestServer({ backend });
    const replica = await startReplica(t);
    try {
      const base = (await t.server.store.publishPolicy({ allowed_harnesses: ['claude'] }, t.clock.now())).revision;
      const admins = [await browser(t.admin), await browser(t.admin, replica.url)];
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          admins[i % 2]!.post('/admin/policy/publish', {
            policy: `allowed_harnesses: [claude]\nttl_seconds: ${60 + i}\n`,
            base,
          }),
        ),
      );
      expect(answers.map((a) => a.status).sort()).toEqual([303, ...Array(19).fill(409)]);
      const published = (await t.server.store.currentPolicy())!;
      expect(answers.find((a) => a.status === 303)!.location).toBe(`/admin/policy?published=${published.revision}`);
      expect(
        answers
          .filter((a) => a.status === 409)
          .every((a) => a.text.includes('Another revision was published since you reviewed the changes')),
      ).toBe(true);
    } finally {
      await replica.close();
    }
  });

  it('shows the policy as published, comments kept, reviews a new text against it and keeps that text', async () => {
    t = await startTestServer({ backend });
    const presign = `${t.url}/session-uploads/presign`;
    const published =
      `# Capture for Claude only, during the pilot.\nallowed_harnesses: [claude]  # not codex ` +
      `yet\nsession_upload:\n  presign_url: ${presign}\n`;
    await t.server.store.publishPolicy(
      { allowed_harnesses: ['claude'], session_upload: { presign_url: presign } },
      t.clock.now(),
      { text: published },
    );
    const admin = await browser(t.admin);
    const page = await admin.get('/admin/policy');
    expect(page.text).toContain(
      `<textarea id="policy" name="policy" rows="22" spellcheck="false"># Capture for Claude only, during the ` +
        `pilot.\nallowed_harnesses: [claude]  # not codex yet\n`,
    );
    expect(page.text).not.toContain('&quot;allowed_harnesses&quot;');
    // A browser sends a textarea's line breaks as CRLF: kept as typed, with LF.
    const next = published
      .replace('[claude]  # not codex yet', '[claude, codex]  # the pilot grows')
      .replace(/\n/g, '\r\n');
    const preview = await admin.post('/admin/policy/preview', { policy: next });
    expect(preview.text).toContain('<span class="del">- allowed_harnesses: [claude]  # not codex yet</span>');
    expect(preview.text).toContain('<span class="add">+ allowed_harnesses: [claude, codex]  # the pilot grows</span>');
    expect(preview.text).toContain('<span class="same">  # Capture for Claude only, during the pilot.</span>');
    const base = (await t.server.store.currentPolicy())!.revision;
    expect((await admin.post('/admin/policy/publish', { policy: next, base })).status).toBe(303);
    expect((await t.server.store.currentPolicy())!.text).toBe(next.replace(/\r\n/g, '\n'));
  });

  it('refuses a mistyped key with the key meant, when reviewing and when publishing', async () => {
    t = await startTestServer({ backend });
    const before = (await t.server.store.publishPolicy({ allowed_harnesses: ['claude'] }, t.clock.now())).revision;
    const admin = await browser(t.admin);
    const typo = `allowed_harnesses: [claude]\nsesion_upload:\n  presign_url: ${t.url}/session-uploads/presign\n`;
    for (const answer of [
      await admin.post('/admin/policy/preview', { policy: typo }),
      await admin.post('/admin/policy/publish', { policy: typo, base: before }),
    ]) {
      expect(answer.status).toBe(400);
      expect(answer.text).toContain(
        'the policy:2:1: invalid policy: / has an unknown field &quot;sesion_upload&quot; (did you mean ' +
          '&quot;session_upload&quot;?)',
      );
    }
    expect((await t.server.store.currentPolicy())!.revision).toBe(before);
  });

  it('asks for the box to be ticked before publishing a revision that stops capture on every machine', async () => {
    t = await startTestServer({ backend });
    const before = await t.server.store.publishPolicy(
      { allowed_harnesses: ['claude'], session_upload: { presign_url: `${t.url}/session-uploads/presign` } },
      t.clock.now(),
    );
    const admin = await browser(t.admin);
    const off = 'allowed_harnesses: [claude]\n';
    const preview = await admin.post('/admin/policy/preview', { policy: off });
    expect(preview.status).toBe(200);
    expect(preview.text).toContain(
      'This revision stops session capture on every machine: it drops session_upload, which the current revision ' +
        'has. Once it is published, every machine removes its capture hooks at its next reconcile, and sessions ' +
        'are no longer captured.',
    );
    expect(preview.text).toContain(
      '<input type="checkbox" name="confirm" value="yes" required/> I understand: every machine removes its ' +
        'capture hooks at its next reconcile, and sessions are no longer captured',
    );
    const unticked = await admin.post('/admin/policy/publish', { policy: off, base: before.revision });
    expect(unticked.status).toBe(400);
    expect(unticked.text).toContain('tick the box to confirm');
    expect(unticked.text).toContain('name="confirm"');
    expect((await t.server.store.currentPolicy())!.revision).toBe(before.revision);
    const ticked = await admin.post('/admin/policy/publish', { policy: off, base: before.revision, confirm: 'yes' });
    expect(ticked.status).toBe(303);
    expect((await t.server.store.currentPolicy())!.body).toEqual({
      allowed_harnesses: ['claude'],
      revision: expect.any(String),
    });
    // An ordinary change asks for nothing.
    expect(
      (await admin.post('/admin/policy/preview', { policy: 'allowed_harnesses: [claude, codex]\n' })).text,
    ).not.toContain('name="confirm"');
  });

  it('keeps an administrator when two demote each other at once, on two replicas', async () => {
    t = await startTestServer({ backend });
    const replica = await startReplica(t);
    try {
      for (let round = 0; round < 10; round++) {
        await t.server.store.setAdmin(t.bob.id, true);
        await t.server.store.setAdmin(t.admin.id, true);
        const [admin, bob] = [await browser(t.admin), await browser(t.bob, replica.url)];
        const answers = await Promise.all([
          admin.post(`/admin/users/${t.bob.id}/role`, { role: 'member' }),
          bob.post(`/admin/users/${t.admin.id}/role`, { role: 'member' }),
        ]);
        const admins = (await t.server.store.listUsers()).filter((u) => u.is_admin);
        expect(admins, `round ${round}`).toHaveLength(1);
        expect(answers.map((a) => a.status).sort(), `round ${round}`).toEqual([303, 403]);
      }
    } finally {
      await replica.close();
    }
  });

  it(
    "shows each machine's harnesses in their real state, as the machine reported it, on the page and through the " +
      'API',
    async () => {
      t = await startTestServer({ backend });
      const trust = 'Codex runs the managed Stop hook only once you trust it: open `codex`, run /hooks and trust it';
      const report = {
        instance_id: 'laptop-1',
        hostname: 'alices-laptop',
        client_version: '1.0.0',
        platform: 'linux',
        config_revision: 'r1',
        applied: false,
        files_ok: false,
        harnesses: [
          {
            name: 'codex',
            api_allowed: true,
            client_supported: true,
            installed: true,
            reconciled: true,
            raw_version: 'codex-cli 0.171.0',
            state: 'awaiting_trust',
            state_reason: trust,
          },
          {
            name: 'claude',
            api_allowed: true,
            client_supported: true,
            installed: true,
            reconciled: false,
            state: 'error',
            state_code: 'NATIVE_CONFIG_PARSE',
            compatibility_error: 'cannot parse settings.json',
          },
          {
            name: 'gemini',
            api_allowed: true,
            client_supported: true,
            installed: false,
            reconciled: true,
            state: 'not_installed',
          },
        ],
      };
      expect((await t.call('POST', '/client-status', t.alice.token, report)).status).toBe(204);
      // A client that says only what the contract names (installed, reconciled) is shown as it says.
      const contractOnly = {
        instance_id: 'laptop-2',
        hostname: 'bobs-laptop',
        client_version: '0.9.0',
        platform: 'linux',
        applied: true,
        files_ok: true,
        harnesses: [{ name: 'codex', api_allowed: true, client_supported: true, installed: true, reconciled: true }],
      };
      expect((await t.call('POST', '/client-status', t.bob.token, contractOnly)).status).toBe(204);

      const listed = await t.call('GET', '/client-status', t.admin.token);
      expect(listed.status).toBe(200);
      const alices = (listed.body.items as { instance_id: string; report: typeof report }[]).find(
        (i) => i.instance_id === 'laptop-1',
      )!;
      expect(alices.report.harnesses.map((h) => [h.name, h.state, h.state_code ?? null])).toEqual([
        ['codex', 'awaiting_trust', null],
        ['claude', 'error', 'NATIVE_CONFIG_PARSE'],
        ['gemini', 'not_installed', null],
      ]);

      const page = (await (await browser(t.admin)).get('/admin/clients')).text;
      const items = [...page.matchAll(/<li>(.*?)<\/li>/gs)].map((m) =>
        m[1]!
          .replace(/<[^>]+>/g, ' ')
          .replace(/\s+/g, ' ')
          .trim(),
      );
      expect(items).toEqual([
        'codex codex-cli 0.171.0: awaiting trust Codex runs the managed Stop hook only once you trust it: open ' +
          '`codex`, run /hooks and trust it',
        'claude: error [NATIVE_CONFIG_PARSE] cannot parse settings.json',
        'gemini: not installed',
        'codex: reconciled',
      ]);
      expect(page).not.toContain('codex-cli 0.171.0: reconciled');
    },
  );

  it('pages the machines, by person and machine, with page links that stay meaningful', async () => {
    t = await startTestServer({ backend });
    const hosts: [TestUser, number][] = [
      [t.carol, 15],
      [t.alice, 20],
      [t.bob, 20],
    ];
    for (const [user, count] of hosts) {
      for (let i = 0; i < count; i++)
        await t.server.store.recordClientStatus(
          user.id,
          `${user.email.split('@')[0]}-${String(i).padStart(2, '0')}`,
          { hostname: `host-${user.email.split('@')[0]}-${i}` },
          t.clock.now() + i,
        );
    }
    const admin = await browser(t.admin);
    const rows = (text: string) => [...text.matchAll(/<tr><td>host-([a-z]+-\d+)/g)].map((m) => m[1]);
    const first = await admin.get('/admin/clients');
    expect(first.text).toContain('55 in all');
    expect(rows(first.text)).toHaveLength(50);
    expect(rows(first.text).slice(0, 2)).toEqual(['alice-0', 'alice-1']);
    expect(first.text).toContain('Page 1 of 2');
    expect(first.text).toContain('<a href="/admin/clients?page=2" rel="next">');
    // A machine reporting again keeps its place.
    await t.server.store.recordClientStatus(t.alice.id, 'alice-00', { hostname: 'host-alice-0' }, t.clock.now() + 100);
    const second = await admin.get('/admin/clients?page=2');
    expect(rows(second.text)).toEqual(['carol-10', 'carol-11', 'carol-12', 'carol-13', 'carol-14']);
    expect(second.text).toContain('<a href="/admin/clients" rel="prev">');
    expect(second.text).not.toContain('rel="next"');
    expect((await admin.get('/admin/clients?page=9')).text).toContain('No machines on this page');
    expect(rows((await admin.get('/admin/clients?page=x')).text)).toEqual(rows(first.text));
  });

  it("gives administrators the organisation's machines, users, tokens, audit log and policy; nobody else", async () => {
    t = await startTestServer({ backend });
    await t.server.store.publishPolicy({ allowed_harnesses: ['claude'] }, t.clock.now());
    await t.call('POST', '/client-status', t.alice.token, {
      instance_id: 'laptop-1',
      hostname: 'alices-laptop',
      client_version: '1.0.0',
      platform: 'linux',
      applied: true,
      files_ok: true,
      config_revision: 'old',
      harnesses: ['claude'],
    });
    const admin = await browser(t.admin);
    const alice = await browser(t.alice);
    for (const page of ['/admin/clients', '/admin/users', '/admin/audit', '/admin/policy'])
      expect((await alice.get(page)).status, page).toBe(403);

    await t.server.store.recordClientStatus(
      t.bob.id,
      'desktop-1',
      {
        hostname: 'bobs-desktop',
        harnesses: [
          { name: 'gemini', installed: false },
          { name: 'codex', raw_version: 'codex-cli 0.1.0', installed: true, reconciled: true },
        ],
      },
      t.clock.now(),
    );
    const machines = await admin.get('/admin/clients');
    expect(machines.text).toContain('alices-laptop');
    expect(machines.text).toContain('applied, not the current revision');
    // A harness without a version is its name alone: no space before the colon.
    expect(machines.text).toContain('<li>gemini: <span>not installed</span></li>');
    expect(machines.text).toContain('<li>codex codex-cli 0.1.0: <span>reconciled</span></li>');

    const users = await admin.get('/admin/users');
    const revokeForm = new RegExp(
      String.raw`action="\/admin\/tokens\/([0-9a-f-]{36})\/revoke"[^>]*>` +
        String.raw`<input type="hidden" name="csrf" value="[^"]+"\/>` +
        '<button type="submit" class="danger" aria-label="Revoke token from users add of alice@example.com, created ',
    );
    const revoke = revokeForm.exec(users.text);
    expect(revoke).not.toBeNull();
    expect((await admin.post(`/admin/tokens/${revoke![1]}/revoke`, {})).location).toBe('/admin/users');
    expect((await t.call('GET', '/auth/me', t.alice.token)).status).toBe(401);
    expect((await admin.post(`/admin/users/${t.bob.id}/role`, { role: 'admin' })).location).toBe('/admin/users');
    expect((await t.server.store.userById(t.bob.id))?.is_admin).toBe(true);

    // Policy: review the difference, then publish; a stale review is refused.
    const current = (await t.server.store.currentPolicy())!.revision;
    const preview = await admin.post('/admin/policy/preview', { policy: 'allowed_harnesses: [claude, codex]\n' });
    expect(preview.status).toBe(200);
    expect(preview.text).toContain('<span class="add">+ allowed_harnesses: [claude, codex]</span>');
    // A policy far larger than an ordinary form field is reviewed too.
    const commented = await admin.post('/admin/policy/preview', {
      policy: `# ${'why '.repeat(20_000)}\nallowed_harnesses: [claude]\n`,
    });
    expect(commented.status).toBe(200);
    // A warning names a command as code, not between the backquotes a terminal's text carries.
    const foreign = await admin.post('/admin/policy/preview', {
      policy: 'session_upload:\n  presign_url: https://elsewhere.example/session-uploads/presign\n',
    });
    expect(foreign.text).toContain('(recorded by <code>control-plane serve</code>)');
    const refused = await admin.post('/admin/policy/preview', { policy: 'allowed_harnesses: nope\n' });
    expect([refused.status, refused.text.includes('role="alert"')]).toEqual([400, true]);
    const published = await admin.post('/admin/policy/publish', {
      policy: 'allowed_harnesses: [claude, codex]\n',
      base: current,
    });
    expect(published.location).toMatch(/^\/admin\/policy\?published=/);
    expect((await t.server.store.currentPolicy())!.body.allowed_harnesses).toEqual(['claude', 'codex']);
    expect(
      (await admin.post('/admin/policy/publish', { policy: 'allowed_harnesses: [claude]\n', base: current })).status,
    ).toBe(409);

    const id = await upload(t.carol, 'sess-audit', 'Audited', ['a', 'b']);
    await admin.get(`/sessions/${id}`);
    const audit = await admin.get('/admin/audit');
    expect(audit.text).toContain('session.read');
    expect(audit.text).toContain('admin@example.com');
  });
});

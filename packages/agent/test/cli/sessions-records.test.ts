/**
 * Session records people add, against the real reference Control API on both databases: `sessions store` (every field
 * checked and named, stored once however often it is stored), `sessions list` with --tag, --provider, --limit,
 * --offset and a total, search by tag and by what a record says, `sessions export` of a record, the four id errors,
 * and `import chatgpt-export` (streamed, idempotent by conversation id, a grown conversation a new revision).
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { bufferOutput } from '../../src/context.js';
import { BACKENDS, startTestServer, type TestServer, type TestUser } from '../../../../test/support/control-server.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';

/** A ChatGPT export conversation: a thread root -> ... with a branch the person left (not on the path to current_node).
 * */
function conversation(id: string, title: string, turns: [string, string][], created = 1_700_000_000): unknown {
  const mapping: Record<string, unknown> = { root: { id: 'root', message: null, parent: null, children: ['n0'] } };
  let parent = 'root';
  turns.forEach(([role, text], i) => {
    const node = `n${i}`;
    mapping[node] = {
      id: node,
      parent,
      children: [],
      message: {
        author: { role },
        create_time: created + i,
        content: { content_type: 'text', parts: [text] },
        metadata: {},
      },
    };
    parent = node;
  });
  // An abandoned branch from the first message: never part of the thread.
  mapping.branch = {
    id: 'branch',
    parent: 'n0',
    children: [],
    message: { author: { role: 'assistant' }, content: { content_type: 'text', parts: ['ABANDONED-BRANCH answer'] } },
  };
  return {
    id,
    conversation_id: id,
    title,
    create_time: created,
    update_time: created + turns.length,
    mapping,
    current_node: parent,
  };
}

describe.each(BACKENDS)('session records (%s)', (backend) => {
  let server: TestServer;
  let t: TestHome;
  beforeAll(async () => {
    server = await startTestServer({ backend });
    t = await makeTestHome();
  });
  afterAll(async () => {
    await server?.close();
    await t?.cleanup();
  });

  async function as(
    user: TestUser,
    argv: string[],
    input?: string,
  ): Promise<{ code: number; stdout: string; stderr: string; json: any }> {
    const stdout = bufferOutput(false);
    const stderr = bufferOutput();
    const stdin = {
      isTTY: input === undefined,
      stream: () => Readable.from(input === undefined ? [] : [Buffer.from(input)]),
      setRawMode: () => undefined,
    };
    const ctx = t.context({
      stdout,
      stderr,
      stdin,
      clock: { now: () => server.clock.now() },
      env: { BLUE_AGENT_CONTROL_URL: server.url, BLUE_AGENT_TOKEN: user.token },
    });
    const code = await main(argv, ctx);
    let json: unknown;
    try {
      json = JSON.parse(stdout.text());
    } catch {
      json = undefined;
    }
    return { code, stdout: stdout.text(), stderr: stderr.text(), json };
  }

  it('checks every field before anything is read or sent, and names it', async () => {
    const cases: [string[], string | undefined, string][] = [
      [['--provider', 'notes'], 'x', '--title is required'],
      [['--title', '  ', '--provider', 'notes'], 'x', '--title must not be blank'],
      [['--title', 'T'], 'x', '--provider is required'],
      [['--title', 'T', '--provider', ' '], 'x', '--provider must not be blank'],
      [['--title', 'T', '--provider', 'Not Valid'], 'x', '--provider "Not Valid" must be lower-case'],
      [['--title', 'T', '--provider', 'notes', '--tag', ' '], 'x', '--tag must not be blank'],
      [
        ['--title', 'T', '--provider', 'notes', '--tag', 'two words'],
        'x',
        '--tag "two words" must be 1 to 64 characters',
      ],
      [
        ['--title', 'T', '--provider', 'notes', '--provider-session-id', '  '],
        'x',
        '--provider-session-id must not be blank',
      ],
      [['--title', 'T', '--provider', 'notes'], '   \n', 'the content on stdin must not be empty'],
      [['--title', 'T', '--provider', 'notes'], undefined, 'stdin is a terminal'],
    ];
    for (const [flags, input, message] of cases) {
      const got = await as(server.alice, ['sessions', 'store', ...flags], input);
      expect(got.code, flags.join(' ')).toBe(2);
      expect(got.stderr, flags.join(' ')).toContain('[USAGE]');
      expect(got.stderr, flags.join(' ')).toContain(message);
    }
    const listed = await server.call('GET', '/session-uploads', server.alice.token);
    expect(listed.body.items).toEqual([]);
  });

  it('stores a record once, finds it by tag, provider and words, lists by position with a total, exports', async () => {
    const content = 'Decided to move the scheduler to the WOMBATQUEUE design. Next: benchmarks.';
    const stored = await as(
      server.alice,
      [
        'sessions',
        'store',
        '--title',
        'Scheduler decision',
        '--provider',
        'notes',
        '--tag',
        'design',
        '--tag',
        'q3',
        '--json',
      ],
      content,
    );
    expect(stored.code, stored.stderr).toBe(0);
    expect(stored.json).toMatchObject({ ok: true, already: false, provider: 'notes', tags: ['design', 'q3'] });
    const id = stored.json.id as string;
    // The same content again: the same session, nothing new stored.
    const again = await as(
      server.alice,
      [
        'sessions',
        'store',
        '--title',
        'Scheduler decision',
        '--provider',
        'notes',
        '--tag',
        'design',
        '--tag',
        'q3',
        '--json',
      ],
      content,
    );
    expect(again.json).toMatchObject({ id, already: true });
    for (let i = 0; i < 4; i++) {
      server.clock.advance(1_000);
      expect(
        (
          await as(
            server.alice,
            ['sessions', 'store', '--title', `Note ${i}`, '--provider', 'notes', '--provider-session-id', `note-${i}`],
            `note number ${i}`,
          )
        ).code,
      ).toBe(0);
    }
    await server.server.searchIdle();

    const byTag = await as(server.alice, ['sessions', 'list', '--tag', 'design', '--json']);
    expect(byTag.json.sessions.map((s: { id: string }) => s.id)).toEqual([id]);
    expect(byTag.json.sessions[0]).toMatchObject({
      tags: ['design', 'q3'],
      resumable: false,
      harness: 'notes',
      artifact_format: 'blue-session-record-v1',
    });
    expect(
      (await as(server.alice, ['sessions', 'list', '--q', 'wombatqueue', '--json'])).json.sessions.map(
        (s: { id: string }) => s.id,
      ),
    ).toEqual([id]);
    expect(
      (await as(server.alice, ['sessions', 'list', '--q', 'q3', '--json'])).json.sessions.map(
        (s: { id: string }) => s.id,
      ),
    ).toEqual([id]);

    const page = await as(server.alice, [
      'sessions',
      'list',
      '--provider',
      'notes',
      '--limit',
      '2',
      '--offset',
      '1',
      '--json',
    ]);
    expect(page.json).toMatchObject({ total: 5, offset: 1, limit: 2, truncated: true });
    // Newest first: note-3 is first, so the page from 1 holds note-2 and note-1.
    expect(page.json.sessions.map((s: { title: string }) => s.title)).toEqual(['Note 2', 'Note 1']);
    const text = await as(server.alice, ['sessions', 'list', '--provider', 'notes', '--limit', '2']);
    expect(text.stdout).toContain('1-2 of 5 sessions (next: --offset 2).');
    expect((await as(server.alice, ['sessions', 'list', '--tag', 'q3'])).stdout).toContain(
      'Scheduler decision #design #q3',
    );
    for (const bad of [
      ['--limit', '0'],
      ['--limit', '201'],
      ['--offset', '-1'],
      ['--tag', 'a b'],
    ]) {
      const got = await as(server.alice, ['sessions', 'list', ...bad]);
      expect(got.code, bad.join(' ')).toBe(2);
      expect(got.stderr).toContain(bad[0]!);
    }

    const md = await as(server.alice, ['sessions', 'export', id.slice(0, 8), '--format', 'markdown']);
    expect(md.code, md.stderr).toBe(0);
    expect(md.stdout.split('\n').slice(0, 5)).toEqual([
      '# Scheduler decision',
      '',
      `- **Id:** \`${id}\``,
      '- **Provider:** notes',
      '- **Tags:** `design`, `q3`',
    ]);
    expect(md.stdout).toContain('- **Resumable:** no (a stored record)\n');
    expect(md.stdout).toContain(`## Content\n\n${content}\n`);
    const json = await as(server.alice, ['sessions', 'export', id, '--format', 'json']);
    expect(JSON.parse(json.stdout)).toMatchObject({
      id,
      title: 'Scheduler decision',
      record: { format: 'blue-session-record-v1', content, tags: ['design', 'q3'] },
    });
  });

  it(
    'ids: malformed, not found and wrong kind are told apart, and a bad --format is refused before the id is ' +
      'looked up',
    async () => {
      const record = await as(
        server.alice,
        ['sessions', 'store', '--title', 'Kind test', '--provider', 'notes', '--json'],
        'nothing to resume here',
      );
      const id = record.json.id as string;
      const malformed = await as(server.alice, ['sessions', 'show', 'xyz']);
      expect(malformed.stderr).toContain('[SESSION_ID_MALFORMED]');
      const missing = await as(server.alice, ['sessions', 'show', 'ffffffff']);
      expect(missing.stderr).toContain('[SESSION_NOT_FOUND]');
      const wrongKind = await as(server.alice, ['resume', id.slice(0, 8), '--dest', t.root, '--yes', '--no-launch']);
      expect(wrongKind.stderr).toContain('[SESSION_WRONG_KIND]');
      expect(wrongKind.stderr).toContain(`blue-agent sessions export ${id.slice(0, 8)} --format markdown`);
      // The format first: a bad one is a usage error whatever the id, even one that does not exist.
      const format = await as(server.alice, ['sessions', 'export', 'not-an-id', '--format', 'pdf']);
      expect(format.code).toBe(2);
      expect(format.stderr).toContain('--format must be markdown or json');
    },
  );

  it(
    'imports a ChatGPT export: each conversation a session once, a grown one a new revision, searchable by what ' +
      'it says',
    async () => {
      const file = path.join(t.root, `conversations-${backend}.json`);
      const convs = [
        conversation('c-1', 'Trip planning', [
          ['user', 'Plan three days in KYOTOPLAN'],
          ['assistant', 'Day one: temples.'],
        ]),
        conversation('c-2', 'Regex help', [
          ['user', 'A regex for "quoted \\\\ strings" [with] {brackets}'],
          ['assistant', 'Try "([^"\\\\]|\\\\.)*"'],
        ]),
        conversation('c-3', '', [
          ['system', 'You are ChatGPT'],
          ['user', 'Untitled question about LLAMAFARM'],
        ]),
      ];
      await writeFile(file, `  ${JSON.stringify(convs, null, 1)}\n`);
      const first = await as(server.bob, ['import', 'chatgpt-export', file, '--json']);
      expect(first.code, first.stderr).toBe(0);
      expect(first.json).toMatchObject({ conversations: 3, imported: 3, unchanged: 0, failed: [] });
      const again = await as(server.bob, ['import', 'chatgpt-export', file, '--json']);
      expect(again.json).toMatchObject({ conversations: 3, imported: 0, unchanged: 3 });

      (convs[0] as { mapping: Record<string, unknown> }).mapping = (
        conversation('c-1', 'Trip planning', [
          ['user', 'Plan three days in KYOTOPLAN'],
          ['assistant', 'Day one: temples.'],
          ['user', 'And day two?'],
        ]) as { mapping: Record<string, unknown> }
      ).mapping;
      (convs[0] as { current_node: string }).current_node = 'n2';
      await writeFile(file, JSON.stringify(convs));
      const grown = await as(server.bob, ['import', 'chatgpt-export', file, '--json']);
      expect(grown.json).toMatchObject({ imported: 1, unchanged: 2 });
      await server.server.searchIdle();

      const listed = await as(server.bob, ['sessions', 'list', '--provider', 'chatgpt_export', '--json']);
      expect(listed.json.total).toBe(3);
      expect(listed.json.sessions.map((s: { title: string }) => s.title).sort()).toEqual([
        'Regex help',
        'Trip planning',
        'Untitled conversation',
      ]);
      const trip = listed.json.sessions.find((s: { title: string }) => s.title === 'Trip planning');
      const detail = await server.call('GET', `/session-uploads/${trip.id}`, server.bob.token);
      expect(detail.body.artifacts).toHaveLength(2);
      expect((await as(server.bob, ['sessions', 'list', '--q', 'llamafarm', '--json'])).json.sessions).toHaveLength(1);
      expect(
        (await as(server.bob, ['sessions', 'list', '--q', 'ABANDONED-BRANCH', '--json'])).json.sessions,
      ).toHaveLength(0);
      const md = await as(server.bob, ['sessions', 'export', trip.id, '--format', 'markdown']);
      expect(md.stdout).toContain('### User');
      expect(md.stdout).toContain('And day two?');
      expect(md.stdout).not.toContain('ABANDONED');
    },
  );

  it('refuses what is not a ChatGPT export, with the reason; a bad conversation fails alone', async () => {
    const notArray = path.join(t.root, `bad-${backend}.json`);
    await writeFile(notArray, '{"not": "an array"}');
    const refused = await as(server.bob, ['import', 'chatgpt-export', notArray]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('is not a ChatGPT conversations.json: it does not start with a JSON array');
    const cut = path.join(t.root, `cut-${backend}.json`);
    await writeFile(cut, JSON.stringify([conversation('c-9', 'Whole', [['user', 'complete one']])]).slice(0, -1));
    const cutShort = await as(server.bob, ['import', 'chatgpt-export', cut]);
    expect(cutShort.stderr).toContain('it ends before its array is closed');
    const mixed = path.join(t.root, `mixed-${backend}.json`);
    await writeFile(
      mixed,
      `[${JSON.stringify(conversation('c-10', 'Fine', [['user', 'a fine one']]))}, {"title": "no id"}]`,
    );
    const partly = await as(server.bob, ['import', 'chatgpt-export', mixed, '--json']);
    expect(partly.code).toBe(1);
    expect(partly.json).toMatchObject({
      conversations: 2,
      imported: 1,
      failed: [{ index: 1, conversation: null, reason: 'it has no conversation id' }],
    });
    const other = await as(server.bob, ['import', 'slack-export', mixed]);
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('it imports chatgpt-export');
  });
});

/**
 * `session_upload.redact: secrets` holds for everything uploaded, end to end: sessions with planted secrets — one per
 * class the redactor must know — are captured (the hook's capture, or the idle sweep's of a transcript whose last line
 * a crash cut off), drained and uploaded to a real Control API, and no planted value reaches the server's record of
 * the session (what the presign request carried), the stored bundle (its files and its manifest) or search (answers
 * and snippets). Records people store go the same way, their tags too. Without the policy, the texts beside the bundle
 * still go through the one masking rule.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCaptureHook } from '../../src/capture/hook.js';
import { main } from '../../src/cli/main.js';
import { bufferOutput, stateLayout, type Context } from '../../src/context.js';
import { drain } from '../../src/drain/index.js';
import { loadProfiles } from '@blue-agent/contract/profiles/index.js';
import { Spool } from '../../src/spool/index.js';
import { agentHome, type AgentHome } from '../../../../test/support/agent-home.js';
import { CLAUDE_PROFILE, claudeProjectKey } from '../../../../test/support/cli-process.js';
import { agentRoot } from '../../../../test/support/context.js';
import { startUploadStack, type UploadStack } from '../../../../test/support/fault-proxy.js';

const STRIPE = `sk_live_${'Rk3Lm9Qr2Tv7Wz4Yb1NcHs6J'.repeat(2)}`;
const AWS = 'q8Vt2Lw9Zr4Xn7Kp3Hs6Jd1Fg5Bm0Cy2Ua8Ee4Rx';
const SHOPIFY = 'shpat_0123456789abcdef0123456789abcdef';
const SLACK = 'xoxb-412345678901-4123456789012-Rk3Lm9Qr2Tv7Wz4Yb1NcHs6J';
const TOKEN_HEAD = 'ghp_R8d3Kq9Lm2Xv7Z';
const TOKEN_TAIL = 't4Wp6Yb1Nc5Hs0Gj3Fa8Ue';
const KEY_TOKEN = 'ghp_Z8d3Kq9Lm2Xv7Zt4Wp6Yb1Nc5Hs0Gj3Fa8Uf';
/** Ordinary credentials of low entropy. */
const LOW = ['Zq8vR2kLm9x', 'Summer2024x', 'k3y4Prod9Xz', 'Hunter2Secret'];

let t: AgentHome;
let stack: UploadStack;
let ctx: Context;

beforeEach(async () => {
  stack = await startUploadStack({ profiles: await loadProfiles(path.join(agentRoot, 'profiles')) });
  t = await agentHome();
  ctx = t.context({ env: { BLUE_AGENT_CONTROL_URL: stack.proxy.url, BLUE_AGENT_TOKEN: stack.token } });
});
afterEach(async () => {
  await stack.close();
  await t.cleanup();
});

const policy = (redact: boolean) =>
  stack.server.store.publishPolicy(
    {
      session_upload: {
        presign_url: `${stack.proxy.url}/session-uploads/presign`,
        ...(redact ? { redact: 'secrets' } : {}),
      },
    },
    Date.now(),
  );

interface Planted {
  id: string;
  /** The working folder the hook names, and its repository's remote. */
  cwd?: string;
  remote?: string;
  /** Transcript lines (records), and what is left of a last line a crash cut off. */
  records: Record<string, unknown>[];
  torn?: string;
  /** Every value that must not reach the server; a word of the conversation search finds it by. */
  secrets: string[];
  word: string;
}

/** A Claude Code session as the harness writes it, in a project folder of a clean folder; the hook may name another
 * cwd. */
async function write(p: Planted): Promise<{ transcript: string; cwd: string }> {
  const cwd = p.cwd ?? path.join(t.root, 'work');
  await mkdir(cwd, { recursive: true });
  if (p.remote !== undefined) {
    execFileSync('git', ['init', '-q', cwd]);
    execFileSync('git', ['-C', cwd, 'remote', 'add', 'origin', p.remote]);
  }
  const dir = path.join(t.home, '.claude', 'projects', claudeProjectKey(path.join(t.root, 'work')));
  await mkdir(dir, { recursive: true });
  const transcript = path.join(dir, `${p.id}.jsonl`);
  const base = { sessionId: p.id, cwd, version: '2.1.197', timestamp: '2026-11-30T10:00:00.000Z' };
  const lines = p.records.map((r, i) => JSON.stringify({ ...base, uuid: `r${i}`, ...r }));
  await writeFile(transcript, `${lines.join('\n')}\n${p.torn ?? ''}`);
  return { transcript, cwd };
}

const user = (content: unknown) => ({ type: 'user', message: { role: 'user', content } });
const assistant = (...content: unknown[]) => ({
  type: 'assistant',
  message: { role: 'assistant', id: 'msg_1', content },
});

/** One session per class of secret. */
function planted(): Planted[] {
  return [
    {
      // The last line cut off by a crash: what the idle sweep captures of a harness that died.
      id: '11111111-1111-4111-8111-111111111111',
      records: [
        user('zebratorn: where do the keys go?'),
        assistant({ type: 'text', text: `STRIPE_API_KEY=${STRIPE} is in .env, with password: "${LOW[1]}"` }),
      ],
      torn: JSON.stringify({
        type: 'assistant',
        uuid: 'cut',
        message: {
          role: 'assistant',
          content: [{ type: 'text', text: `and DB_PASSWORD=${LOW[0]} with STRIPE_API_KEY=${STRIPE} and more` }],
        },
      }).slice(0, -40),
      secrets: [STRIPE, LOW[0]!, LOW[1]!],
      word: 'zebratorn',
    },
    {
      // Title and summary (the first prompt), working folder and repository remote: the texts beside the bundle.
      id: '22222222-2222-4222-8222-222222222222',
      cwd: path.join(t.root, `PGPASSWORD=${LOW[3]}`),
      remote: `https://git.example.com/${SLACK}/repo.git`,
      records: [
        user(`deploy ${SHOPIFY} zebrameta with DB_PASSWORD=${LOW[0]} and AWS_SECRET_ACCESS_KEY=${AWS}`),
        assistant({ type: 'text', text: 'Done.' }),
      ],
      secrets: [SHOPIFY, LOW[0]!, AWS, SLACK, LOW[3]!],
      word: 'zebrameta',
    },
    {
      // One reply streamed in parts: the token split across two records' blocks.
      id: '33333333-3333-4333-8333-333333333333',
      records: [
        user('zebrasplit: set the token'),
        assistant({ type: 'text', text: `export GITHUB_TOKEN=${TOKEN_HEAD}` }),
        assistant({ type: 'text', text: `${TOKEN_TAIL} now` }),
      ],
      secrets: [TOKEN_HEAD, TOKEN_TAIL],
      word: 'zebrasplit',
    },
    {
      // A secret used as an object key.
      id: '44444444-4444-4444-8444-444444444444',
      records: [
        user('zebrakey: store it'),
        assistant({
          type: 'tool_use',
          id: 'toolu_1',
          name: 'Write',
          input: { [KEY_TOKEN]: 'the value', file_path: '/tmp/x' },
        }),
      ],
      secrets: [KEY_TOKEN],
      word: 'zebrakey',
    },
    {
      // Ordinary credentials whatever their entropy: assigned in text, and as a JSON value under a credential's key.
      id: '55555555-5555-4555-8555-555555555555',
      records: [
        user(`zebralow: connect with PGPASSWORD=${LOW[3]} and api_key=${LOW[2]}`),
        assistant(
          { type: 'text', text: `I set password: "${LOW[1]}" zebralow` },
          { type: 'tool_use', id: 'toolu_2', name: 'Login', input: { username: 'alice', password: LOW[1] } },
        ),
      ],
      secrets: [LOW[3]!, LOW[2]!, LOW[1]!],
      word: 'zebralow',
    },
  ];
}

async function api(route: string): Promise<any> {
  const response = await fetch(`${stack.directUrl}${route}`, { headers: { authorization: `Bearer ${stack.token}` } });
  expect(response.status, route).toBe(200);
  return response.json();
}

/** Captures every planted session (the torn one as the idle sweep does), drains, and waits for the search index. */
async function captureAndDrain(sessions: Planted[]): Promise<Map<string, string>> {
  const spool = await Spool.open(stateLayout(t.stateDir));
  for (const p of sessions) {
    const { transcript, cwd } = await write(p);
    const payload = {
      session_id: p.id,
      transcript_path: transcript,
      cwd,
      hook_event_name: 'SessionEnd',
      reason: 'other',
    };
    if (p.torn !== undefined) {
      await spool.enqueueIntake({
        harness: 'claude',
        profile: CLAUDE_PROFILE,
        payload,
        createdAtUnixMs: Date.now() - 60_000,
        reason: 'idle',
      });
    } else {
      const outcome = await runCaptureHook(
        ctx,
        { harness: 'claude', profile: CLAUDE_PROFILE },
        {
          stdin: Readable.from([JSON.stringify(payload)]),
          startDrain: () => undefined,
          harnessProcess: () => undefined,
        },
      );
      expect(outcome.ok, JSON.stringify(outcome)).toBe(true);
    }
  }
  const report = await drain(ctx, { settleMs: 0 });
  expect(report.uploaded, JSON.stringify(report)).toHaveLength(sessions.length);
  await stack.server.searchIdle();
  return new Map(report.uploaded.map((u) => [u.session_id, u.captured_session_id!]));
}

describe('with session_upload.redact: secrets', () => {
  it('no planted secret of any class reaches the server record, the stored bundle or search', async () => {
    await policy(true);
    const sessions = planted();
    const ids = await captureAndDrain(sessions);
    const listed = JSON.stringify(await api('/session-uploads'));
    for (const p of sessions) {
      const id = ids.get(p.id)!;
      const detail = JSON.stringify(await api(`/session-uploads/${id}`));
      const bundle = gunzipSync(await stack.download(id)).toString('utf8');
      const found = await api(`/session-uploads?q=${p.word}`);
      expect(
        found.items.map((i: { id: string }) => i.id),
        p.word,
      ).toEqual([id]);
      const searched = JSON.stringify(found);
      for (const secret of p.secrets) {
        for (const [where, text] of [
          ['list', listed],
          ['record', detail],
          ['bundle', bundle],
          ['search', searched],
        ] as const) {
          expect(text.includes(secret), `${p.word}: ${secret} in the ${where}`).toBe(false);
        }
        expect(
          (await api(`/session-uploads?q=${encodeURIComponent(secret)}`)).items,
          `${p.word}: search for ${secret}`,
        ).toEqual([]);
      }
      expect(bundle).toContain('[REDACTED:');
    }
    // The texts beside the bundle say where the secrets were.
    const meta = JSON.parse(JSON.stringify(await api(`/session-uploads/${ids.get(sessions[1]!.id)}`))) as {
      session: Record<string, unknown>;
    };
    expect(JSON.stringify(meta)).toContain('DB_PASSWORD=[REDACTED:PASSWORD]');
    expect(JSON.stringify(meta)).toContain('PGPASSWORD=[REDACTED:PASSWORD]');
  });

  it('a record people store goes through the redactor too: what it says, its title and its tags', async () => {
    await policy(true);
    const stdout = bufferOutput(false);
    const stdin = {
      isTTY: false,
      stream: () => Readable.from([Buffer.from(`zebrarecord notes: PGPASSWORD=${LOW[3]} and ${STRIPE}\n`)]),
      setRawMode: () => undefined,
    };
    const code = await main(
      [
        'sessions',
        'store',
        '--title',
        `keys api_key=${LOW[2]}`,
        '--provider',
        'notes',
        '--tag',
        `DB_PASSWORD=${LOW[0]}`,
        '--tag',
        'ops',
        '--json',
      ],
      t.context({ stdout, stdin, env: { BLUE_AGENT_CONTROL_URL: stack.proxy.url, BLUE_AGENT_TOKEN: stack.token } }),
    );
    expect(code, stdout.text()).toBe(0);
    await stack.server.searchIdle();
    const id = (JSON.parse(stdout.text()) as { id: string }).id;
    const texts = [
      JSON.stringify(await api('/session-uploads')),
      JSON.stringify(await api(`/session-uploads/${id}`)),
      gunzipOrText(await stack.download(id)),
      JSON.stringify(await api('/session-uploads?q=zebrarecord')),
      stdout.text(),
    ];
    for (const secret of [LOW[3]!, STRIPE, LOW[2]!, LOW[0]!])
      for (const text of texts) expect(text).not.toContain(secret);
    expect((await api('/session-uploads?q=zebrarecord')).items).toHaveLength(1);
    expect(JSON.parse(stdout.text())).toMatchObject({
      title: 'keys api_key=[REDACTED:SECRET]',
      tags: ['DB_PASSWORD=[REDACTED:PASSWORD]', 'ops'],
    });
  });
});

describe('without redaction', () => {
  it(
    "the texts beside the bundle still go through the one masking rule; the session itself is the user's, " +
      'unchanged',
    async () => {
      await policy(false);
      const meta = planted()[1]!;
      const ids = await captureAndDrain([meta]);
      const id = ids.get(meta.id)!;
      const record = JSON.stringify(await api(`/session-uploads/${id}`));
      for (const secret of [LOW[0]!, AWS, SLACK, LOW[3]!]) {
        expect(record, secret).not.toContain(secret);
        expect(JSON.stringify(await api('/session-uploads?q=zebrameta')), secret).not.toContain(secret);
      }
      expect(record).toContain('DB_PASSWORD=[REDACTED:PASSWORD]');
      const bundle = gunzipSync(await stack.download(id)).toString('utf8');
      expect(bundle).toContain(`DB_PASSWORD=${LOW[0]}`);
      expect(bundle).not.toContain('"redaction"');
    },
  );
});

function gunzipOrText(bytes: Buffer): string {
  return bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes).toString('utf8') : bytes.toString('utf8');
}

/**
 * The redactor: a corpus of planted secrets of every kind the policy promises to catch, each found and replaced with
 * the file still valid in its own format; JSONL judged line by line (a line a crash cut off is plain text), keys read
 * as content and kept distinct, secrets streamed in parts found across them; and a corpus of ordinary text (this
 * project's own sources, docs and the recorded sessions of every harness, as transcript lines) in which almost nothing
 * is replaced — the false-positive rate is measured and printed, and bounded.
 */
import { generateKeyPairSync } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  REDACTION_RULES,
  REDACTION_VERSION,
  redactBytes,
  redactText,
  secretsRedaction,
} from '../../src/redaction/index.js';
import { entropy } from '@blue-agent/contract/util/secrets.js';
import { repoRoot } from '../../../../test/support/context.js';

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 })
  .privateKey.export({ type: 'pkcs1', format: 'pem' })
  .toString();
const ec = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
  .privateKey.export({ type: 'sec1', format: 'pem' })
  .toString();
const pkcs8 = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

/** Each planted secret, the kind it is reported as, and the text it sits in. */
const PLANTED: { kind: string; secret: string; around: (s: string) => string }[] = [
  { kind: 'AWS_ACCESS_KEY_ID', secret: 'AKIAZ3MSJV7LQH4P2XKW', around: (s) => `the access key is ${s} for prod` },
  {
    kind: 'AWS_SECRET_ACCESS_KEY',
    secret: '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',
    around: (s) => `AWS_SECRET_ACCESS_KEY=${s}`,
  },
  {
    kind: 'PRIVATE_KEY',
    secret: rsa.trim(),
    around: (s) => JSON.stringify({ type: 'service_account', private_key: s }),
  },
  {
    kind: 'GITHUB_TOKEN',
    secret: 'ghp_R8d3Kq9Lm2Xv7Zt4Wp6Yb1Nc5Hs0Gj3Fa8Ue',
    around: (s) => `git remote set-url origin https://x:${s}@github.com/o/r`,
  },
  {
    kind: 'GITHUB_TOKEN',
    secret: `github_pat_11ABCDEFG0Rk3Lm9Qr2Tv7_a1B2c3D4e5F6g7H8i9J0ka1B2c3D4e5F6g7H8i9J0ka1B2c3D4e5F6g7H8i`,
    around: (s) => `token: ${s}`,
  },
  { kind: 'GITLAB_PERSONAL_ACCESS_TOKEN', secret: 'glpat-Xk3Lm9Qr2Tv7Wz4Yb1Nc', around: (s) => `GITLAB_TOKEN ${s}` },
  {
    kind: 'SLACK_TOKEN',
    secret: 'xoxb-412345678901-4123456789012-Rk3Lm9Qr2Tv7Wz4Yb1NcHs6J',
    around: (s) => `slack bot ${s}`,
  },
  {
    kind: 'INCOMING_WEBHOOK',
    secret: 'https://hooks.slack.com/services/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',
    around: (s) => `post to ${s} please`,
  },
  {
    kind: 'NPM_ACCESS_TOKEN',
    secret: 'npm_Rk3Lm9Qr2Tv7Wz4Yb1NcHs6JdF0gAa8Ue5Xp',
    around: (s) => `//registry.npmjs.org/:_authToken=${s}`,
  },
  {
    kind: 'OPENAI_TOKEN',
    secret:
      `sk-proj-${'Rk3Lm9Qr2Tv7Wz4Yb1Nc'.repeat(3).slice(0, 58)}T3BlbkFJ` +
      `${'Hs6JdF0gAa8Ue5Xp2Lq9'.repeat(3).slice(0, 58)}`,
    around: (s) => `OPENAI_API_KEY="${s}"`,
  },
  {
    kind: 'ANTHROPIC_API_KEY',
    secret: `sk-ant-api03-${'Rk3Lm9Qr2Tv7Wz4Yb1Nc_Hs6JdF0gAa8Ue5Xp2Lq9'.repeat(2)}Rk3Lm9Qr2Tv7-AA`,
    around: (s) => `export ANTHROPIC_API_KEY=${s}`,
  },
  { kind: 'PRIVATE_KEY', secret: rsa.trim(), around: (s) => `cat id_rsa\n${s}\n` },
  { kind: 'PRIVATE_KEY', secret: ec.trim(), around: (s) => `the EC key:\n${s}` },
  { kind: 'PRIVATE_KEY', secret: pkcs8.trim(), around: (s) => `${s}` },
  {
    kind: 'JWT',
    secret:
      'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTQyIiwiZXhwIjoxOTAwMDAwMDAwfQ.' +
      'Qk3Lm9Qr2Tv7Wz4Yb1NcHs6JdF0gAa8Ue5Xp2Lq9Zk',
    around: (s) => `session cookie ${s}`,
  },
  {
    kind: 'BEARER_TOKEN',
    secret: 'Rk3Lm9Qr2Tv7Wz4Yb1NcHs6JdF0gAa8',
    around: (s) => `curl -H 'Authorization: Bearer ${s}' https://api.example.com`,
  },
  { kind: 'BASIC_AUTH', secret: 'YWRtaW46UzNjcjN0UGFzc3cwcmQh', around: (s) => `Authorization: Basic ${s}` },
  { kind: 'PASSWORD', secret: 'S3cr3t!Passw0rd', around: (s) => `DB_PASSWORD=${s}` },
  { kind: 'PASSWORD', secret: 'hunter2-Xq7zL', around: (s) => `password: "${s}"` },
  // Ordinary credentials of low entropy, assigned to a name that says what they are.
  { kind: 'PASSWORD', secret: 'Zq8vR2kLm9x', around: (s) => `DB_PASSWORD=${s}` },
  { kind: 'PASSWORD', secret: 'Summer2024x', around: (s) => `password: "${s}"` },
  { kind: 'SECRET', secret: 'k3y4Prod9Xz', around: (s) => `api_key=${s}` },
  { kind: 'PASSWORD', secret: 'Hunter2Secret', around: (s) => `PGPASSWORD=${s} psql -h db` },
  { kind: 'SECRET', secret: 'a8f3K29dLq0Zx7Vb4Nm1Ws6Ty5Hr2Pe', around: (s) => `client_secret = '${s}'` },
  { kind: 'SECRET', secret: 'Zk4Qw8Er2Ty6Ui0Op3As7Df1Gh5Jk9Lz', around: (s) => `{"api_key": "${s}"}` },
  {
    kind: 'POSTGRE_SQL_CONNECTION',
    secret: 'postgres://app:Pg5ecret9@db.internal:5432/app',
    around: (s) => `DATABASE_URL=${s}`,
  },
  {
    kind: 'STRIPE_SECRET_KEY_LIVE',
    secret: `sk_live_${'Rk3Lm9Qr2Tv7Wz4Yb1NcHs6J'.repeat(2)}`,
    around: (s) => `stripe key ${s}`,
  },
];

/** A transcript line as harnesses write them: the secret inside a string value, beside numbers and nesting. */
function line(text: string, n: number): string {
  return JSON.stringify({
    type: 'user',
    uuid: `u${n}`,
    big: 0,
    message: { role: 'user', content: [{ type: 'text', text }] },
  }).replace('"big":0', '"big":12345678901234567890');
}

describe('planted secrets of every kind', () => {
  it('are each found and replaced; every line still parses, and every other byte is kept', async () => {
    const lines = PLANTED.map((p, i) => line(p.around(p.secret), i));
    const text = `${lines.join('\n')}\n`;
    const out = await redactText(text);
    const redacted = out.text.split('\n');
    expect(redacted).toHaveLength(lines.length + 1);
    PLANTED.forEach((p, i) => {
      const l = redacted[i]!;
      // The secret is gone, whole or in part: no line keeps more than a few characters of it.
      for (const piece of p.secret.match(/.{12}/gs) ?? [])
        expect(l, `${p.kind}: ${l}`).not.toContain(JSON.stringify(piece).slice(1, -1));
      expect(l, p.kind).toContain('[REDACTED:');
      // Still JSON, and the number too big for a double is exactly as it was (nothing re-encoded but the string).
      expect(() => JSON.parse(l)).not.toThrow();
      expect(l.startsWith(`{"type":"user","uuid":"u${i}","big":12345678901234567890,`)).toBe(true);
    });
    // Each is named by its kind.
    for (const [i, p] of PLANTED.entries()) expect(redacted[i], p.kind).toContain(`[REDACTED:${p.kind}]`);
    expect(out.replaced).toBeGreaterThanOrEqual(PLANTED.length);
  });

  it(
    'JSON keys are content too, and stay distinct; plain text is redacted as a whole; bytes that are not UTF-8 ' +
      'text are left alone',
    async () => {
      const json = `{"ghp_R8d3Kq9Lm2Xv7Zt4Wp6Yb1Nc5Hs0Gj3Fa8Ue": 1, "v": "ghp_R8d3Kq9Lm2Xv7Zt4Wp6Yb1Nc5Hs0Gj3Fa8Ue"}`;
      expect((await redactText(json)).text).toBe(`{"[REDACTED:GITHUB_TOKEN]": 1, "v": "[REDACTED:GITHUB_TOKEN]"}`);
      // Two secrets as keys of one object stay two keys (a reader keeps only the last of equal keys).
      const two =
        '{"ghp_R8d3Kq9Lm2Xv7Zt4Wp6Yb1Nc5Hs0Gj3Fa8Ue":1,"ghp_Z8d3Kq9Lm2Xv7Zt4Wp6Yb1Nc5Hs0Gj3Fa8Uf":2,' +
        '"[REDACTED:GITHUB_TOKEN] (2)":3,"n":{"ghp_R8d3Kq9Lm2Xv7Zt4Wp6Yb1Nc5Hs0Gj3Fa8Ue":4}}';
      const out = JSON.parse((await redactText(two)).text) as Record<string, unknown>;
      expect(out).toEqual({
        '[REDACTED:GITHUB_TOKEN]': 1,
        '[REDACTED:GITHUB_TOKEN] (3)': 2,
        '[REDACTED:GITHUB_TOKEN] (2)': 3,
        n: { '[REDACTED:GITHUB_TOKEN]': 4 },
      });
      expect((await redactText('plan:\n  token ghp_R8d3Kq9Lm2Xv7Zt4Wp6Yb1Nc5Hs0Gj3Fa8Ue\n')).text).toBe(
        'plan:\n  token [REDACTED:GITHUB_TOKEN]\n',
      );
      const binary = Buffer.concat([Buffer.from('ghp_R8d3Kq9Lm2Xv7Zt4Wp6Yb1Nc5Hs0Gj3Fa8Ue'), Buffer.from([0, 1, 2])]);
      expect((await redactBytes(binary)).bytes).toBe(binary);
      const latin1 = Buffer.from([0x67, 0x68, 0x70, 0x5f, 0xff, 0xfe]);
      expect(await redactBytes(latin1)).toEqual({ bytes: latin1, replaced: 0 });
      const clean = Buffer.from('{"a":"nothing secret here"}\n');
      expect((await redactBytes(clean)).bytes).toBe(clean);
    },
  );

  it('judges JSONL line by line: a line cut off by a crash is redacted as plain text, the others as JSON', async () => {
    const stripe = `sk_live_${'Rk3Lm9Qr2Tv7Wz4Yb1NcHs6J'.repeat(2)}`;
    // Quotes inside a string are escaped in the line (`password: \"...\"`): only a JSON reading sees the value.
    const whole = [
      line(`STRIPE_API_KEY=${stripe} is in .env`, 0),
      line('DB_PASSWORD=Zq8vR2kLm9x and password: "Summer2024x"', 1),
    ];
    const torn = line(`export STRIPE_API_KEY=${stripe}\nDB_PASSWORD=Zq8vR2kLm9x\nthen`, 2).slice(0, -12);
    const out = await redactText(`${whole.join('\n')}\n${torn}`);
    for (const secret of [stripe, 'Zq8vR2kLm9x', 'Summer2024x']) expect(out.text).not.toContain(secret);
    const lines = out.text.split('\n');
    expect(lines).toHaveLength(3);
    // The lines that parsed still parse, with only their strings changed; the torn one is still cut where it was.
    expect((JSON.parse(lines[0]!) as { message: { content: { text: string }[] } }).message.content[0]!.text).toBe(
      'STRIPE_API_KEY=[REDACTED:STRIPE_SECRET_KEY_LIVE] is in .env',
    );
    expect((JSON.parse(lines[1]!) as { message: { content: { text: string }[] } }).message.content[0]!.text).toBe(
      'DB_PASSWORD=[REDACTED:PASSWORD] and password: "[REDACTED:PASSWORD]"',
    );
    expect(lines[2]!.startsWith('{"type":"user","uuid":"u2"')).toBe(true);
    expect(() => JSON.parse(lines[2]!)).toThrow();
  });

  it(
    "finds a secret streamed in parts: consecutive records' deltas, the blocks of one message, a tool call's " +
      'argument deltas',
    async () => {
      const token = 'ghp_R8d3Kq9Lm2Xv7Zt4Wp6Yb1Nc5Hs0Gj3Fa8Ue';
      const said = `run GITHUB_TOKEN=${token} and PGPASSWORD=Hunter2Secret psql, with this key:\n${rsa.trim()}\ndone`;
      const parts = said.match(/[\s\S]{1,5}/g)!;
      const deltas = parts.map((text, i) =>
        JSON.stringify({
          type: 'context.append_loop_event',
          time: i,
          event: { type: 'content.part', part: { type: 'text', text } },
        }),
      );
      const blocks = JSON.stringify({
        type: 'assistant',
        message: { content: said.match(/[\s\S]{1,700}/g)!.map((text) => ({ type: 'text', text })) },
      });
      const args = JSON.stringify({ username: 'alice', password: 'Summer2024x' })
        .match(/.{1,4}/g)!
        .map((delta) => JSON.stringify({ type: 'response.function_call_arguments.delta', delta }));
      const out = await redactText([...deltas, blocks, ...args].join('\n'));
      const records = out.text.split('\n').map(
        (l) =>
          JSON.parse(l) as {
            event?: { part: { text: string } };
            message?: { content: { text: string }[] };
            delta?: string;
          },
      );
      const streamed = records.flatMap((r) => (r.event === undefined ? [] : [r.event.part.text])).join('');
      const message = records.flatMap((r) => r.message?.content.map((b) => b.text) ?? []).join('');
      const called = records.flatMap((r) => (r.delta === undefined ? [] : [r.delta])).join('');
      for (const joined of [streamed, message]) {
        for (const secret of [token, 'Hunter2Secret', ...(rsa.match(/[A-Za-z0-9+/]{12}/g) ?? [])])
          expect(joined).not.toContain(secret);
        expect(joined).toContain('run GITHUB_TOKEN=[REDACTED:');
        expect(joined).toContain('psql, with this key:');
      }
      expect(called).not.toContain('Summer2024x');
      expect(called).toContain('"username":"alice"');
    },
  );

  it(
    'joins only what may be one message: items of a list of strings stand alone, and a whole token ending one ' +
      'value leaves the next alone',
    async () => {
      const tags = JSON.stringify({ tags: ['DB_PASSWORD=Zq8vR2kLm9x', 'ops'] });
      expect(JSON.parse((await redactText(tags)).text)).toEqual({ tags: ['DB_PASSWORD=[REDACTED:PASSWORD]', 'ops'] });
      const stripe = `sk_live_${'Rk3Lm9Qr2Tv7Wz4Yb1NcHs6J'.repeat(2)}`;
      const replies = [`the key is ${stripe}`, 'Thanks, rotating it now']
        .map((text) => JSON.stringify({ message: { text } }))
        .join('\n');
      const out = (await redactText(replies)).text
        .split('\n')
        .map((l) => (JSON.parse(l) as { message: { text: string } }).message.text);
      expect(out).toEqual(['the key is [REDACTED:STRIPE_SECRET_KEY_LIVE]', 'Thanks, rotating it now']);
    },
  );

  it('judges a value under a key that names a credential as assigned to it, whatever its entropy', async () => {
    const out = await redactText(
      JSON.stringify({
        username: 'alice',
        password: 'Summer2024x',
        db: { PGPASSWORD: 'Hunter2Secret', api_key: 'k3y4Prod9Xz' },
      }) + '\n',
    );
    expect(JSON.parse(out.text)).toEqual({
      username: 'alice',
      password: '[REDACTED:PASSWORD]',
      db: { PGPASSWORD: '[REDACTED:PASSWORD]', api_key: '[REDACTED:SECRET]' },
    });
    const names = JSON.stringify({
      password: 'hashedPassword',
      api_key: 'process.env.API_KEY',
      secret: '<your secret>',
      password_hint: 'Summer2024x',
    });
    expect((await redactText(names)).replaced).toBe(0);
  });

  it('leaves what names a credential, not holding one; a secretlint-disable comment switches nothing off', async () => {
    const names = [
      'password: string',
      'password = process.env.DB_PASSWORD',
      'api_key=${API_KEY}',
      'token: credentials.refresh_token',
      'secret: <your secret>',
      'PASSWORD=changeme',
      'password = getPassword()',
      'password: hashedPassword',
    ];
    for (const text of names) expect((await redactText(text)).replaced, text).toBe(0);
    expect((await redactText('// secretlint-disable\nghp_R8d3Kq9Lm2Xv7Zt4Wp6Yb1Nc5Hs0Gj3Fa8Ue')).replaced).toBe(1);
  });

  it("names its rule set and version for the manifest, and reads a manifest's text as plain text", async () => {
    expect(secretsRedaction()).toMatchObject({ rules: REDACTION_RULES, version: REDACTION_VERSION });
    expect(await secretsRedaction().redactText('{"title": "DB_PASSWORD=Zq8vR2kLm9x"}')).toEqual({
      text: '{"title": "DB_PASSWORD=[REDACTED:PASSWORD]"}',
      replaced: 1,
      kinds: ['PASSWORD'],
    });
    expect(entropy('aaaa')).toBe(0);
    expect(entropy('abcd')).toBe(2);
  });
});

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) walk(file, out);
    else out.push(file);
  }
  return out;
}

describe('ordinary transcripts', () => {
  it('are left almost untouched: the false-positive rate is measured and stays under 1 in 10,000 lines', async () => {
    const root = repoRoot;
    // Sources (code full of words like token, password, secret and key), docs, and every harness's recorded sessions.
    const files = [
      // Not the rules' own sources, full of the very patterns they look for.
      ...['contract', 'agent', 'control-api']
        .flatMap((pkg) => walk(path.join(root, 'packages', pkg, 'src')))
        .filter(
          (f) =>
            !f.includes(`${path.sep}generated${path.sep}`) &&
            !f.includes(`${path.sep}redaction${path.sep}`) &&
            !f.endsWith(`${path.sep}util${path.sep}secrets.ts`),
        ),
      ...walk(path.join(root, 'docs')),
      path.join(root, 'README.md'),
      path.join(root, 'ARCHITECTURE.md'),
      ...walk(path.join(root, 'fixtures', 'sessions')),
    ].filter((f) => /\.(ts|tsx|md|json|jsonl|yaml|txt|css)$/.test(f));
    let lines = 0;
    let replaced = 0;
    const found: string[] = [];
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      // Recorded sessions as they are; other files as a harness records a file it read: one string per line.
      const transcript =
        file.endsWith('.jsonl') || file.endsWith('.json')
          ? text
          : text
              .split('\n')
              .map((l) => JSON.stringify({ type: 'tool_result', content: l }))
              .join('\n');
      lines += transcript.split('\n').length;
      const out = await redactText(transcript);
      replaced += out.replaced;
      if (out.replaced > 0) found.push(`${path.relative(root, file)}: ${out.kinds.join(', ')}`);
    }
    const perTenThousand = (replaced / lines) * 10_000;
    console.log(
      `redaction false positives: ${replaced} in ${lines} lines of ${files.length} files (` +
        `${perTenThousand.toFixed(2)} per 10,000 lines)${found.length > 0 ? `\n  ${found.join('\n  ')}` : ''}`,
    );
    expect(lines).toBeGreaterThan(30_000);
    expect(perTenThousand, found.join('\n')).toBeLessThan(1);
  });
});

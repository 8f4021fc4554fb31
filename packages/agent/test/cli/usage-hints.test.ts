/**
 * Every usage error says what to do next: bad command lines of every kind (commander's parse errors and the checks
 * commands make themselves) are reported as USAGE, exit 2, with a hint.
 */
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';

let home: TestHome;
beforeEach(async () => {
  home = await makeTestHome();
});
afterEach(async () => {
  await home.cleanup();
});

const BAD: string[][] = [
  ['bogus'],
  ['reconcile', '--bogus'],
  ['control-plane'],
  ['control-plane', 'users', 'add'],
  ['control-plane', 'users', 'add', 'not-an-email', '--data', '{home}/control'],
  ['control-plane', 'serve', '--listen', 'nowhere'],
  [
    'control-plane',
    'serve',
    '--listen',
    '127.0.0.1:0',
    '--public-url',
    'ftp://control.example.com/x',
    '--data',
    '{home}/control',
  ],
  ['control-plane', 'serve', '--listen', '127.0.0.1:0', '--retention-days', '-1', '--data', '{home}/control'],
  ['control-plane', 'serve', '--blob-store', 'floppy'],
  ['control-plane', 'serve', '--listen', '127.0.0.1:0', '--gc-interval', 'often', '--data', '{home}/control'],
  [
    'control-plane',
    'serve',
    '--listen',
    '127.0.0.1:0',
    '--oidc-issuer',
    'http://idp.example.com',
    '--oidc-client-id',
    'x',
    '--data',
    '{home}/control',
  ],
  ['control-plane', 'serve', '--listen', '127.0.0.1:0', '--oidc-client-id', 'x', '--data', '{home}/control'],
  [
    'control-plane',
    'serve',
    '--listen',
    '127.0.0.1:0',
    '--oidc-issuer',
    'https://idp.example.com',
    '--oidc-client-id',
    'x',
    '--data',
    '{home}/control',
  ],
  [
    'control-plane',
    'serve',
    '--listen',
    '127.0.0.1:0',
    '--oidc-issuer',
    'https://idp.example.com',
    '--data',
    '{home}/control',
  ],
  ['control-plane', 'policy', 'publish', 'policy.yaml', '--data', '{home}/nowhere'],
  ['control-plane', 'policy', 'show', '--data', '{home}/nowhere'],
  ['control-plane', 'gc', '--data', '{home}/nowhere'],
  ['control-plane', 'reindex', '--data', '{home}/nowhere'],
  ['login'],
  ['login', '--control-url', 'http://127.0.0.1:9', '--offline'],
  ['login', '--control-url', 'ftp://example.com', '--token-stdin'],
  ['sessions', 'share', 'abc'],
  ['sessions', 'show'],
  ['resume', '--bogus'],
  ['bundle', 'create', '--harness', 'vim', '--session', 's'],
  ['service', 'frobnicate'],
];

describe('usage errors', () => {
  it.each(BAD.map((argv) => [argv.join(' '), argv] as const))('%s: USAGE, exit 2, with a hint', async (_name, argv) => {
    const args = [...argv.map((a) => a.replace('{home}', home.root)), '--json'];
    const before = home.stdout.text().length;
    const code = await main(args, home.ctx);
    const out = home.stdout.text().slice(before);
    expect(code, out).toBe(2);
    const answer = JSON.parse(out) as { ok: boolean; error: { code: string; message: string; hint?: string } };
    expect(answer.ok).toBe(false);
    expect(answer.error.code).toBe('USAGE');
    expect(answer.error.hint, answer.error.message).toEqual(expect.stringMatching(/\S/));
  });

  it('the data directory given is never created by a refused command', async () => {
    await main(
      [
        'control-plane',
        'serve',
        '--listen',
        '127.0.0.1:0',
        '--retention-days',
        '0',
        '--data',
        path.join(home.root, 'control'),
      ],
      home.ctx,
    );
    const { existsSync } = await import('node:fs');
    expect(existsSync(path.join(home.root, 'control'))).toBe(false);
  });
});

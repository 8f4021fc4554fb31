/**
 * The one set of secret rules: what `maskSecrets` masks in titles, previews, folders, remotes, tags and search text,
 * and what the redactor adds secretlint's preset to.
 */
import { describe, expect, it } from 'vitest';
import { credentialValue, entropy, maskSecrets, mergeFindings } from '../../src/util/secrets.js';

describe('maskSecrets', () => {
  const cases: [string, string, string][] = [
    ['OpenAI key', 'use sk-proj-AbCdEf0123456789AbCdEf0123 for the call', 'use [REDACTED:OPENAI_TOKEN] for the call'],
    ['Anthropic key', 'key sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe', 'key [REDACTED:ANTHROPIC_API_KEY]'],
    ['GitHub token', 'token ghp_1234567890abcdefghijABCDEFGHIJ123456 here', 'token [REDACTED:GITHUB_TOKEN] here'],
    ['GitHub PAT', 'github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv', '[REDACTED:GITHUB_TOKEN]'],
    ['AWS key id', 'aws AKIAIOSFODNN7EXAMPLE done', 'aws [REDACTED:AWS_ACCESS_KEY_ID] done'],
    ['Slack token', 'slack xoxb-1234567890-0987654321-AbCdEfGhIjKl', 'slack [REDACTED:SLACK_TOKEN]'],
    [
      'bearer token',
      'curl -H "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9abc123def456"',
      'curl -H "Authorization: Bearer [REDACTED:BEARER_TOKEN]"',
    ],
    [
      'URL password',
      'clone https://alice:s3cr3t-pass@git.example.com/repo.git',
      'clone https://alice:[REDACTED:PASSWORD]@git.example.com/repo.git',
    ],
    ['database URL', 'postgres://app:hunter2@db:5432/app', 'postgres://app:[REDACTED:PASSWORD]@db:5432/app'],
    [
      'PEM key',
      `-----BEGIN RSA PRIVATE KEY-----\n${'MIIEowIBAAKCAQEA'.repeat(4)}\n-----END RSA PRIVATE KEY----- and more`,
      '[REDACTED:PRIVATE_KEY] and more',
    ],
    ['cut PEM key', 'see -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk', 'see [REDACTED:PRIVATE_KEY]'],
    [
      'assignment',
      'set password=hunter22 then api_key: "abcd1234"',
      'set password=[REDACTED:PASSWORD] then api_key: "[REDACTED:SECRET]"',
    ],
    [
      'prose-word assignment',
      'export TOKEN=abcd1234efgh and secret = s3cr3tvalue',
      'export TOKEN=[REDACTED:SECRET] and secret = [REDACTED:SECRET]',
    ],
    [
      'AWS secret key',
      'AWS_SECRET_ACCESS_KEY=q8Vt2Lw9Zr4Xn7Kp3Hs6Jd1Fg5Bm0Cy2Ua8Ee4Rx',
      'AWS_SECRET_ACCESS_KEY=[REDACTED:SECRET]',
    ],
  ];
  it.each(cases)('masks %s', (_name, input, expected) => {
    expect(maskSecrets(input)).toBe(expected);
  });

  it.each([
    ['DB_PASSWORD=Zq8vR2kLm9x', 'DB_PASSWORD=[REDACTED:PASSWORD]'],
    ['password: "Summer2024x"', 'password: "[REDACTED:PASSWORD]"'],
    ['api_key=k3y4Prod9Xz', 'api_key=[REDACTED:SECRET]'],
    ['PGPASSWORD=Hunter2Secret psql -h db', 'PGPASSWORD=[REDACTED:PASSWORD] psql -h db'],
    ["client_secret: 'Winter2023!'", "client_secret: '[REDACTED:SECRET]'"],
    ['MYSQL_PASS=letmein99', 'MYSQL_PASS=[REDACTED:PASSWORD]'],
    ['NPM_TOKEN=abc123def456', 'NPM_TOKEN=[REDACTED:SECRET]'],
    ['POSTGRES_PASSWORD: postgres123', 'POSTGRES_PASSWORD: [REDACTED:PASSWORD]'],
  ])('masks a credential of low entropy assigned to a name that says so: %s', (input, expected) => {
    expect(maskSecrets(input)).toBe(expected);
  });

  it('leaves code that names a value, types, placeholders, words and ordinary text alone', () => {
    const plain = [
      'Fix the bearer token refresh in src/auth.ts at commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39, see ' +
        'https://example.com/a:b; the secret: caching; make the tests pass: update fixtures',
      'password = process.env.DB_PASSWORD',
      'password: string;',
      'api_key=${API_KEY}',
      'token: credentials.refresh_token',
      'secret: <your secret>',
      'PASSWORD=changeme',
      'password = getPassword()',
      'const password = await hash(input)',
      'password: hashedPassword,',
      'user(password=hashed_password)',
      'apiKey: apiKey2,',
      'password: z.string().min(8)',
      'private_key: ./keys/id_rsa',
      'PWD=/home/user/project OLDPWD=/tmp/build',
      'max_tokens=100000',
      'token: the next word',
      'existingSecret: postgres-credentials',
      'password: Password',
      'Authorization: Bearer AuthenticationHandler',
      '"api_key": "API_KEY"',
    ];
    for (const text of plain) expect(maskSecrets(text), text).toBe(text);
  });

  it('judges a value by the name it is assigned to', () => {
    expect(credentialValue('DB_PASSWORD', 'Zq8vR2kLm9x')).toBe(true);
    // A name that only mentions a credential needs a value that looks like one.
    expect(credentialValue('password_hint', 'Summer2024x')).toBe(false);
    expect(credentialValue('password_hint', 'a8f3K29dLq0Zx7Vb4Nm1')).toBe(true);
    expect(credentialValue('password', 'newPassword')).toBe(false);
    expect(credentialValue('password', 'short')).toBe(false);
    expect(credentialValue('password', 'has space')).toBe(false);
  });

  it('joins overlapping findings, the kind of the higher rank winning over a generic one', () => {
    expect(
      mergeFindings([
        { start: 5, end: 9, kind: 'SECRET' },
        { start: 0, end: 6, kind: 'SECRET' },
        { start: 4, end: 12, kind: 'GITHUB_TOKEN', rank: 1 },
        { start: 20, end: 22, kind: 'JWT' },
      ]),
    ).toEqual([
      { start: 0, end: 12, kind: 'GITHUB_TOKEN' },
      { start: 20, end: 22, kind: 'JWT' },
    ]);
    expect(entropy('aaaa')).toBe(0);
    expect(entropy('abcd')).toBe(2);
  });
});

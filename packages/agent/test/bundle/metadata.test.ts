/**
 * The manifest's texts — title, summary, working folder, repository root and remote — go through the bundle's
 * redactor, or through the one masking rule when there is none, and keep the manifest's bounds; every other manifest
 * field is of a fixed form, so a field added to the schema must be classified here before it can carry a secret out.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { BundleInput } from '@blue-agent/contract/bundle/index.js';
import { protectMetadata, STRUCTURAL_FIELDS, TEXT_FIELDS } from '@blue-agent/contract/bundle/metadata.js';
import { secretsRedaction } from '../../src/redaction/index.js';
import { contractRoot } from '../../../../test/support/context.js';

const AWS = 'AWS_SECRET_ACCESS_KEY=q8Vt2Lw9Zr4Xn7Kp3Hs6Jd1Fg5Bm0Cy2Ua8Ee4Rx';
const SLACK = 'xoxb-412345678901-4123456789012-Rk3Lm9Qr2Tv7Wz4Yb1NcHs6J';

function input(fields: Partial<BundleInput>): BundleInput {
  return { harness: 'claude', profile: 'claude-v2_0_12', sessionId: 's1', capturedAtUnixMs: 1, files: [], ...fields };
}

describe('the manifest texts', () => {
  it('each go through the redactor the policy asks for, and count', async () => {
    const { input: out, replaced } = await protectMetadata(
      input({
        title: 'deploy with DB_PASSWORD=Zq8vR2kLm9x',
        summary: `then ${AWS} and ${SLACK}`,
        cwd: '/home/u/work/PGPASSWORD=Hunter2Secret',
        repository: { root: '/home/u/api_key=k3y4Prod9Xz', remote: `https://git.example.com/${SLACK}/r.git` },
      }),
      secretsRedaction(),
    );
    expect(out).toMatchObject({
      title: 'deploy with DB_PASSWORD=[REDACTED:PASSWORD]',
      summary: 'then [REDACTED:AWS_SECRET_ACCESS_KEY] and [REDACTED:SLACK_TOKEN]',
      cwd: '/home/u/work/PGPASSWORD=[REDACTED:PASSWORD]',
      repository: {
        root: '/home/u/api_key=[REDACTED:SECRET]',
        remote: 'https://git.example.com/[REDACTED:SLACK_TOKEN]/r.git',
      },
    });
    expect(replaced).toBe(6);
    expect(JSON.stringify(out)).not.toMatch(/Zq8vR2kLm9x|q8Vt2Lw9Zr4X|Rk3Lm9Qr2Tv7|Hunter2Secret|k3y4Prod9Xz/);
  });

  it('are masked by the one masking rule when the policy asks for no redaction', async () => {
    const { input: out, replaced } = await protectMetadata(
      input({
        title: 'deploy with DB_PASSWORD=Zq8vR2kLm9x',
        summary: AWS,
        cwd: '/w',
        repository: { root: '/w', remote: `https://h/${SLACK}` },
      }),
      undefined,
    );
    expect(out).toMatchObject({
      title: 'deploy with DB_PASSWORD=[REDACTED:PASSWORD]',
      summary: 'AWS_SECRET_ACCESS_KEY=[REDACTED:SECRET]',
      cwd: '/w',
      repository: { root: '/w', remote: 'https://h/[REDACTED:SLACK_TOKEN]' },
    });
    expect(replaced).toBe(0);
    expect(await protectMetadata(input({ title: 'plain' }), undefined)).toEqual({
      input: input({ title: 'plain' }),
      replaced: 0,
    });
  });

  it('keep their bounds once a marker replaced a shorter secret, and lose the word a cut ended in', async () => {
    const title = `${'w'.repeat(231)} DB_PASSWORD=Zq8vR2kLm9x`;
    expect(Array.from(title)).toHaveLength(255);
    const { input: out } = await protectMetadata(
      input({ title, summary: `rotate the key sk_live_Rk3Lm9Qr2Tv7W\u2026` }),
      secretsRedaction(),
    );
    expect(Array.from(out.title!)).toHaveLength(TEXT_FIELDS.title);
    expect(out.title!.endsWith('\u2026')).toBe(true);
    expect(out.title).not.toContain('Zq8v');
    // A head of a key too short for any rule to know is not left at the cut.
    expect(out.summary).toBe('rotate the key \u2026');
    // A text too long to begin with is left for the schema to refuse, not cut to fit.
    const long = 't'.repeat(300);
    expect((await protectMetadata(input({ title: long }), secretsRedaction())).input.title).toBe(long);
  });

  it('are every free-text field of the manifest: the others are of a fixed form', () => {
    const schema = JSON.parse(
      readFileSync(path.join(contractRoot, 'schemas', 'bundle-manifest.schema.json'), 'utf8'),
    ) as {
      properties: Record<
        string,
        {
          type?: string;
          const?: unknown;
          enum?: unknown;
          pattern?: string;
          $ref?: string;
          maxLength?: number;
          properties?: Record<string, { maxLength?: number }>;
        }
      >;
    };
    const text = new Map<string, number | undefined>();
    for (const [name, field] of Object.entries(schema.properties)) {
      if ((STRUCTURAL_FIELDS as readonly string[]).includes(name)) {
        // A structural string is a name from a fixed vocabulary: it cannot carry what a person wrote.
        if (field.type === 'string')
          expect(field.const ?? field.enum ?? field.pattern ?? field.$ref, name).toBeDefined();
        continue;
      }
      if (field.properties === undefined) text.set(name, field.maxLength);
      else for (const [sub, inner] of Object.entries(field.properties)) text.set(`${name}.${sub}`, inner.maxLength);
    }
    expect(Object.fromEntries(text)).toEqual(TEXT_FIELDS);
  });
});

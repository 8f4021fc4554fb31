/**
 * A session record as it leaves the machine: under `redact: secrets` redacted whole — what it says, its messages, its
 * title and tags, within their bounds and still a valid record — and otherwise its title and tags masked by the one
 * masking rule, what it says left as the person stored it.
 */
import { describe, expect, it } from 'vitest';
import { RECORD_FORMAT, checkRecord, type SessionRecord } from '@blue-agent/contract/bundle/record.js';
import { protectRecord } from '../../src/sessions/store.js';

const record = (over: Partial<SessionRecord> = {}): SessionRecord => ({
  format: RECORD_FORMAT,
  provider: 'notes',
  title: 'keys api_key=k3y4Prod9Xz',
  tags: ['DB_PASSWORD=Zq8vR2kLm9x', `${'x'.repeat(39)}/PGPASSWORD=Hunter2Secret`, 'ops'],
  content: 'we used PGPASSWORD=Hunter2Secret',
  ...over,
});

describe('protectRecord', () => {
  it('redacts the whole record under redact: secrets, its messages, title and tags within their bounds', async () => {
    const stripe = `sk_live_${'Rk3Lm9Qr2Tv7Wz4Yb1NcHs6J'.repeat(2)}`;
    const out = await protectRecord(
      record({
        content: undefined,
        messages: [
          { role: 'user', text: `STRIPE_API_KEY=${stripe}` },
          { role: 'assistant', text: 'password: "Summer2024x" noted' },
        ],
      }),
      'secrets',
    );
    expect(checkRecord(out, 'out')).toBe(out);
    expect(JSON.stringify(out)).not.toMatch(/k3y4Prod9Xz|Zq8vR2kLm9x|Hunter2Secret|Rk3Lm9Qr2Tv7|Summer2024x/);
    expect(out.title).toBe('keys api_key=[REDACTED:SECRET]');
    expect(out.tags[0]).toBe('DB_PASSWORD=[REDACTED:PASSWORD]');
    // A marker longer than the secret it replaced keeps a tag within its 64 characters; other tags stay as they were.
    expect(out.tags[1]!.length).toBe(64);
    expect(out.tags[2]).toBe('ops');
    expect(out.messages!.map((m) => m.text)).toEqual([
      'STRIPE_API_KEY=[REDACTED:STRIPE_SECRET_KEY_LIVE]',
      'password: "[REDACTED:PASSWORD]" noted',
    ]);
  });

  it('masks the title and tags otherwise, and leaves what the record says as it was stored', async () => {
    const out = await protectRecord(record(), undefined);
    expect(out).toMatchObject({ title: 'keys api_key=[REDACTED:SECRET]', content: 'we used PGPASSWORD=Hunter2Secret' });
    expect(out.tags).toEqual([
      'DB_PASSWORD=[REDACTED:PASSWORD]',
      `${'x'.repeat(39)}/PGPASSWORD=[REDACTED:PA\u2026`,
      'ops',
    ]);
    const clean = record({ title: 'notes', tags: ['ops'] });
    expect(await protectRecord(clean, undefined)).toEqual(clean);
  });
});

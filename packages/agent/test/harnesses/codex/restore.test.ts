/**
 * Codex's restore planner: the rollout is named as Codex names the rollouts it creates (the session's start in this
 * machine's local time, whatever the time zone the test runs in), and the native index merge (session_index.jsonl),
 * text in, text out: every other byte and line is kept, the session's entry is added once, and merging again changes
 * nothing.
 */
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BundleManifest } from '@blue-agent/contract/bundle/index.js';
import { createContext, systemUtcOffsetMinutes } from '../../../src/context.js';
import {
  mergeSessionIndex,
  mergeSessionIndexBytes,
  planCodexRestore,
  rolloutRel,
} from '../../../src/harnesses/codex/restore.js';
import { makeTestHome, type TestHome } from '../../../../../test/support/context.js';
import { blueErrorOf, intervalOf } from '../../../../../test/support/recorded-sessions.js';
import { codex } from './rig.js';

const ID = '0b7c4a1e-1111-4222-8333-944455556666';

describe('rolloutRel: the local date and time Codex names a rollout by', () => {
  // 2026-12-31T22:30:15.999Z, with the time zone of Chatham in summer (+13:45), India (+5:30), UTC and California (-8).
  const start = Date.UTC(2026, 11, 31, 22, 30, 15, 999);
  it.each([
    [825, `2027/01/01/rollout-2027-01-01T12-15-15-${ID}.jsonl`],
    [330, `2027/01/01/rollout-2027-01-01T04-00-15-${ID}.jsonl`],
    [0, `2026/12/31/rollout-2026-12-31T22-30-15-${ID}.jsonl`],
    [-480, `2026/12/31/rollout-2026-12-31T14-30-15-${ID}.jsonl`],
  ])('offset %i minutes', (offset, rel) => {
    expect(rolloutRel(start, offset, ID, false)).toBe(rel);
  });

  it('crosses into a leap day and keeps .zst for a compressed rollout; seconds are cut, not rounded', () => {
    expect(rolloutRel(Date.UTC(2028, 1, 28, 23, 59, 59, 600), 60, ID, true)).toBe(
      `2028/02/29/rollout-2028-02-29T00-59-59-${ID}.jsonl.zst`,
    );
    expect(rolloutRel(Date.UTC(2026, 0, 1, 0, 0, 0, 0), -1, ID, false)).toBe(
      `2025/12/31/rollout-2025-12-31T23-59-00-${ID}.jsonl`,
    );
  });

  it('a local year without four digits has no name', () => {
    expect(rolloutRel(Date.UTC(9999, 11, 31, 23, 0, 0), 120, ID, false)).toBeUndefined();
    expect(rolloutRel(Number.NaN, 0, ID, false)).toBeUndefined();
  });
});

describe('planCodexRestore', () => {
  let home: TestHome;
  beforeEach(async () => {
    home = await makeTestHome();
  });
  afterEach(async () => {
    await home.cleanup();
  });

  /** Plans a bundle holding `rollout` (captured at `nativePath`) on a machine whose clock reports `utcOffsetMinutes`.
   * */
  async function plan(
    rollout: string,
    utcOffsetMinutes: (at: number) => number,
    nativePath = `2026/11/30/rollout-2026-11-30T16-33-24-${ID}.jsonl`,
  ) {
    const file = path.join(home.root, 'staged', 'rollout.jsonl');
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, rollout);
    const manifest = {
      native_session_id: ID,
      files: [
        {
          role: 'rollout',
          path: 'files/0000-rollout.jsonl',
          native_path: nativePath,
          size: Buffer.byteLength(rollout),
          sha256: createHash('sha256').update(rollout).digest('hex'),
        },
      ],
    } as unknown as BundleManifest;
    const ctx = home.context({ clock: { now: () => Date.UTC(2026, 11, 1), utcOffsetMinutes } });
    const codexHome = path.join(home.home, '.codex');
    return planCodexRestore(
      ctx,
      { manifest, files: [file], destination: home.root, interval: await intervalOf(codex.fixture.profile) },
      codexHome,
    );
  }

  const meta = (envelope: string, payload: string | undefined) =>
    JSON.stringify({
      timestamp: envelope,
      type: 'session_meta',
      payload: { id: ID, ...(payload === undefined ? {} : { timestamp: payload }), cwd: '/w' },
    }) + '\n';

  it('names the rollout by the local time of the session start, with the offset at that instant', async () => {
    const asked: number[] = [];
    const chatham = (at: number) => (asked.push(at), 825);
    const planned = await plan(meta('2026-11-30T16:33:24.960Z', '2026-11-30T16:33:24.929Z'), chatham);
    expect(asked).toEqual([Date.parse('2026-11-30T16:33:24.929Z')]);
    expect(planned.placements.map((p) => p.rel)).toEqual([`2026/12/01/rollout-2026-12-01T06-18-24-${ID}.jsonl`]);
    expect(planned.placements[0]!.to).toBe(
      path.join(home.home, '.codex', 'sessions', '2026', '12', '01', `rollout-2026-12-01T06-18-24-${ID}.jsonl`),
    );

    const pacific = await plan(meta('2026-11-30T16:33:24.960Z', '2026-11-30T16:33:24.929Z'), () => -480);
    expect(pacific.placements.map((p) => p.rel)).toEqual([`2026/11/30/rollout-2026-11-30T08-33-24-${ID}.jsonl`]);
  });

  it('takes the start from the session_meta payload, not from when the line was written', async () => {
    // Codex writes the first line when the rollout is first persisted, which may be after the session began.
    const planned = await plan(meta('2026-11-30T10:01:00.020Z', '2026-11-30T10:00:59.990Z'), () => 0);
    expect(planned.placements.map((p) => p.rel)).toEqual([`2026/11/30/rollout-2026-11-30T10-00-59-${ID}.jsonl`]);
    // Without a usable payload timestamp, the line's own is the best there is.
    for (const payload of [undefined, 'yesterday']) {
      const fallback = await plan(meta('2026-11-30T10:01:00.020Z', payload), () => 0);
      expect(fallback.placements.map((p) => p.rel)).toEqual([`2026/11/30/rollout-2026-11-30T10-01-00-${ID}.jsonl`]);
    }
  });

  it('refuses a start whose local year has no four digits', async () => {
    const error = await blueErrorOf(() =>
      plan(meta('9999-12-31T23:00:00.000Z', '9999-12-31T23:00:00.000Z'), () => 120),
    );
    expect(error).toMatchObject({ code: 'RESTORE_UNSAFE', message: expect.stringMatching(/no usable timestamp/) });
  });

  it('the context asks the process time zone unless it is given one', () => {
    const at = Date.UTC(2026, 0, 15, 12);
    const summer = Date.UTC(2026, 6, 15, 12);
    const ctx = createContext({ env: {} });
    for (const t of [at, summer]) expect(ctx.clock.utcOffsetMinutes(t)).toBe(-new Date(t).getTimezoneOffset() || 0);
    expect(systemUtcOffsetMinutes(at)).toBe(-new Date(at).getTimezoneOffset() || 0);
    expect(createContext({ env: {}, clock: { now: () => 5 } }).clock.utcOffsetMinutes(at)).toBe(
      systemUtcOffsetMinutes(at),
    );
    const given = createContext({ env: {}, clock: { now: () => 5, utcOffsetMinutes: (t) => (t === at ? 345 : 0) } });
    expect([given.clock.now(), given.clock.utcOffsetMinutes(at), given.clock.utcOffsetMinutes(summer)]).toEqual([
      5, 345, 0,
    ]);
  });
});

const line = fc.oneof(
  fc
    .record({
      id: fc.string({ minLength: 1, maxLength: 12 }),
      thread_name: fc.string({ maxLength: 20 }),
      updated_at: fc.constant('2026-01-01T00:00:00Z'),
    })
    .map((o) => JSON.stringify(o)),
  fc.string({ maxLength: 30 }).filter((s) => !s.includes('\n')),
);

describe('Codex session_index.jsonl', () => {
  it('appends one line, keeping every existing byte (property)', () => {
    fc.assert(
      fc.property(fc.array(line, { maxLength: 8 }), fc.boolean(), (lines, finalNewline) => {
        const text = lines.join('\n') + (finalNewline && lines.length > 0 ? '\n' : '');
        const merged = mergeSessionIndex(text, 'sess-1', 'My thread', '2026-11-30T00:00:00.000Z');
        expect(merged.startsWith(text)).toBe(true);
        const added = merged.slice(text.length).replace(/^\n/, '');
        expect(JSON.parse(added)).toEqual({
          id: 'sess-1',
          thread_name: 'My thread',
          updated_at: '2026-11-30T00:00:00.000Z',
        });
        expect(merged.endsWith('\n')).toBe(true);
        // Idempotent: the newest line for the id already has the name.
        expect(mergeSessionIndex(merged, 'sess-1', 'My thread', '2027-01-01T00:00:00.000Z')).toBe(merged);
      }),
    );
  });

  it('a newer line with another name for the id makes the restored name newest again', () => {
    const text =
      '{"id":"s","thread_name":"Old","updated_at":"1"}\n{"id":"s","thread_name":"Renamed","updated_at":"2"}\n';
    expect(mergeSessionIndex(text, 's', 'Renamed', '3')).toBe(text);
    expect(mergeSessionIndex(text, 's', 'Old', '3')).toBe(`${text}{"id":"s","thread_name":"Old","updated_at":"3"}\n`);
    expect(mergeSessionIndex(null, 's', 'T', '3')).toBe('{"id":"s","thread_name":"T","updated_at":"3"}\n');
  });
});

describe('index bytes that are not valid UTF-8', () => {
  it('session_index.jsonl: every existing byte is kept, invalid sequences included; the line is appended', () => {
    const before = Buffer.concat([
      Buffer.from('{"id":"a","thread_name":"caf'),
      Buffer.from([0xe9, 0xff, 0x80]),
      Buffer.from('","updated_at":"1"}\n{"id":"b","thread_name":"x'),
      Buffer.from([0xc3]),
    ]);
    const after = mergeSessionIndexBytes(before, 's', 'Thread', '2');
    expect(after.subarray(0, before.length).equals(before)).toBe(true);
    expect(after.subarray(before.length).toString('utf8')).toBe(
      '\n{"id":"s","thread_name":"Thread","updated_at":"2"}\n',
    );
    expect(mergeSessionIndexBytes(after, 's', 'Thread', '3')).toBe(after);
    expect(mergeSessionIndexBytes(null, 's', 'T', '3').toString('utf8')).toBe(
      '{"id":"s","thread_name":"T","updated_at":"3"}\n',
    );
  });
});

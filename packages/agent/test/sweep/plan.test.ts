/**
 * The idle sweep's planner (pure): what is captured, when, and what is never captured twice or unasked.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  MTIME_MARGIN_MS,
  needsLookup,
  planSweep,
  type Cursor,
  type LastCapture,
  type Observed,
} from '../../src/sweep/plan.js';

const IDLE = 30 * 60_000;
const SINCE = 1_000_000;
const session = (id: string, mtimeMs: number, size = 100): Observed => ({ id, path: `/p/${id}.jsonl`, size, mtimeMs });

function plan(
  sessions: Observed[],
  cursors: Record<string, Cursor> = {},
  captured: Map<string, LastCapture> = new Map(),
  now = SINCE + 10 * IDLE,
) {
  return planSweep({ now, idleMs: IDLE, since: SINCE, sessions, cursors, captured, truncated: false });
}

describe('planSweep', () => {
  it('captures a session that changed after the agent started watching and was left alone for the idle time', () => {
    const now = SINCE + 10 * IDLE;
    const idle = session('a', now - IDLE);
    const active = session('b', now - IDLE + 1);
    const out = plan([idle, active], {}, new Map(), now);
    expect(out.capture).toEqual([idle]);
    expect(out.counts).toMatchObject({ idle: 1, active: 1 });
    expect(out.nextDueAt).toBe(active.mtimeMs + IDLE);
    expect(out.cursors.a!.queued).toEqual({ size: 100, mtime_ms: idle.mtimeMs, at_unix_ms: now });
  });

  it('leaves history to backfill: a session untouched since before the watch began is never captured unasked', () => {
    const out = plan([session('old', SINCE - 1)]);
    expect(out.capture).toEqual([]);
    expect(out.counts.history).toBe(1);
  });

  it(
    'does not capture what a capture already holds (its read began after the last change), nor the same state ' +
      'twice',
    () => {
      const s = session('a', SINCE + IDLE);
      const captured = new Map([
        ['a', { content_sha256: 'f'.repeat(64), read_started_at_unix_ms: s.mtimeMs + MTIME_MARGIN_MS + 1 }],
      ]);
      expect(plan([s], {}, captured).capture).toEqual([]);
      // A read that began within the margin of the change may have missed it: captured again (the digest decides).
      const borderline = new Map([
        ['a', { content_sha256: 'f'.repeat(64), read_started_at_unix_ms: s.mtimeMs + MTIME_MARGIN_MS }],
      ]);
      const first = plan([s], {}, borderline);
      expect(first.capture).toEqual([s]);
      // Queued once: the same size and time are not queued again, even when its build failed or found it unchanged.
      const second = plan([s], first.cursors, new Map());
      expect(second.capture).toEqual([]);
      expect(second.counts.queued).toBe(1);
    },
  );

  it('a session captured, then resumed and extended, is captured again once idle', () => {
    const s = session('a', SINCE + IDLE);
    const captured = new Map([['a', { content_sha256: 'f'.repeat(64), read_started_at_unix_ms: s.mtimeMs + 5_000 }]]);
    const first = plan([s], {}, captured);
    expect(first.counts.captured).toBe(1);
    const extended = session('a', s.mtimeMs + 60 * 60_000, 200);
    const later = plan([extended], first.cursors, captured, extended.mtimeMs + IDLE);
    expect(later.capture).toEqual([extended]);
  });

  it(
    'looks up only new, changed or queued sessions; keeps cursors of unlisted sessions only when the listing was ' +
      'cut',
    () => {
      const s = session('a', SINCE + IDLE);
      const first = plan(
        [s],
        {},
        new Map([['a', { content_sha256: 'f'.repeat(64), read_started_at_unix_ms: s.mtimeMs + 5_000 }]]),
      );
      expect(needsLookup([s], first.cursors)).toEqual([]);
      expect(needsLookup([{ ...s, size: 101 }], first.cursors)).toHaveLength(1);
      expect(Object.keys(plan([], first.cursors).cursors)).toEqual([]);
      expect(
        Object.keys(
          planSweep({
            now: SINCE,
            idleMs: IDLE,
            since: SINCE,
            sessions: [],
            cursors: first.cursors,
            captured: new Map(),
            truncated: true,
          }).cursors,
        ),
      ).toEqual(['a']);
    },
  );

  it('property: a state is captured at most once, and only once idle and after the watch began', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.integer({ min: 0, max: 5 }),
            fc.integer({ min: SINCE - IDLE, max: SINCE + 4 * IDLE }),
            fc.integer({ min: 0, max: 3 }),
          ),
          { maxLength: 30 },
        ),
        fc.array(fc.integer({ min: SINCE, max: SINCE + 6 * IDLE }), { minLength: 1, maxLength: 6 }),
        (changes, clocks) => {
          let cursors: Record<string, Cursor> = {};
          const seen = new Set<string>();
          const times = [...clocks].sort((a, b) => a - b);
          for (const now of times) {
            const state = new Map<string, Observed>();
            for (const [id, mtime, size] of changes)
              if (mtime <= now) state.set(String(id), session(String(id), mtime, size));
            const out = planSweep({
              now,
              idleMs: IDLE,
              since: SINCE,
              sessions: [...state.values()],
              cursors,
              captured: new Map(),
              truncated: false,
            });
            for (const c of out.capture) {
              const key = `${c.id}:${c.size}:${c.mtimeMs}`;
              expect(seen.has(key)).toBe(false);
              seen.add(key);
              expect(now - c.mtimeMs).toBeGreaterThanOrEqual(IDLE);
              expect(c.mtimeMs).toBeGreaterThanOrEqual(SINCE);
            }
            cursors = out.cursors;
          }
        },
      ),
    );
  });
});

/** Flows, run to the end at once (SQLite) or step by step (PostgreSQL), with a step's failure seen by the flow. */
import { describe, expect, it } from 'vitest';
import { type Flow, runAsync, runSync, step } from '../../src/store/flow.js';

function* sum(a: () => number | Promise<number>, b: () => number | Promise<number>, log: string[]): Flow<number> {
  try {
    const x = yield* step(a());
    const y = yield* step(b());
    return x + y;
  } finally {
    log.push('ended');
  }
}

describe('store flows', () => {
  it('runs a flow whose steps answer at once, to the end', () => {
    const log: string[] = [];
    expect(
      runSync(
        sum(
          () => 1,
          () => 2,
          log,
        ),
      ),
    ).toBe(3);
    expect(log).toEqual(['ended']);
  });

  it('refuses a promise in a flow run at once: a synchronous transaction must not wait', () => {
    expect(() =>
      runSync(
        sum(
          () => Promise.resolve(1),
          () => 2,
          [],
        ),
      ),
    ).toThrow('a synchronous flow was given a promise');
  });

  it('awaits each step, and throws a failed step into the flow', async () => {
    const log: string[] = [];
    expect(
      await runAsync(
        sum(
          async () => 1,
          () => 2,
          log,
        ),
      ),
    ).toBe(3);
    await expect(
      runAsync(
        sum(
          async () => 1,
          async () => {
            throw new Error('the connection is gone');
          },
          log,
        ),
      ),
    ).rejects.toThrow('the connection is gone');
    expect(log).toEqual(['ended', 'ended']);
  });
});

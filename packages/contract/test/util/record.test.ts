import { describe, expect, it } from 'vitest';
import { isRecord } from '../../src/util/record.js';

describe('isRecord', () => {
  it('is true for objects and false for null, arrays and scalars', () => {
    expect([{}, { a: 1 }, Object.create(null)].map(isRecord)).toEqual([true, true, true]);
    expect([null, undefined, [], [1], 'x', 1, true].map(isRecord)).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});

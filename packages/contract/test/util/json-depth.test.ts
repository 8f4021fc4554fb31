import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonTooDeep, jsonNestingBeyond, parseJsonBounded } from '../../src/util/json-depth.js';

/** How many arrays and objects deep a value nests (a scalar: 0). */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  const children = Array.isArray(value) ? value : Object.values(value);
  return 1 + Math.max(0, ...children.map(depthOf));
}

describe('jsonNestingBeyond', () => {
  it('finds exactly the nesting JSON.stringify wrote, whatever the strings hold (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.constantFrom(undefined, 2), (value, indent) => {
        const text = JSON.stringify(value, null, indent);
        const depth = depthOf(value);
        expect(jsonNestingBeyond(text, depth)).toBe(-1);
        if (depth > 0) expect(jsonNestingBeyond(text, depth - 1)).toBeGreaterThanOrEqual(0);
      }),
      { numRuns: 300 },
    );
  });

  it('skips brackets in strings, escaped quotes included, and names where the bound is passed', () => {
    expect(jsonNestingBeyond(JSON.stringify({ a: '[[[{{{', b: 'x\\"[[' }), 1)).toBe(-1);
    expect(jsonNestingBeyond('[[[1]]]', 2)).toBe(2);
    expect(jsonNestingBeyond(']]]][[[', 2)).toBe(6);
  });
});

describe('parseJsonBounded', () => {
  it('parses what is within the bound and refuses deeper text before building anything', () => {
    expect(parseJsonBounded('{"a":[1,{"b":2}]}', 3)).toEqual({ a: [1, { b: 2 }] });
    const deep = `${'['.repeat(200_000)}${']'.repeat(200_000)}`;
    expect(() => parseJsonBounded(deep, 64)).toThrow(JsonTooDeep);
    expect(() => parseJsonBounded(deep, 64)).toThrow('nests deeper than 64 levels');
    expect(() => parseJsonBounded('{"a":', 64)).toThrow(SyntaxError);
  });
});

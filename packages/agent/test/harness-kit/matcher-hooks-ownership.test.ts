/**
 * The ledger record of the matcher-group hooks planner, read defensively: the ledger is a file on disk, so anything
 * that is not exactly a record this planner writes counts as no record (the planner then works from the file alone).
 */
import { describe, expect, it } from 'vitest';
import { makeOwnership, readOwnership, type OwnershipRecord } from '../../src/harness-kit/matcher-hooks-ownership.js';

const splice = { node: 'group', before: ',\n    ', after: '', comma: 'joined' } as const;
const full = { v: 1, base: 'empty', baseText: '\n  ', event: 'SessionEnd', created: ['event', 'hooks'], splice };
const read = (value: unknown) => readOwnership(value as OwnershipRecord);
const without = (key: string) => Object.fromEntries(Object.entries(full).filter(([k]) => k !== key));

describe('readOwnership', () => {
  it('reads back every field it writes, in its own order', () => {
    expect(JSON.stringify(read(full))).toBe(
      JSON.stringify({
        v: 1,
        base: 'empty',
        baseText: '\n  ',
        event: 'SessionEnd',
        created: ['hooks', 'event'],
        splice,
      }),
    );
    expect(read({ v: 1, base: 'existing', event: 'Stop' })).toStrictEqual({ v: 1, base: 'existing', event: 'Stop' });
    for (const base of ['existing', 'missing', 'empty']) expect(read({ ...full, base })?.base).toBe(base);
    for (const node of ['group', 'event', 'hooks'])
      expect(read({ ...full, splice: { ...splice, node } })?.splice?.node).toBe(node);
    for (const comma of ['joined', 'separate', 'none'])
      expect(read({ ...full, splice: { ...splice, comma } })?.splice?.comma).toBe(comma);
    expect(read({ ...full, created: [] })?.created).toStrictEqual([]);
  });

  it('keeps only the known splice fields', () => {
    expect(read({ ...full, splice: { ...splice, extra: 'x' } })?.splice).toStrictEqual(splice);
  });

  it('is no record for what is not an object', () => {
    for (const value of [undefined, null, 'x', 1, true]) expect(read(value), String(value)).toBeUndefined();
  });

  it('is no record for a wrong version, event or base', () => {
    for (const bad of [{ v: 2 }, { v: '1' }, { event: 5 }, { base: 'other' }, { base: undefined }]) {
      expect(read({ ...full, ...bad }), JSON.stringify(bad)).toBeUndefined();
    }
    expect(read(without('v'))).toBeUndefined();
    expect(read(without('event'))).toBeUndefined();
  });

  it('is no record for a base text that is not whitespace, or not a string', () => {
    for (const baseText of [5, 'x', ' x ', null]) expect(read({ ...full, baseText }), String(baseText)).toBeUndefined();
    expect(read({ ...full, baseText: '' })?.baseText).toBe('');
    expect(read(without('baseText'))).toStrictEqual({
      v: 1,
      base: 'empty',
      event: 'SessionEnd',
      created: ['hooks', 'event'],
      splice,
    });
  });

  it('is no record for created containers that are not a list of known ones', () => {
    for (const created of ['hooks', ['hooks', 'other'], [1], null, {}])
      expect(read({ ...full, created }), JSON.stringify(created)).toBeUndefined();
    expect(read(without('created'))?.created).toBeUndefined();
  });

  it('is no record for a splice that is not one of the shapes it writes', () => {
    const bad: unknown[] = [
      null,
      'group',
      5,
      { ...splice, node: 'other' },
      { ...splice, node: undefined },
      { ...splice, before: 1 },
      { ...splice, before: undefined },
      { ...splice, after: null },
      { ...splice, comma: 'both' },
      { ...splice, comma: undefined },
    ];
    for (const s of bad) expect(read({ ...full, splice: s }), JSON.stringify(s)).toBeUndefined();
    expect(read(without('splice'))?.splice).toBeUndefined();
  });
});

describe('makeOwnership', () => {
  it('keeps a base text only for a base that was empty, and no key at all for what is absent', () => {
    expect(makeOwnership('existing', '\n', 'SessionEnd', undefined, undefined)).toStrictEqual({
      v: 1,
      base: 'existing',
      event: 'SessionEnd',
    });
    expect(makeOwnership('missing', '\n', 'SessionEnd', undefined, undefined)).toStrictEqual({
      v: 1,
      base: 'missing',
      event: 'SessionEnd',
    });
    expect(makeOwnership('empty', undefined, 'SessionEnd', undefined, undefined)).toStrictEqual({
      v: 1,
      base: 'empty',
      event: 'SessionEnd',
    });
    expect(makeOwnership('empty', '\n', 'SessionEnd', ['event'], splice)).toStrictEqual({
      v: 1,
      base: 'empty',
      baseText: '\n',
      event: 'SessionEnd',
      created: ['event'],
      splice,
    });
  });

  it('lists created containers in one order, whatever order they were given in', () => {
    expect(makeOwnership('existing', undefined, 'E', ['event', 'hooks'], undefined).created).toStrictEqual([
      'hooks',
      'event',
    ]);
  });
});

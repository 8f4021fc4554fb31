/**
 * Codex's native index merge (session_index.jsonl), text in, text out: every other byte and line is kept, the
 * session's entry is added once, and merging again changes nothing.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mergeSessionIndex, mergeSessionIndexBytes } from '../../../src/harnesses/codex/restore.js';

const line = fc.oneof(
  fc.record({ id: fc.string({ minLength: 1, maxLength: 12 }), thread_name: fc.string({ maxLength: 20 }), updated_at: fc.constant('2026-01-01T00:00:00Z') }).map((o) => JSON.stringify(o)),
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
        expect(JSON.parse(added)).toEqual({ id: 'sess-1', thread_name: 'My thread', updated_at: '2026-11-30T00:00:00.000Z' });
        expect(merged.endsWith('\n')).toBe(true);
        // Idempotent: the newest line for the id already has the name.
        expect(mergeSessionIndex(merged, 'sess-1', 'My thread', '2027-01-01T00:00:00.000Z')).toBe(merged);
      }),
    );
  });

  it('a newer line with another name for the id makes the restored name newest again', () => {
    const text = '{"id":"s","thread_name":"Old","updated_at":"1"}\n{"id":"s","thread_name":"Renamed","updated_at":"2"}\n';
    expect(mergeSessionIndex(text, 's', 'Renamed', '3')).toBe(text);
    expect(mergeSessionIndex(text, 's', 'Old', '3')).toBe(`${text}{"id":"s","thread_name":"Old","updated_at":"3"}\n`);
    expect(mergeSessionIndex(null, 's', 'T', '3')).toBe('{"id":"s","thread_name":"T","updated_at":"3"}\n');
  });
});

describe('index bytes that are not valid UTF-8', () => {
  it('session_index.jsonl: every existing byte is kept exactly, invalid sequences included; the line is appended', () => {
    const before = Buffer.concat([
      Buffer.from('{"id":"a","thread_name":"caf'),
      Buffer.from([0xe9, 0xff, 0x80]),
      Buffer.from('","updated_at":"1"}\n{"id":"b","thread_name":"x'),
      Buffer.from([0xc3]),
    ]);
    const after = mergeSessionIndexBytes(before, 's', 'Thread', '2');
    expect(after.subarray(0, before.length).equals(before)).toBe(true);
    expect(after.subarray(before.length).toString('utf8')).toBe('\n{"id":"s","thread_name":"Thread","updated_at":"2"}\n');
    expect(mergeSessionIndexBytes(after, 's', 'Thread', '3')).toBe(after);
    expect(mergeSessionIndexBytes(null, 's', 'T', '3').toString('utf8')).toBe('{"id":"s","thread_name":"T","updated_at":"3"}\n');
  });

});

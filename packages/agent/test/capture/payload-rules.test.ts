/**
 * The hook payload's rules, one by one: what is refused (and that the reason names the field and the rule, never the
 * value), what is kept, and what is quietly dropped.
 */
import { describe, expect, it } from 'vitest';
import { parsePayload, PayloadRefused } from '../../src/capture/payload.js';

const ok = { session_id: 'abc-123' };
const parse = (value: unknown): ReturnType<typeof parsePayload> =>
  parsePayload(typeof value === 'string' ? value : JSON.stringify(value));
const refusal = (value: unknown): string => {
  try {
    parse(value);
  } catch (error) {
    expect(error).toBeInstanceOf(PayloadRefused);
    expect((error as Error).name).toBe('PayloadRefused');
    return (error as Error).message;
  }
  throw new Error('accepted');
};

describe('parsePayload refuses', () => {
  it('text that is not JSON, and JSON that is not an object', () => {
    expect(refusal('{"session_id":')).toBe('the payload on stdin is not valid JSON');
    expect(refusal('')).toBe('the payload on stdin is not valid JSON');
    for (const value of ['null', '[]', '[{"session_id":"a"}]', '"a"', '7', 'true']) {
      expect(refusal(value), value).toBe('the payload on stdin is not a JSON object');
    }
  });

  it('a missing or non-string session_id, and one the session-id rule refuses', () => {
    expect(refusal({})).toBe('the payload has no session_id string');
    expect(refusal({ session_id: 7 })).toBe('the payload has no session_id string');
    expect(refusal({ session_id: null })).toBe('the payload has no session_id string');
    expect(refusal({ session_id: '..' })).toMatch(/^session_id /);
    expect(refusal({ session_id: 'a/b' })).toMatch(/^session_id /);
  });

  it('a path that is not a string, holds a NUL, is too long, or is not absolute', () => {
    for (const field of ['cwd', 'transcript_path']) {
      expect(refusal({ ...ok, [field]: 5 })).toBe(`${field} must be a string`);
      expect(refusal({ ...ok, [field]: {} })).toBe(`${field} must be a string`);
      expect(refusal({ ...ok, [field]: '/a\0b' })).toBe(`${field} contains a NUL character`);
      expect(refusal({ ...ok, [field]: `/${'a'.repeat(4096)}` })).toBe(`${field} must be at most 4096 characters long`);
      expect(refusal({ ...ok, [field]: 'relative/x' })).toBe(`${field} must be an absolute path`);
      expect(refusal({ ...ok, [field]: '~/x' })).toBe(`${field} must be an absolute path`);
    }
  });

  it('without echoing the value it refuses', () => {
    const secret = 'sk-live-1234567890';
    for (const value of [
      { session_id: `${secret}/x` },
      { ...ok, cwd: `${secret}\0` },
      { ...ok, transcript_path: secret },
    ]) {
      expect(refusal(value)).not.toContain(secret);
    }
  });
});

describe('parsePayload keeps', () => {
  it('the session id, absolute paths up to the limit and label-like fields, and nothing else', () => {
    const long = `/${'a'.repeat(4095)}`;
    const payload = parse({
      session_id: 'abc-123',
      cwd: '/home/u/p',
      transcript_path: long,
      hook_event_name: 'SessionEnd',
      reason: 'prompt_input_exit',
      extra: 'x',
      prompt: 'secret text',
    });
    expect(payload).toStrictEqual({
      session_id: 'abc-123',
      cwd: '/home/u/p',
      transcript_path: long,
      hook_event_name: 'SessionEnd',
      reason: 'prompt_input_exit',
    });
  });

  it('no path for a null or empty one (a harness that names no transcript sends either)', () => {
    expect(parse({ ...ok, transcript_path: '', cwd: null })).toStrictEqual(ok);
    expect(parse({ ...ok, transcript_path: null, cwd: '' })).toStrictEqual(ok);
  });

  it('a payload behind a byte-order mark; a mark anywhere else is no white space', () => {
    expect(parse(`\uFEFF${JSON.stringify(ok)}`)).toStrictEqual(ok);
    expect(refusal(`{\uFEFF"session_id":"abc-123"}`)).toBe('the payload on stdin is not valid JSON');
  });

  it('no key at all for an absent or null path, or a label that is not one', () => {
    expect(parse({ ...ok, cwd: null, transcript_path: null })).toStrictEqual(ok);
    expect(parse({ ...ok, hook_event_name: 5, reason: 'a'.repeat(129) })).toStrictEqual(ok);
    expect(parse({ ...ok, hook_event_name: 'End\nNow', reason: '<script>' })).toStrictEqual(ok);
  });

  it('labels of every allowed character, up to 128 long; the empty label counts as one', () => {
    const allowed = 'Az09._:/ -';
    expect(parse({ ...ok, hook_event_name: allowed, reason: 'r'.repeat(128) })).toStrictEqual({
      ...ok,
      hook_event_name: allowed,
      reason: 'r'.repeat(128),
    });
    expect(parse({ ...ok, reason: '' })).toStrictEqual({ ...ok, reason: '' });
    expect(parse({ ...ok, reason: 'x!' })).toStrictEqual(ok);
    expect(parse({ ...ok, reason: '!x' })).toStrictEqual(ok);
  });
});

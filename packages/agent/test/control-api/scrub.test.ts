import { describe, expect, it } from 'vitest';
import { describeNetworkError, networkFailure, safeUrl, scrubText } from '../../src/control-api/scrub.js';

const TOKEN = 'tok_SECRET_abcdef0123456789';
const SIGNATURE = 'SIGNATUREabcdef0123456789';

describe('scrubText and safeUrl', () => {
  it('masks signed-URL queries and the token', () => {
    expect(safeUrl(`https://s3.example/b/k?X-Amz-Signature=${SIGNATURE}`)).toBe('https://s3.example/b/k?[redacted]');
    const text = scrubText(`PUT https://s3.example/b/k?sig=${SIGNATURE} with ${TOKEN}`, TOKEN);
    expect(text).not.toContain(SIGNATURE);
    expect(text).not.toContain(TOKEN);
  });

  it('drops the userinfo of every URL in a message', () => {
    expect(safeUrl('https://ada:hunter2@control.example/blue?x=1')).toBe('https://control.example/blue?[redacted]');
    const text = scrubText('proxy http://ada:hunter2@proxy.example:3128/ refused');
    expect(text).toBe('proxy http://proxy.example:3128/ refused');
    expect(safeUrl('not a url')).toBe('[unparseable URL]');
  });

  it('masks what the log redaction knows even without a token', () => {
    expect(scrubText('Authorization: Bearer abc.def.ghi')).not.toContain('abc.def.ghi');
  });
});

describe('network failures', () => {
  const failure = (props: Record<string, unknown>) =>
    Object.assign(new Error(`message with ${TOKEN} at https://x.example/?sig=${SIGNATURE}`), props);

  it('are described by class and code, never by the library message', () => {
    expect(describeNetworkError(failure({ code: 'ECONNREFUSED' }))).toBe('connection refused');
    expect(networkFailure(failure({ code: 'ECONNREFUSED' }))).toEqual({
      words: 'connection refused',
      code: 'ECONNREFUSED',
      timedOut: false,
    });
    expect(describeNetworkError(failure({ cause: { code: 'ECONNRESET' } }))).toBe('connection reset');
    expect(describeNetworkError(failure({ code: 'UND_ERR_SOCKET' }))).toBe('connection reset');
    expect(describeNetworkError(failure({ code: 'UND_ERR_CONNECT_TIMEOUT' }))).toBe('connect timeout');
    expect(describeNetworkError(failure({ code: 'ENOTFOUND' }))).toBe('network error (ENOTFOUND)');
    expect(describeNetworkError(failure({ code: 'UND_ERR_INFO' }))).toBe('network error (UND_ERR_INFO)');
    expect(describeNetworkError(failure({}))).toBe('network error (Error)');
    for (const props of [{}, { code: 'UND_ERR_INFO' }, { cause: { code: 'EAI_AGAIN' } }]) {
      const text = describeNetworkError(failure(props));
      expect(text).not.toContain(TOKEN);
      expect(text).not.toContain(SIGNATURE);
    }
  });

  it('say how long was waited when the caller names its timeout', () => {
    expect(describeNetworkError(failure({ name: 'TimeoutError' }))).toBe('timed out');
    expect(describeNetworkError(failure({ code: 'UND_ERR_HEADERS_TIMEOUT' }), 2_500)).toBe('timed out after 2.5 s');
    expect(networkFailure(undefined)).toMatchObject({ words: 'network error (unknown)' });
  });
});

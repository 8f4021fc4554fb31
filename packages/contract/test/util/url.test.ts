import { describe, expect, it } from 'vitest';
import { originOf, parseHttpUrl } from '../../src/util/url.js';

describe('http(s) URLs', () => {
  it('names an http(s) origin, and nothing else', () => {
    expect(originOf('HTTPS://Control.Example:443/x')).toBe('https://control.example');
    expect(originOf('http://control.example:8080/a?b#c')).toBe('http://control.example:8080');
    expect(originOf('ftp://control.example')).toBe('');
    expect(originOf('not a url')).toBe('');
    expect(originOf('')).toBe('');
  });

  it('parses only absolute http: and https: URLs', () => {
    expect(parseHttpUrl('https://user@control.example/x')?.username).toBe('user');
    expect(parseHttpUrl('file:///etc/passwd')).toBeUndefined();
    expect(parseHttpUrl('javascript:alert(1)')).toBeUndefined();
    expect(parseHttpUrl('/relative')).toBeUndefined();
  });
});

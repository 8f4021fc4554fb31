import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeLossless, encodeLossless, showEscapes } from '../../src/util/lossless.js';

describe('lossless text', () => {
  it('gives back every byte sequence exactly', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        expect(encodeLossless(decodeLossless(bytes)).equals(Buffer.from(bytes))).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('reads well-formed UTF-8 as Node does, keeping a byte-order mark', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), (text) => {
        const bytes = Buffer.from(text, 'utf8');
        expect(decodeLossless(bytes)).toBe(bytes.toString('utf8'));
      }),
    );
    expect(decodeLossless(Buffer.from('\uFEFF{}', 'utf8'))).toBe('\uFEFF{}');
  });

  it('maps each invalid byte to its own escape, surrogate encodings and overlong forms included', () => {
    const bytes = Buffer.from([0x61, 0xff, 0xed, 0xa0, 0x80, 0xc0, 0xaf, 0xe2, 0x82, 0x62, 0xf0, 0x9f, 0x98, 0x80]);
    expect(decodeLossless(bytes)).toBe('a\uDCFF\uDCED\uDCA0\uDC80\uDCC0\uDCAF\uDCE2\uDC82b\u{1F600}');
    expect(showEscapes(decodeLossless(bytes))).toBe('a\\xff\\xed\\xa0\\x80\\xc0\\xaf\\xe2\\x82b\u{1F600}');
  });

  it('refuses to write a lone surrogate the decoder cannot have made', () => {
    expect(() => encodeLossless('a\uD800b')).toThrow(expect.objectContaining({ code: 'INTERNAL' }));
    expect(() => encodeLossless('a\uDC00b')).toThrow(expect.objectContaining({ code: 'INTERNAL' }));
  });
});

describe('lossless text, sequence by sequence', () => {
  // Each case after an invalid byte, so the byte-by-byte reading decides (well-formed input takes the fast path).
  // Expected values as `showEscapes` prints them; the same as Python's `surrogateescape` decoding.
  const cases: [string, string][] = [
    ['7f', '\u{7F}'],
    ['80', '\\x80'],
    ['c1 80', '\\xc1\\x80'],
    ['c2 80', '\u{80}'],
    ['df bf', '\u{7FF}'],
    ['c2 7f', '\\xc2\u{7F}'],
    ['c2 c0', '\\xc2\\xc0'],
    ['c2', '\\xc2'],
    ['e0 9f 80', '\\xe0\\x9f\\x80'],
    ['e0 a0 80', '\u{800}'],
    ['e0 bf bf', '\u{FFF}'],
    ['e0 a0', '\\xe0\\xa0'],
    ['e0 c0 80', '\\xe0\\xc0\\x80'],
    ['ed 9f bf', '\u{D7FF}'],
    ['ed a0 80', '\\xed\\xa0\\x80'],
    ['ed 80 80', '\u{D000}'],
    ['e1 80 80', '\u{1000}'],
    ['ec bf bf', '\u{CFFF}'],
    ['ee 80 80', '\u{E000}'],
    ['ef bf bf', '\u{FFFF}'],
    ['e1 7f 80', '\\xe1\u{7F}\\x80'],
    ['e1 80 c0', '\\xe1\\x80\\xc0'],
    ['e1 80', '\\xe1\\x80'],
    ['f0 8f bf bf', '\\xf0\\x8f\\xbf\\xbf'],
    ['f0 90 80 80', '\u{10000}'],
    ['f0 c0 80 80', '\\xf0\\xc0\\x80\\x80'],
    ['f1 80 80 80', '\u{40000}'],
    ['f3 bf bf bf', '\u{FFFFF}'],
    ['f4 8f bf bf', '\u{10FFFF}'],
    ['f4 90 80 80', '\\xf4\\x90\\x80\\x80'],
    ['f1 80 80', '\\xf1\\x80\\x80'],
    ['f1 80 c0 80', '\\xf1\\x80\\xc0\\x80'],
    ['f1 80 80 c0', '\\xf1\\x80\\x80\\xc0'],
    ['f5 80 80 80', '\\xf5\\x80\\x80\\x80'],
    ['f8', '\\xf8'],
    ['ff', '\\xff'],
    ['61 80 62 c3 a9 ff', 'a\\x80b\u{E9}\\xff'],
  ];
  const hex = (s: string) => s.split(' ').map((h) => Number.parseInt(h, 16));

  it.each(cases)('%s after an invalid byte reads as %s', (bytes, shown) => {
    const text = decodeLossless(Uint8Array.from([0xfe, ...hex(bytes)]));
    expect(showEscapes(text)).toBe(`\\xfe${shown}`);
    expect(encodeLossless(text).equals(Buffer.from([0xfe, ...hex(bytes)]))).toBe(true);
  });

  it('reads only the bytes of a view into a larger buffer', () => {
    const whole = Buffer.from([0xff, 0x61, 0x80, 0x62, 0xff]);
    expect(showEscapes(decodeLossless(whole.subarray(1, 4)))).toBe('a\\x80b');
    expect(showEscapes(decodeLossless(new Uint8Array(whole.buffer, whole.byteOffset + 2, 1)))).toBe('\\x80');
  });

  it('writes escapes at any place, between well-formed pairs', () => {
    const text = '\uDC80a\u{1F600}\uDCFFb\u{1F600}\uDCC3';
    expect(encodeLossless(text)).toEqual(
      Buffer.from([0x80, 0x61, 0xf0, 0x9f, 0x98, 0x80, 0xff, 0x62, 0xf0, 0x9f, 0x98, 0x80, 0xc3]),
    );
    expect(encodeLossless('plain é')).toEqual(Buffer.from('plain é', 'utf8'));
  });

  it('refuses every lone surrogate outside the escapes, naming it and where it is', () => {
    for (const [text, code, at] of [
      ['ab\uD800', 'D800', 2],
      ['\uDBFFx', 'DBFF', 0],
      ['\uDBFF\uD800\uDC00', 'DBFF', 0],
      ['x\uDC7F', 'DC7F', 1],
      ['\u{1F600}\uDD00', 'DD00', 2],
      ['\uDFFF', 'DFFF', 0],
      ['\uD800\uE000', 'D800', 0],
    ] as const) {
      let error: unknown;
      try {
        encodeLossless(text);
      } catch (e) {
        error = e;
      }
      expect(error, text).toMatchObject({
        code: 'INTERNAL',
        message: `text to write holds a lone surrogate U+${code} at index ${at}`,
        hint: 'This is a bug in blue-agent; nothing was written. Please report it with the command you ran.',
      });
    }
  });

  it('shows escapes as \\xNN, leaving a well-formed pair and other lone surrogates alone', () => {
    expect(showEscapes('a\uDC80\uD800\uDC80\uDCFF')).toBe('a\\x80\uD800\uDC80\\xff');
    expect(showEscapes('\uDC7F\uDD00\uDC9A')).toBe('\uDC7F\uDD00\\x9a');
    expect(showEscapes('plain \u{1F600}')).toBe('plain \u{1F600}');
  });
});

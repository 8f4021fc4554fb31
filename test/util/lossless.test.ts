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

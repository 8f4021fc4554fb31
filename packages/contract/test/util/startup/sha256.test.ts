/** The WebAssembly SHA-256 agrees with node:crypto on every length around the block and padding boundaries, and on any
 * bytes. */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../src/util/startup/sha256.js';

const reference = (data: string | Uint8Array) => createHash('sha256').update(data).digest('hex');

describe('sha256Hex', () => {
  it('gives the FIPS 180-4 test vectors', () => {
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq')).toBe(
      '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
    );
  });

  it('agrees with node:crypto for every length from 0 to 300 bytes', () => {
    const bytes = Uint8Array.from({ length: 300 }, (_, i) => (i * 131 + 7) & 0xff);
    for (let n = 0; n <= 300; n++)
      expect(sha256Hex(bytes.subarray(0, n)), `length ${n}`).toBe(reference(bytes.subarray(0, n)));
  });

  it('hashes a string as UTF-8, as node:crypto does', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 400 }), (text) => sha256Hex(text) === reference(text)),
    );
  });

  it('agrees with node:crypto on arbitrary bytes, one call after another', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 5000 }), (bytes) => sha256Hex(bytes) === reference(bytes)));
  });

  it('hashes what is larger than its memory, around each boundary of the pieces it is compressed in', () => {
    const big = Buffer.alloc(3 * 65536 + 200);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7919) >>> 3;
    for (const n of [64512 - 1, 64512, 64512 + 1, 64512 + 64, 2 * 64512 + 55, 2 * 64512 + 56, big.length]) {
      expect(sha256Hex(big.subarray(0, n)), `length ${n}`).toBe(reference(big.subarray(0, n)));
    }
  });

  it('runs from a module that is up to date with src/util/startup/sha256.wat', () => {
    const root = path.join(import.meta.dirname, '..', '..', '..', '..', '..');
    expect(
      execFileSync(process.execPath, [path.join(root, 'scripts', 'gen-wasm.mjs'), '--check'], { encoding: 'utf8' }),
    ).toContain('up to date');
  });
});

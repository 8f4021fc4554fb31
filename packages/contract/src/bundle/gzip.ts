/**
 * The gzip frame around the raw deflate stream. It is written and parsed here rather than by zlib's gzip mode: zlib
 * stamps the operating system into the header (so bundles would differ between Linux and macOS), and its gunzip
 * silently reads concatenated members and, depending on chunking, skips or trips over trailing bytes. Owning the frame
 * keeps the writer byte-for-byte deterministic and lets the reader refuse anything after the one member.
 */
import zlib from 'node:zlib';
import type { Violation } from './tar.js';

/** One member, no file name, mtime 0, no extra flags, OS 3 (Unix) on every platform. */
export const GZIP_HEADER: Buffer = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
export const GZIP_TRAILER_BYTES = 8;
/** How much of a file the header parser looks at: optional name, comment and extra fields must fit. */
export const GZIP_HEADER_MAX = 64 * 1024;

export function gzipTrailer(crc: number, size: number): Buffer {
  const trailer = Buffer.alloc(GZIP_TRAILER_BYTES);
  trailer.writeUInt32LE(crc >>> 0, 0);
  trailer.writeUInt32LE(size % 2 ** 32, 4);
  return trailer;
}

const FTEXT = 1;
const FHCRC = 2;
const FEXTRA = 4;
const FNAME = 8;
const FCOMMENT = 16;

/** The length of the gzip member header at the start of `head` (the first bytes of the file). */
export function parseGzipHeader(head: Buffer, fail: Violation): number {
  if (head.length < 10 || head[0] !== 0x1f || head[1] !== 0x8b) throw fail('is not gzip-compressed');
  if (head[2] !== 8) throw fail('uses a gzip compression method other than deflate');
  const flags = head[3]!;
  if ((flags & ~(FTEXT | FHCRC | FEXTRA | FNAME | FCOMMENT)) !== 0) throw fail('has reserved gzip header flags set');
  const short = () =>
    fail(
      head.length < GZIP_HEADER_MAX ? 'is truncated inside its gzip header' : 'has a gzip header longer than 64 KiB',
    );
  let pos = 10;
  if (flags & FEXTRA) {
    if (pos + 2 > head.length) throw short();
    pos += 2 + head.readUInt16LE(pos);
  }
  for (const flag of [FNAME, FCOMMENT]) {
    if (flags & flag) {
      const nul = head.indexOf(0, pos);
      if (nul < 0) throw short();
      pos = nul + 1;
    }
  }
  if (flags & FHCRC) {
    if (pos + 2 > head.length) throw short();
    if ((zlib.crc32(head.subarray(0, pos)) & 0xffff) !== head.readUInt16LE(pos))
      throw fail('has a gzip header with a wrong checksum');
    pos += 2;
  }
  if (pos > head.length) throw short();
  return pos;
}

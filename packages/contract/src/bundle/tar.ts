/**
 * The tar layer of a bundle, both ways.
 *
 * Writing: ustar headers built by hand, so every byte is chosen (mode 0600, mtime 0, uid/gid 0, no user or group
 * names) and equal input gives an equal archive. Names that do not fit ustar's name/prefix fields get a pax header
 * holding only `path`.
 *
 * Reading: a push parser that takes decompressed chunks as they come, never holds more than one header or one
 * extended header, hands entry data on in the caller's chunks, and refuses on the spot anything a restore must not
 * see (links, devices, hidden names, data smuggled past the end-of-archive marker).
 */
import path from 'node:path';
import { entryNameProblem } from './manifest.js';

export const BLOCK = 512;
/** Two zero blocks end an archive. */
export const END_OF_ARCHIVE: Buffer = Buffer.alloc(2 * BLOCK);

const FILE_MODE = 0o600;

function writeOctal(block: Buffer, offset: number, length: number, value: number): void {
  block.write(`${value.toString(8).padStart(length - 1, '0')}\0`, offset, length, 'latin1');
}

function ustarHeader(name: string, prefix: string, size: number, type: '0' | 'x'): Buffer {
  const block = Buffer.alloc(BLOCK);
  block.write(name, 0, 100, 'utf8');
  writeOctal(block, 100, 8, FILE_MODE);
  writeOctal(block, 108, 8, 0);
  writeOctal(block, 116, 8, 0);
  writeOctal(block, 124, 12, size);
  writeOctal(block, 136, 12, 0);
  block.fill(0x20, 148, 156);
  block.write(type, 156, 1, 'latin1');
  block.write('ustar\u000000', 257, 8, 'latin1');
  writeOctal(block, 329, 8, 0);
  writeOctal(block, 337, 8, 0);
  block.write(prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'latin1');
  return block;
}

/** ustar's name (100 bytes) and prefix (155 bytes) fields, split at a slash; undefined when the name cannot fit. */
function splitName(name: string): { name: string; prefix: string } | undefined {
  if (Buffer.byteLength(name) <= 100) return { name, prefix: '' };
  for (let i = name.lastIndexOf('/'); i > 0; i = name.lastIndexOf('/', i - 1)) {
    const prefix = name.slice(0, i);
    const rest = name.slice(i + 1);
    if (rest !== '' && Buffer.byteLength(rest) <= 100 && Buffer.byteLength(prefix) <= 155)
      return { name: rest, prefix };
  }
  return undefined;
}

function paxRecord(key: string, value: string): Buffer {
  const body = ` ${key}=${value}\n`;
  const bodyBytes = Buffer.byteLength(body);
  // The length counts its own digits.
  let length = bodyBytes + 1;
  while (String(length).length + bodyBytes !== length) length = String(length).length + bodyBytes;
  return Buffer.from(`${length}${body}`, 'utf8');
}

export function padLength(size: number): number {
  return (BLOCK - (size % BLOCK)) % BLOCK;
}

export function padding(size: number): Buffer {
  return Buffer.alloc(padLength(size));
}

/** The header block(s) of a regular file entry: a ustar header, preceded by a pax `path` header when needed. */
export function fileHeader(name: string, size: number): Buffer {
  const split = splitName(name);
  if (split !== undefined) return ustarHeader(split.name, split.prefix, size, '0');
  const record = paxRecord('path', name);
  const base = path.posix.basename(name).slice(0, 90);
  return Buffer.concat([
    ustarHeader(`PaxHeader/${base}`, '', record.length, 'x'),
    record,
    padding(record.length),
    ustarHeader(base, '', size, '0'),
  ]);
}

// ---------------------------------------------------------------------------------------------------------------------

export interface TarEntry {
  name: string;
  size: number;
  type: 'file' | 'directory';
}

export interface TarVisitor {
  /** Before an entry's data; may refuse it by throwing. */
  entry(entry: TarEntry): void | Promise<void>;
  data(chunk: Buffer): void | Promise<void>;
  entryEnd(): void | Promise<void>;
}

export interface TarLimits {
  extendedHeaderBytes: number;
}

/** Builds the error to throw for a violation; the parser adds what and where. */
export type Violation = (what: string) => Error;

type State = 'header' | 'data' | 'padding' | 'extended' | 'zero' | 'end';

const TYPE_NAMES: Record<string, string> = {
  '1': 'a hard link',
  '2': 'a symbolic link',
  '3': 'a character device',
  '4': 'a block device',
  '6': 'a FIFO',
  '7': 'a contiguous file',
  g: 'a global pax header',
  K: 'a GNU long link name',
  S: 'a GNU sparse file',
  V: 'a volume header',
  M: 'a multi-volume continuation',
  D: 'a GNU dump directory',
  N: 'a GNU old long name',
};

/** pax keys that carry only metadata a restore ignores; anything else (sparse maps, link targets) is refused. */
const HARMLESS_PAX_KEYS = new Set([
  'mtime',
  'atime',
  'ctime',
  'uid',
  'gid',
  'uname',
  'gname',
  'comment',
  'charset',
  'hdrcharset',
]);
const HARMLESS_PAX_PREFIXES = ['SCHILY.xattr.', 'LIBARCHIVE.xattr.'];

const utf8 = new TextDecoder('utf-8', { fatal: true });

export class TarReader {
  private state: State = 'header';
  private readonly block = Buffer.alloc(BLOCK);
  private blockFill = 0;
  private remaining = 0;
  private skip = 0;
  private current = '';
  private extended: { kind: 'pax' | 'gnu'; chunks: Buffer[]; size: number } | undefined;
  private pending: { path?: string; size?: number } | undefined;
  /** Offset of the next byte in the uncompressed archive, for messages. */
  private offset = 0;

  constructor(
    private readonly visitor: TarVisitor,
    private readonly limits: TarLimits,
    private readonly fail: Violation,
  ) {}

  async push(chunk: Buffer): Promise<void> {
    let pos = 0;
    while (pos < chunk.length) {
      const available = chunk.length - pos;
      switch (this.state) {
        case 'header':
        case 'zero': {
          const n = Math.min(BLOCK - this.blockFill, available);
          chunk.copy(this.block, this.blockFill, pos, pos + n);
          this.blockFill += n;
          pos += n;
          this.offset += n;
          if (this.blockFill === BLOCK) {
            this.blockFill = 0;
            await this.onBlock();
          }
          break;
        }
        case 'data': {
          const n = Math.min(this.remaining, available);
          await this.visitor.data(chunk.subarray(pos, pos + n));
          this.remaining -= n;
          pos += n;
          this.offset += n;
          if (this.remaining === 0) await this.endEntry();
          break;
        }
        case 'extended': {
          const ext = this.extended!;
          const n = Math.min(this.remaining, available);
          ext.chunks.push(Buffer.from(chunk.subarray(pos, pos + n)));
          this.remaining -= n;
          pos += n;
          this.offset += n;
          if (this.remaining === 0) this.endExtended();
          break;
        }
        case 'padding': {
          const n = Math.min(this.skip, available);
          this.skip -= n;
          pos += n;
          this.offset += n;
          if (this.skip === 0) this.state = 'header';
          break;
        }
        case 'end': {
          for (let i = pos; i < chunk.length; i++) {
            if (chunk[i] !== 0)
              throw this.fail(
                `has data after the end-of-archive marker (at byte ${this.offset + i - pos} of the archive)`,
              );
          }
          this.offset += available;
          pos = chunk.length;
          break;
        }
      }
    }
  }

  /** After the last chunk: the archive must have ended properly. */
  finish(): void {
    switch (this.state) {
      case 'end':
        return;
      case 'data':
      case 'padding':
        throw this.fail(`is truncated: the archive ends inside ${JSON.stringify(this.current)}`);
      case 'extended':
        throw this.fail('is truncated: the archive ends inside an extended header');
      case 'zero':
        throw this.fail('is truncated: the end-of-archive marker is incomplete');
      case 'header':
        throw this.fail(
          this.blockFill === 0
            ? 'is truncated: the archive has no end-of-archive marker'
            : 'is truncated: the archive ends inside a header',
        );
    }
  }

  private async onBlock(): Promise<void> {
    const block = this.block;
    const at = this.offset - BLOCK;
    if (isZero(block)) {
      if (this.pending !== undefined)
        throw this.fail(`has an extended header not followed by an entry (at byte ${at})`);
      this.state = this.state === 'zero' ? 'end' : 'zero';
      return;
    }
    if (this.state === 'zero') {
      // Most readers stop at the first zero block; some read on. An entry there would be seen by one and not the other.
      throw this.fail(`has an entry after a zero block (at byte ${at}): entries hidden past an end-of-archive block`);
    }
    this.checkHeader(block, at);
    const gnu = block.toString('latin1', 257, 265) === 'ustar  \0';
    const rawName = this.field(block, 0, 100, at);
    const prefix = gnu ? '' : this.field(block, 345, 155, at);
    const headerName = prefix === '' ? rawName : `${prefix}/${rawName}`;
    const type = block[156] === 0 ? '0' : String.fromCharCode(block[156]!);
    let size = this.octal(block, 124, 12, 'size', at);

    if (type === 'x' || type === 'L') {
      if (this.pending !== undefined || this.extended !== undefined)
        throw this.fail(`has two extended headers in a row (at byte ${at})`);
      if (size > this.limits.extendedHeaderBytes) {
        throw this.fail(
          `has an extended header of ${size} bytes (at byte ${at}), over the cap of ${this.limits.extendedHeaderBytes}`,
        );
      }
      this.extended = { kind: type === 'x' ? 'pax' : 'gnu', chunks: [], size };
      this.current = 'an extended header';
      this.remaining = size;
      this.skip = padLength(size);
      if (size === 0) this.endExtended();
      else this.state = 'extended';
      return;
    }

    const name = this.pending?.path ?? headerName;
    if (this.pending?.size !== undefined) size = this.pending.size;
    this.pending = undefined;
    const shown = JSON.stringify(name);
    const kind = TYPE_NAMES[type];
    if (kind !== undefined) {
      const target = type === '1' || type === '2' ? ` to ${JSON.stringify(this.field(block, 157, 100, at))}` : '';
      throw this.fail(`entry ${shown} is ${kind}${target}; a bundle holds regular files only`);
    }
    if (type !== '0' && type !== '5')
      throw this.fail(
        `entry ${shown} has the unsupported type ${JSON.stringify(type)}; a bundle holds regular files only`,
      );
    const directory = type === '5';
    const problem = entryNameProblem(name, directory);
    if (problem !== undefined) throw this.fail(`entry ${shown} ${problem}`);
    if (directory && size !== 0) throw this.fail(`directory entry ${shown} claims ${size} bytes of data`);
    this.current = name;
    await this.visitor.entry({ name, size, type: directory ? 'directory' : 'file' });
    this.remaining = size;
    this.skip = padLength(size);
    if (size === 0) await this.endEntry();
    else this.state = 'data';
  }

  private async endEntry(): Promise<void> {
    await this.visitor.entryEnd();
    this.state = this.skip === 0 ? 'header' : 'padding';
  }

  private endExtended(): void {
    const ext = this.extended!;
    this.extended = undefined;
    const data = Buffer.concat(ext.chunks);
    this.pending = ext.kind === 'pax' ? this.parsePax(data) : { path: this.gnuLongName(data) };
    this.state = this.skip === 0 ? 'header' : 'padding';
  }

  private parsePax(data: Buffer): { path?: string; size?: number } {
    const out: { path?: string; size?: number } = {};
    const seen = new Set<string>();
    let pos = 0;
    while (pos < data.length) {
      const space = data.indexOf(0x20, pos);
      const digits = space < 0 ? '' : data.toString('latin1', pos, space);
      const length = /^[1-9][0-9]{0,9}$/.test(digits) ? Number(digits) : NaN;
      if (!(length > digits.length + 1) || pos + length > data.length || data[pos + length - 1] !== 0x0a) {
        throw this.fail('has a malformed pax extended header');
      }
      const record = data.subarray(space + 1, pos + length - 1);
      const eq = record.indexOf(0x3d);
      if (eq <= 0) throw this.fail('has a malformed pax extended header record');
      const key = this.decode(record.subarray(0, eq), 'a pax record key');
      const value = this.decode(record.subarray(eq + 1), `the pax record ${JSON.stringify(key)}`);
      if (seen.has(key)) throw this.fail(`has the pax record ${JSON.stringify(key)} twice in one header`);
      seen.add(key);
      if (key === 'path') out.path = value;
      else if (key === 'size') {
        if (!/^[0-9]{1,15}$/.test(value))
          throw this.fail(`has a pax size record that is not a number: ${JSON.stringify(value)}`);
        out.size = Number(value);
      } else if (!HARMLESS_PAX_KEYS.has(key) && !HARMLESS_PAX_PREFIXES.some((p) => key.startsWith(p))) {
        throw this.fail(`has the unsupported pax record ${JSON.stringify(key)}`);
      }
      pos += length;
    }
    return out;
  }

  private gnuLongName(data: Buffer): string {
    const nul = data.indexOf(0);
    const end = nul < 0 ? data.length : nul;
    for (let i = end; i < data.length; i++) {
      if (data[i] !== 0) throw this.fail('has bytes hidden after a NUL in a GNU long name');
    }
    return this.decode(data.subarray(0, end), 'a GNU long name');
  }

  private checkHeader(block: Buffer, at: number): void {
    const magic = block.toString('latin1', 257, 265);
    if (magic !== 'ustar\u000000' && magic !== 'ustar  \0')
      throw this.fail(`has a header that is not ustar (at byte ${at})`);
    const stored = this.octal(block, 148, 8, 'checksum', at);
    let unsigned = 0;
    let signed = 0;
    for (let i = 0; i < BLOCK; i++) {
      const byte = i >= 148 && i < 156 ? 0x20 : block[i]!;
      unsigned += byte;
      signed += byte > 127 ? byte - 256 : byte;
    }
    if (stored !== unsigned && stored !== signed) throw this.fail(`has a header with a wrong checksum (at byte ${at})`);
  }

  /** A NUL-terminated text field; bytes after the NUL would show a different name to a careless reader. */
  private field(block: Buffer, offset: number, length: number, at: number): string {
    const raw = block.subarray(offset, offset + length);
    const nul = raw.indexOf(0);
    const end = nul < 0 ? length : nul;
    for (let i = end; i < length; i++) {
      if (raw[i] !== 0) throw this.fail(`has a header with bytes hidden after a NUL in a name field (at byte ${at})`);
    }
    return this.decode(raw.subarray(0, end), `the header at byte ${at}`);
  }

  private octal(block: Buffer, offset: number, length: number, what: string, at: number): number {
    const text = block.toString('latin1', offset, offset + length);
    const match = /^ *([0-7]{1,12}) *[\0 ]*$/.exec(text);
    if (match === null) throw this.fail(`has a header with an invalid ${what} field (at byte ${at})`);
    return parseInt(match[1]!, 8);
  }

  private decode(bytes: Buffer, what: string): string {
    try {
      return utf8.decode(bytes);
    } catch {
      throw this.fail(`has ${what} that is not valid UTF-8`);
    }
  }
}

function isZero(block: Buffer): boolean {
  for (let i = 0; i < block.length; i++) if (block[i] !== 0) return false;
  return true;
}

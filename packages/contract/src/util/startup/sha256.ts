/**
 * SHA-256 (FIPS 180-4) of a text or a file's bytes, without node:crypto. A reconcile hashes the few native files it
 * manages (a few KiB each) to keep its ledger; loading node:crypto for that (with node:stream and everything else it
 * loads) cost it more than all the rest of its own work (src/util/startup/README.md). The compression function is
 * WebAssembly (sha256.wat), which V8 compiles in microseconds; plain JavaScript, interpreted in a short-lived
 * process, was slower than loading node:crypto. Streams of bulk data (bundles, transcripts) keep node:crypto's hash.
 */
import { SHA256_WASM } from './sha256-wasm.generated.js';

/** The memory layout sha256.wat states: the hash value at 0, the blocks to compress from 1024 to the page's end. */
const BLOCKS_AT = 1024;
const BLOCKS_BYTES = 65536 - BLOCKS_AT;
const INITIAL = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

interface Compressor {
  memory: { readonly buffer: ArrayBuffer };
  compress(count: number): void;
}

/** What this module uses of Node.js's WebAssembly global (@types/node does not declare it; lib.dom would). */
interface WebAssemblyApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { readonly exports: object };
}

/** The compiled module; null where this Node.js runs without WebAssembly (`--jitless`). */
let compiled: Compressor | null | undefined;

function compressor(): Compressor | null {
  if (compiled === undefined) {
    try {
      const wasm = (globalThis as unknown as { WebAssembly: WebAssemblyApi }).WebAssembly;
      compiled = new wasm.Instance(new wasm.Module(Buffer.from(SHA256_WASM, 'base64')))
        .exports as unknown as Compressor;
    } catch {
      compiled = null;
    }
  }
  return compiled;
}

/** The SHA-256 of `data` (a string is hashed as UTF-8), as 64 lowercase hex digits. */
export function sha256Hex(data: string | Uint8Array): string {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const wasm = compressor();
  if (wasm === null) return process.getBuiltinModule('node:crypto').createHash('sha256').update(bytes).digest('hex');
  const { memory, compress } = wasm;
  const heap = new Uint8Array(memory.buffer);
  const view = new DataView(memory.buffer);
  INITIAL.forEach((word, i) => {
    view.setUint32(i * 4, word, true);
  });

  // Whole blocks, as many as the memory holds at a time.
  const whole = bytes.length - (bytes.length % 64);
  for (let at = 0; at < whole; at += BLOCKS_BYTES) {
    const chunk = bytes.subarray(at, Math.min(whole, at + BLOCKS_BYTES));
    heap.set(chunk, BLOCKS_AT);
    compress(chunk.length / 64);
  }
  // The rest, a 0x80 byte, zeros, and the message's length in bits as a 64-bit big-endian number: one or two blocks.
  const rest = bytes.subarray(whole);
  const tail = rest.length < 56 ? 64 : 128;
  heap.fill(0, BLOCKS_AT, BLOCKS_AT + tail);
  heap.set(rest, BLOCKS_AT);
  heap[BLOCKS_AT + rest.length] = 0x80;
  view.setUint32(BLOCKS_AT + tail - 8, Math.floor(bytes.length / 0x20000000));
  view.setUint32(BLOCKS_AT + tail - 4, (bytes.length * 8) >>> 0);
  compress(tail / 64);

  let hex = '';
  for (let i = 0; i < 8; i++)
    hex += view
      .getUint32(i * 4, true)
      .toString(16)
      .padStart(8, '0');
  return hex;
}

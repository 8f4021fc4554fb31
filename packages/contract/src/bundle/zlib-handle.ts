/**
 * node:zlib's native handle, driven directly so that zlib writes into output buffers that are reused. Node's zlib
 * streams and one-shot functions put every output byte in a fresh buffer (no public API takes the caller's): for a
 * bundle that is its whole compressed size when writing and its whole decompressed size when reading, garbage that
 * waits for the GC, resident, after costing page faults. The handle is the one node:zlib's streams drive,
 * with the same calls, and its work runs on the threadpool as theirs does. With public zlib in its place, a bundle's
 * writer holds far more memory and takes longer (bench/bundle.mjs shows both); the handle being private, its test
 * names the Node.js versions it was checked on (test/bundle/zlib-handle.test.ts).
 */
import zlib from 'node:zlib';

interface NativeZlib {
  init(
    windowBits: number,
    level: number,
    memLevel: number,
    strategy: number,
    writeState: Uint32Array,
    afterWrite: () => void,
    dictionary: Buffer | undefined,
  ): void;
  write(
    flush: number,
    input: Uint8Array,
    inOffset: number,
    inLength: number,
    output: Uint8Array,
    outOffset: number,
    outLength: number,
  ): void;
  close(): void;
  onerror: (message: string, errno: number, code: string) => void;
}

type NativeZlibClass = new (mode: number) => NativeZlib;

let nativeClass: NativeZlibClass | undefined;

function nativeZlib(): NativeZlibClass {
  if (nativeClass === undefined) {
    const stream = zlib.createInflateRaw();
    const handle = (stream as unknown as { _handle?: NativeZlib | null })._handle;
    stream.destroy();
    if (typeof handle?.init !== 'function' || typeof handle.write !== 'function') {
      throw new Error('this Node.js has no zlib handle to drive: cannot read or write bundles');
    }
    nativeClass = handle.constructor as NativeZlibClass;
  }
  return nativeClass;
}

export interface ZlibHandleOptions {
  mode: number;
  level?: number;
  dictionary?: Buffer;
  /** After each `write` that succeeded (the threadpool's work is done; `state` holds its result). */
  afterWrite: (handle: ZlibHandle) => void;
  /** After a `write` that failed; the handle is closed. */
  failed: (error: Error) => void;
}

export class ZlibHandle {
  /** After each write: [output room left, input left]. */
  readonly state = new Uint32Array(2);
  private readonly native: NativeZlib;
  private readonly init: (dictionary: Buffer | undefined) => void;
  private closed = false;

  constructor(options: ZlibHandleOptions) {
    this.native = new (nativeZlib())(options.mode);
    this.native.onerror = (message, errno, code) => {
      this.close();
      options.failed(Object.assign(new Error(message), { errno, code }));
    };
    const level = options.level ?? zlib.constants.Z_DEFAULT_COMPRESSION;
    // The callback holds this object, and with it `state`, which the native side writes into, for as long as it lives.
    const afterWrite = () => options.afterWrite(this);
    this.init = (dictionary) =>
      this.native.init(15, level, 8, zlib.constants.Z_DEFAULT_STRATEGY, this.state, afterWrite, dictionary);
    this.init(options.dictionary);
  }

  /**
   * Runs zlib on the threadpool from `input` at `inOffset` into `output`; `afterWrite` or `failed` follows. Both
   * buffers must be kept (and left alone) until then: zlib reads and writes them from another thread.
   */
  write(flush: number, input: Uint8Array, inOffset: number, output: Uint8Array): void {
    this.native.write(flush, input, inOffset, input.length - inOffset, output, 0, output.length);
  }

  /** Frees zlib's state; not while a write is on the threadpool. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    // The handle keeps its own copy of the dictionary after close, until a full GC collects the handle (which a long
    // write of little garbage never makes: 32 KiB per bundle block). node:zlib's `init` swaps it for an empty one, and
    // frees it, without touching zlib's state, which close() then ends.
    this.init(undefined);
    this.native.close();
  }
}

export interface InflateStep {
  /** Bytes written to the start of the output buffer. */
  produced: number;
  /** Input bytes used. */
  consumed: number;
}

interface Waiting {
  input: Buffer;
  output: Buffer;
  inputLength: number;
  resolve: (step: InflateStep) => void;
  reject: (error: Error) => void;
}

/**
 * Raw inflate in bounded steps on the threadpool, each into an output buffer the caller owns (and may reuse once the
 * step has resolved): the caller works on one buffer while zlib fills the other.
 */
export class RawInflater {
  private readonly handle: ZlibHandle;
  /** The step in flight, holding the buffers zlib is using. */
  private waiting: Waiting | undefined;

  constructor() {
    this.handle = new ZlibHandle({
      mode: zlib.constants.INFLATERAW,
      afterWrite: (handle) => {
        const w = this.done();
        w.resolve({ produced: w.output.length - handle.state[0]!, consumed: w.inputLength - handle.state[1]! });
      },
      failed: (error) => this.done().reject(error),
    });
  }

  /**
   * Inflates `input` from `offset` into `output` until the output is full, the input is used up or the deflate stream
   * ends. `last`: no input follows, so a stream that has not ended fails (Z_BUF_ERROR). Output not filled means the
   * input was used up or the stream ended; with input left over, it ended. Rejects with zlib's error (with its Z_*
   * code) for damaged data. One step at a time.
   */
  step(input: Buffer, offset: number, output: Buffer, last: boolean): Promise<InflateStep> {
    return new Promise((resolve, reject) => {
      this.waiting = { input, output, inputLength: input.length - offset, resolve, reject };
      this.handle.write(last ? zlib.constants.Z_FINISH : zlib.constants.Z_NO_FLUSH, input, offset, output);
    });
  }

  /** Frees zlib's state; only once no step is in flight. */
  close(): void {
    this.handle.close();
  }

  private done(): Waiting {
    const w = this.waiting!;
    this.waiting = undefined;
    return w;
  }
}

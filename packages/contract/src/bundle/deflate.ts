/**
 * pigz's technique inside one process: the tar stream is cut into fixed-size blocks, each deflated on the libuv
 * threadpool (a few at once), primed with the 32 KiB before it as a dictionary and ended byte-aligned (Z_SYNC_FLUSH),
 * the last with Z_FINISH. Concatenated in order they are one standard raw deflate stream. The cut points depend only
 * on the bytes, never on timing, so equal input still gives an equal bundle. Each block is compressed into an output
 * buffer that is reused (zlib-handle.ts).
 */
import zlib from 'node:zlib';
import { ZlibHandle } from './zlib-handle.js';

/** Large enough that the per-block restart costs little ratio, small enough that several in flight stay cheap. */
export const DEFLATE_BLOCK = 256 * 1024;
/** Blocks compressing at once: the machine's cores are kept busy and one threadpool thread stays free for file I/O. */
export const DEFLATE_DEPTH = 3;
const WINDOW = 32 * 1024;
const LEVEL = 6;

/**
 * Deflates `input` on the threadpool into `output` (copying it out whenever it fills) and returns the compressed
 * pieces; the last one is a view of `output`, valid until `output` is reused.
 */
function deflateBlock(input: Buffer, output: Buffer, dictionary: Buffer | undefined, flush: number): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const pieces: Buffer[] = [];
    const deflater = new ZlibHandle({
      mode: zlib.constants.DEFLATERAW,
      level: LEVEL,
      ...(dictionary === undefined ? {} : { dictionary }),
      afterWrite: (handle) => {
        const [outputLeft, inputLeft] = handle.state;
        if (outputLeft === 0) {
          // Full: more may follow (incompressible data).
          pieces.push(Buffer.from(output));
          handle.write(flush, input, input.length - inputLeft!, output);
          return;
        }
        handle.close();
        pieces.push(output.subarray(0, output.length - outputLeft!));
        resolve(pieces);
      },
      failed: reject,
    });
    deflater.write(flush, input, 0, output);
  });
}

interface Slot {
  input: Buffer;
  /** Half a block: transcripts compress about 4:1; anything that does not fit is copied out. */
  output: Buffer;
}

interface InFlight {
  slot: Slot;
  /** Compressed and handed to the output, in order. */
  done: Promise<void>;
}

export class ParallelDeflate {
  private readonly free: Slot[] = [];
  private readonly inFlight: InFlight[] = [];
  private allocated = 0;
  private slot: Slot | undefined;
  private fill = 0;
  private dictionary: Buffer | undefined;
  private written: Promise<void> = Promise.resolve();
  private failure: { error: unknown } | undefined;
  private readonly dictionaries: Buffer[] = [];
  private serial = 0;

  constructor(
    private readonly output: (chunk: Buffer) => Promise<void>,
    private readonly blockSize = DEFLATE_BLOCK,
    private readonly depth = DEFLATE_DEPTH,
  ) {}

  /** Free room in the current block, to be filled (a file read straight into it) and then `commit`ted. */
  async space(): Promise<Buffer> {
    this.check();
    if (this.slot === undefined) {
      if (this.free.length === 0 && this.allocated > this.depth) await this.retireOldest();
      this.slot = this.free.pop() ?? this.allocate();
      this.fill = 0;
    }
    return this.slot.input.subarray(this.fill);
  }

  /** `bytes` of the room `space` gave now hold data; a full block goes to the threadpool at once. */
  commit(bytes: number): void {
    this.fill += bytes;
    if (this.fill === this.blockSize) this.dispatch(false);
  }

  /** Copies `chunk` in (headers, small or redacted content). */
  async write(chunk: Buffer): Promise<void> {
    let offset = 0;
    while (offset < chunk.length) {
      const room = await this.space();
      const n = chunk.copy(room, 0, offset);
      offset += n;
      this.commit(n);
    }
  }

  /** Sends the last block (Z_FINISH) and waits until every block has been output. */
  async end(): Promise<void> {
    this.check();
    this.dispatch(true);
    await this.written;
    this.check();
  }

  /** After a failure: waits until nothing is compressing or being output, so the output may be closed. */
  async settle(error: unknown): Promise<void> {
    this.failure ??= { error };
    await Promise.allSettled([...this.inFlight.map((f) => f.done), this.written]);
  }

  private allocateDictionary(): Buffer {
    const buffer = Buffer.allocUnsafe(WINDOW);
    this.dictionaries.push(buffer);
    return buffer;
  }

  private allocate(): Slot {
    this.allocated++;
    return { input: Buffer.allocUnsafe(this.blockSize), output: Buffer.allocUnsafe(Math.ceil(this.blockSize / 2)) };
  }

  private check(): void {
    if (this.failure !== undefined) throw this.failure.error;
  }

  private async retireOldest(): Promise<void> {
    const oldest = this.inFlight.shift()!;
    await oldest.done;
    this.free.push(oldest.slot);
    this.check();
  }

  private dispatch(final: boolean): void {
    // The last block may be empty and have no slot of its own: Z_FINISH alone gives a few bytes.
    const slot = this.slot ?? { input: Buffer.alloc(0), output: Buffer.allocUnsafe(64) };
    const input = slot.input.subarray(0, this.slot === undefined ? 0 : this.fill);
    const dictionary = this.dictionary;
    if (!final) {
      // Copied: the block's buffer is reused once it is compressed, while the next block may still need its tail. The
      // copies rotate through depth + 2 buffers: a block's dictionary is rewritten only after the block was retired.
      const copy =
        this.dictionaries.length <= this.depth + 1
          ? this.allocateDictionary()
          : this.dictionaries[this.serial % this.dictionaries.length]!;
      this.serial++;
      const tail = input.subarray(Math.max(0, input.length - WINDOW));
      tail.copy(copy);
      this.dictionary = copy.subarray(0, tail.length);
    }
    const owned = this.slot !== undefined;
    this.slot = undefined;
    this.fill = 0;
    const compressed = deflateBlock(
      input,
      slot.output,
      dictionary,
      final ? zlib.constants.Z_FINISH : zlib.constants.Z_SYNC_FLUSH,
    );
    const previous = this.written;
    const done = (async () => {
      const pieces = await compressed;
      await previous;
      // Nothing more reaches the output once anything failed: it may be about to be closed.
      for (const piece of pieces) {
        this.check();
        await this.output(piece);
      }
    })();
    done.catch((error: unknown) => {
      this.failure ??= { error };
    });
    this.written = done;
    if (owned) this.inFlight.push({ slot, done });
  }
}

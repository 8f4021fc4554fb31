/**
 * pigz's technique inside one process: the tar stream is cut into fixed-size blocks, each deflated on the libuv
 * threadpool (a few at once), primed with the 32 KiB before it as a dictionary and ended byte-aligned (Z_SYNC_FLUSH),
 * the last with Z_FINISH. Concatenated in order they are one standard raw deflate stream. The cut points depend only
 * on the bytes, never on timing, so equal input still gives an equal bundle. Each block is compressed by a zlib state and
 * into an output buffer that both serve block after block (zlib-handle.ts).
 */
import zlib from 'node:zlib';
import { ZlibHandle } from './zlib-handle.js';

/** Large enough that the per-block restart costs little ratio, small enough that several in flight stay cheap. */
export const DEFLATE_BLOCK = 256 * 1024;
/** Blocks compressing at once: the machine's cores are kept busy and one threadpool thread stays free for file I/O. */
export const DEFLATE_DEPTH = 3;
const WINDOW = 32 * 1024;
const LEVEL = 6;

interface DeflateJob {
  input: Buffer;
  output: Buffer;
  flush: number;
  pieces: Buffer[];
  resolve: (pieces: Buffer[]) => void;
  reject: (error: Error) => void;
}

/**
 * One zlib deflate state, reused block after block: each block restarts it with its own dictionary. Compresses into
 * the slot's output buffer (copying it out whenever it fills) and returns the compressed pieces; the last one is a view
 * of that buffer, valid until the slot is reused.
 */
class BlockDeflater {
  private readonly handle: ZlibHandle;
  /** The block being compressed. */
  private job: DeflateJob | undefined;
  private started = false;

  constructor() {
    this.handle = new ZlibHandle({
      mode: zlib.constants.DEFLATERAW,
      level: LEVEL,
      afterWrite: (handle) => {
        const job = this.job!;
        const [outputLeft, inputLeft] = handle.state;
        if (outputLeft === 0) {
          // Full: more may follow (incompressible data).
          job.pieces.push(Buffer.from(job.output));
          handle.write(job.flush, job.input, job.input.length - inputLeft!, job.output);
          return;
        }
        this.job = undefined;
        job.pieces.push(job.output.subarray(0, job.output.length - outputLeft!));
        job.resolve(job.pieces);
      },
      failed: (error) => {
        const job = this.job!;
        this.job = undefined;
        job.reject(error);
      },
    });
  }

  deflate(input: Buffer, output: Buffer, dictionary: Buffer | undefined, flush: number): Promise<Buffer[]> {
    // A fresh handle already holds no dictionary; its first stream needs no restart unless it has one.
    if (this.started || dictionary !== undefined) this.handle.restart(dictionary);
    this.started = true;
    return new Promise((resolve, reject) => {
      this.job = { input, output, flush, pieces: [], resolve, reject };
      this.handle.write(flush, input, 0, output);
    });
  }

  /** Frees zlib's state; only once no block is being compressed. */
  close(): void {
    this.handle.close();
  }
}

interface Slot {
  input: Buffer;
  /** Half a block: transcripts compress about 4:1; anything that does not fit is copied out. */
  output: Buffer;
  deflater: BlockDeflater;
}

interface InFlight {
  slot: Slot;
  /** Compressed and handed to the output, in order. */
  done: Promise<void>;
}

export class ParallelDeflate {
  private readonly free: Slot[] = [];
  private readonly inFlight: InFlight[] = [];
  /** Every slot made; each keeps its zlib state until the stream ends. */
  private readonly slots: Slot[] = [];
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
      if (this.free.length === 0 && this.slots.length > this.depth) await this.retireOldest();
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
    // The last block may be empty: Z_FINISH alone gives a few bytes.
    await this.space();
    this.dispatch(true);
    await this.written;
    this.closeDeflaters();
    this.check();
  }

  /** After a failure: waits until nothing is compressing or being output, so the output may be closed. */
  async settle(error: unknown): Promise<void> {
    this.failure ??= { error };
    await Promise.allSettled([...this.inFlight.map((f) => f.done), this.written]);
    this.closeDeflaters();
  }

  private closeDeflaters(): void {
    for (const slot of this.slots) slot.deflater.close();
  }

  private allocateDictionary(): Buffer {
    const buffer = Buffer.allocUnsafe(WINDOW);
    this.dictionaries.push(buffer);
    return buffer;
  }

  private allocate(): Slot {
    const slot = {
      input: Buffer.allocUnsafe(this.blockSize),
      output: Buffer.allocUnsafe(Math.ceil(this.blockSize / 2)),
      deflater: new BlockDeflater(),
    };
    this.slots.push(slot);
    return slot;
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
    const slot = this.slot!;
    const input = slot.input.subarray(0, this.fill);
    const dictionary = this.dictionary;
    if (!final) {
      // Copied: the block's buffer is reused once it is compressed, while the next block may still need its tail. The
      // copies rotate through depth + 2 buffers: a block's dictionary is rewritten only after the block was retired.
      const copy = this.dictionaries.length <= this.depth + 1 ? this.allocateDictionary() : this.dictionaries[this.serial % this.dictionaries.length]!;
      this.serial++;
      const tail = input.subarray(Math.max(0, input.length - WINDOW));
      tail.copy(copy);
      this.dictionary = copy.subarray(0, tail.length);
    }
    this.slot = undefined;
    this.fill = 0;
    const compressed = slot.deflater.deflate(input, slot.output, dictionary, final ? zlib.constants.Z_FINISH : zlib.constants.Z_SYNC_FLUSH);
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
    this.inFlight.push({ slot, done });
  }
}

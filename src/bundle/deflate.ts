/**
 * pigz's technique inside one process: the tar stream is cut into fixed-size blocks, each deflated on the libuv
 * threadpool (a few at once), primed with the 32 KiB before it as a dictionary and ended byte-aligned (Z_SYNC_FLUSH),
 * the last with Z_FINISH. Concatenated in order they are one standard raw deflate stream. The cut points depend only
 * on the bytes, never on timing, so equal input still gives an equal bundle.
 */
import zlib from 'node:zlib';

/** Large enough that the per-block restart costs little ratio, small enough that several in flight stay cheap. */
export const DEFLATE_BLOCK = 256 * 1024;
/** Blocks compressing at once: the machine's cores are kept busy and one threadpool thread stays free for file I/O. */
export const DEFLATE_DEPTH = 3;
const WINDOW = 32 * 1024;
/** About one block's output at transcript ratios. */
const OUTPUT_CHUNK = 64 * 1024;
const LEVEL = 6;

interface InFlight {
  buffer: Buffer;
  /** Compressed and handed to the output, in order. */
  done: Promise<void>;
}

export class ParallelDeflate {
  private readonly free: Buffer[] = [];
  private readonly inFlight: InFlight[] = [];
  private allocated = 0;
  private block: Buffer | undefined;
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
    if (this.block === undefined) {
      if (this.free.length === 0 && this.allocated > this.depth) await this.retireOldest();
      this.block = this.free.pop() ?? this.allocate();
      this.fill = 0;
    }
    return this.block.subarray(this.fill);
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

  private allocate(): Buffer {
    this.allocated++;
    return Buffer.allocUnsafe(this.blockSize);
  }

  private check(): void {
    if (this.failure !== undefined) throw this.failure.error;
  }

  private async retireOldest(): Promise<void> {
    const oldest = this.inFlight.shift()!;
    await oldest.done;
    this.free.push(oldest.buffer);
    this.check();
  }

  private dispatch(final: boolean): void {
    const buffer = this.block ?? Buffer.alloc(0);
    const input = buffer.subarray(0, this.block === undefined ? 0 : this.fill);
    const dictionary = this.dictionary;
    if (!final) {
      // Copied: the block's buffer is reused once it is compressed, while the next block may still need its tail. The
      // copies rotate through depth + 2 buffers: a block's dictionary is rewritten only after the block was retired.
      const slot = this.dictionaries.length <= this.depth + 1 ? this.allocateDictionary() : this.dictionaries[this.serial % this.dictionaries.length]!;
      this.serial++;
      const tail = input.subarray(Math.max(0, input.length - WINDOW));
      tail.copy(slot);
      this.dictionary = slot.subarray(0, tail.length);
    }
    this.block = undefined;
    this.fill = 0;
    const compressed = new Promise<Buffer[]>((resolve, reject) => {
      // A stream rather than zlib.deflateRaw: its output chunks are kept as they are, not concatenated into one more
      // buffer, since garbage buffers pile up (as RSS) faster than the few JavaScript objects here trigger a GC.
      const stream = zlib.createDeflateRaw({
        level: LEVEL,
        chunkSize: OUTPUT_CHUNK,
        ...(dictionary === undefined ? {} : { dictionary }),
        finishFlush: final ? zlib.constants.Z_FINISH : zlib.constants.Z_SYNC_FLUSH,
      });
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.once('end', () => resolve(chunks));
      stream.once('error', reject);
      stream.end(input);
    });
    const previous = this.written;
    const done = (async () => {
      const chunks = await compressed;
      await previous;
      // Nothing more reaches the output once anything failed: it may be about to be closed.
      for (const chunk of chunks) {
        this.check();
        await this.output(chunk);
      }
    })();
    done.catch((error: unknown) => {
      this.failure ??= { error };
    });
    this.written = done;
    if (buffer.length > 0) this.inFlight.push({ buffer, done });
  }
}

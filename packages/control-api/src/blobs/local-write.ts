/** The local blob store's writes: an upload's bytes in batches, and a stored object copied while it is hashed. */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { writeBuffers } from '@blue-agent/contract/util/fs.js';
import type { StoredObject } from './types.js';

/**
 * The bytes of an upload gathered before they are written. Written chunk by chunk, each 64 KiB socket read waited for
 * its own trip through the thread pool and an upload went at the pace of those trips; batches of this size make far
 * fewer (bench/upload.mjs). An upload holds two
 * batches at most: the one being written and the one filling.
 */
const WRITE_BATCH = 512 * 1024;

const WRITE_BATCH_CHUNKS = 256;

/**
 * Writes the chunks pushed to it (an upload's socket reads, 64 KiB at most each) in batches of WRITE_BATCH bytes or
 * WRITE_BATCH_CHUNKS chunks, whichever comes first, one batch on the thread pool while the next fills: memory stays
 * within two batches, and a client trickling bytes cannot make a batch of thousands of tiny Buffers.
 */
export function batchedWriter(handle: Pick<FileHandle, 'write' | 'writev'>): {
  push(chunk: Buffer): Promise<void>;
  end(): Promise<void>;
  settled(): Promise<void>;
} {
  let batch: Buffer[] = [];
  let bytes = 0;
  let writing: Promise<void> | undefined;
  const flush = async (): Promise<void> => {
    await writing;
    const buffers = batch;
    batch = [];
    bytes = 0;
    writing = writeBuffers(handle, buffers);
    // Its failure is taken where it is awaited; until then it must not count as an unhandled rejection.
    writing.catch(() => undefined);
  };
  return {
    async push(chunk) {
      batch.push(chunk);
      bytes += chunk.length;
      if (bytes >= WRITE_BATCH || batch.length >= WRITE_BATCH_CHUNKS) await flush();
    },
    async end() {
      await flush();
      await writing;
    },
    /** Once no write is under way, whatever its outcome: before the file is closed. */
    async settled() {
      await writing?.catch(() => undefined);
    },
  };
}

/** Copies `file` to the new file `to`, hashing the bytes on the way; undefined when there is no such file. */
export async function hashCopy(file: string, to: string): Promise<StoredObject | undefined> {
  const hash = createHash('sha256');
  let size = 0;
  const copy = await open(to, 'wx', 0o600);
  try {
    for await (const chunk of createReadStream(file)) {
      size += (chunk as Buffer).length;
      hash.update(chunk as Buffer);
      await copy.write(chunk as Buffer);
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'EISDIR') return undefined;
    throw error;
  } finally {
    await copy.close();
  }
  return { size, sha256: hash.digest('hex') };
}

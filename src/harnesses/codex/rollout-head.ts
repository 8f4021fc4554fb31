/**
 * The start of a Codex rollout, plain (`.jsonl`) or zstd-compressed (`.jsonl.zst`): its first line is the
 * `session_meta` both capture and restore read. Opened without following links; at most `maxBytes` are returned.
 */
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import * as zlib from 'node:zlib';

const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** Why a rollout's start could not be read; callers turn it into their own error. */
export class RolloutHeadError extends Error {
  constructor(
    readonly kind: 'no-zstd' | 'damaged',
    message: string,
  ) {
    super(message);
  }
}

export async function readRolloutHead(file: string, maxBytes: number): Promise<Buffer> {
  return file.endsWith('.zst') ? zstdHead(file, maxBytes) : plainHead(file, maxBytes);
}

async function plainHead(file: string, maxBytes: number): Promise<Buffer> {
  const handle = await open(file, READ_FLAGS);
  try {
    const buffer = Buffer.alloc(maxBytes);
    const { bytesRead } = await handle.read(buffer, 0, maxBytes, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

async function zstdHead(file: string, maxBytes: number): Promise<Buffer> {
  if (typeof zlib.createZstdDecompress !== 'function') throw new RolloutHeadError('no-zstd', 'this Node.js has no zstd support');
  const handle = await open(file, READ_FLAGS);
  const source = handle.createReadStream();
  const decompress = zlib.createZstdDecompress();
  source.on('error', (error) => decompress.destroy(error));
  source.pipe(decompress);
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of decompress) {
      chunks.push(chunk as Buffer);
      total += (chunk as Buffer).length;
      if (total >= maxBytes) break;
    }
  } catch (error) {
    throw new RolloutHeadError('damaged', `not a readable zstd stream (${(error as Error).message})`);
  } finally {
    source.destroy();
    decompress.destroy();
    await handle.close().catch(() => undefined);
  }
  return Buffer.concat(chunks).subarray(0, maxBytes);
}

/**
 * The start of a Codex rollout, plain (`.jsonl`) or zstd-compressed (`.jsonl.zst`): its first line is the
 * `session_meta` both capture and restore read. Opened and read by the caller's safe-read rule; at most `maxBytes`
 * are returned.
 */
import { openChecked, readChecked, type SafeReadOptions } from '@blue-agent/contract/util/safe-read.js';

/** Why a rollout's start could not be read; callers turn it into their own error. */
export class RolloutHeadError extends Error {
  constructor(
    readonly kind: 'no-zstd' | 'damaged',
    message: string,
  ) {
    super(message);
  }
}

export async function readRolloutHead(file: string, maxBytes: number, rule: SafeReadOptions): Promise<Buffer> {
  return file.endsWith('.zst')
    ? zstdHead(file, maxBytes, rule)
    : (await readChecked(file, { ...rule, optional: false, head: maxBytes }))!;
}

async function zstdHead(file: string, maxBytes: number, rule: SafeReadOptions): Promise<Buffer> {
  // node:zlib loads with the first compressed rollout, not with every command that knows Codex.
  const zlib = process.getBuiltinModule('node:zlib');
  if (typeof zlib.createZstdDecompress !== 'function')
    throw new RolloutHeadError('no-zstd', 'this Node.js has no zstd support');
  const { handle } = (await openChecked(file, { ...rule, optional: false }))!;
  const source = handle.createReadStream({ start: 0 });
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

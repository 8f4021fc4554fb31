/**
 * The zlib handle driven directly: raw inflate in bounded steps into buffers the caller reuses, with zlib's errors,
 * and the parallel deflater's blocks, which must be exactly what zlib itself makes of each block and its dictionary;
 * and the Node.js versions this was checked on, since the handle is node:zlib's private one.
 */
import { randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ParallelDeflate } from '../../src/bundle/deflate.js';
import { RawInflater } from '../../src/bundle/zlib-handle.js';

const text = Buffer.from(
  Array.from({ length: 20_000 }, (_, i) => `{"turn":${i},"text":"words ${i % 89} again"}\n`).join(''),
);

/** Steps `input` through in pieces of `piece` bytes, two output buffers alternating; the output. */
async function inflateAll(inflater: RawInflater, input: Buffer, piece: number, outputs: Buffer[]): Promise<Buffer> {
  const parts: Buffer[] = [];
  let which = 0;
  for (let at = 0; at < input.length; at += piece) {
    const chunk = input.subarray(at, at + piece);
    const last = at + piece >= input.length;
    let offset = 0;
    for (;;) {
      const output = outputs[which]!;
      const step = await inflater.step(chunk, offset, output, last);
      which ^= 1;
      offset += step.consumed;
      expect(step.produced).toBeLessThanOrEqual(output.length);
      parts.push(Buffer.from(output.subarray(0, step.produced)));
      if (step.produced < output.length) break;
    }
    expect(offset).toBe(chunk.length);
  }
  return Buffer.concat(parts);
}

describe('RawInflater', () => {
  it('inflates in steps no larger than the output buffers it is given, whatever the input pieces', async () => {
    const deflated = zlib.deflateRawSync(text);
    for (const piece of [5, 777, deflated.length]) {
      const inflater = new RawInflater();
      const out = await inflateAll(inflater, deflated, piece, [Buffer.alloc(4096), Buffer.alloc(1000)]);
      inflater.close();
      expect(out.equals(text)).toBe(true);
    }
  });

  it('stops at the end of the deflate stream, leaving what follows unread', async () => {
    const inflater = new RawInflater();
    const output = Buffer.alloc(1024);
    const deflated = zlib.deflateRawSync(Buffer.from('hello'));
    const step = await inflater.step(
      Buffer.concat([Buffer.from('xx'), deflated, Buffer.from('trailing')]),
      2,
      output,
      false,
    );
    expect(output.subarray(0, step.produced).toString()).toBe('hello');
    expect(step.consumed).toBe(deflated.length);
    // Ended: more input is not taken.
    expect(await inflater.step(Buffer.from('more'), 0, output, true)).toEqual({ produced: 0, consumed: 0 });
    inflater.close();
  });

  it("rejects with zlib's errors: damaged data, and a stream cut short once no input follows", async () => {
    const damaged = new RawInflater();
    await expect(damaged.step(Buffer.from([0xff, 0xff, 0xff]), 0, Buffer.alloc(1024), false)).rejects.toMatchObject({
      code: 'Z_DATA_ERROR',
    });
    damaged.close();
    const deflated = zlib.deflateRawSync(text);
    const cut = new RawInflater();
    const output = Buffer.alloc(1024 * 1024);
    expect((await cut.step(deflated.subarray(0, 100), 0, output, false)).consumed).toBe(100);
    await expect(cut.step(deflated.subarray(100, 200), 0, output, true)).rejects.toMatchObject({ code: 'Z_BUF_ERROR' });
    cut.close();
  });
});

describe('ParallelDeflate', () => {
  it(
    'gives, block by block, exactly what zlib makes of each block primed with (up to 32 KiB of) the block before ' +
      'it',
    async () => {
      const block = 16 * 1024;
      // Text, and random bytes that do not fit the half-block output buffer.
      const input = Buffer.concat([text.subarray(0, block * 5 + 100), randomBytes(block * 2), text.subarray(0, 3000)]);
      const bytes = await deflated(input, block, 2, 5000);
      expect(bytes.equals(expectedBlocks(input, block))).toBe(true);
      expect(zlib.inflateRawSync(bytes).equals(input)).toBe(true);
    },
  );

  it.each([
    [4 * 1024, 3],
    [16 * 1024, 3],
    [32 * 1024 + 200, 3],
    [32 * 1024 + 300, 3],
    [40 * 1024, 3],
    [96 * 1024, 3],
    [96 * 1024, 1],
  ])('gives those same bytes with blocks of %i bytes, %i in flight', async (block, depth) => {
    // Long enough for every slot to be used again and again, with text, incompressible bytes and a short last block.
    const input = Buffer.concat([
      text.subarray(0, block * 40 + 123),
      randomBytes(block + 999),
      text,
      text.subarray(0, 4321),
    ]);
    expect(await deflated(input, block, depth)).toEqual(expectedBlocks(input, block));
  });
});

/** The Node.js majors on which this file passed (22.23.5, 24.22.3): node:zlib's private handle may change in any other.
 * */
const CHECKED_ON_NODE = ['22', '24'];

describe("node:zlib's private handle", () => {
  it(`is driven only on the Node.js versions it was checked on (${CHECKED_ON_NODE.join(', ')})`, () => {
    const hint =
      `src/bundle/zlib-handle.ts drives node:zlib's private _handle, checked on Node.js ` +
      `${CHECKED_ON_NODE.join(', ')}: run this file on ${process.version}, then add its major to CHECKED_ON_NODE`;
    expect(CHECKED_ON_NODE, hint).toContain(process.versions.node.split('.')[0]);
  });
});

/** `input` through a ParallelDeflate of `block`-byte blocks, `depth` in flight, written in uneven pieces. */
async function deflated(input: Buffer, block: number, depth: number, piece = 70_001): Promise<Buffer> {
  const out: Buffer[] = [];
  const deflate = new ParallelDeflate(async (chunk) => void out.push(Buffer.from(chunk)), block, depth);
  for (let at = 0; at < input.length; at += piece) await deflate.write(input.subarray(at, at + piece));
  await deflate.end();
  return Buffer.concat(out);
}

/** What zlib makes of each block of `input` on its own, primed with (up to 32 KiB of) the block before it. */
function expectedBlocks(input: Buffer, block: number): Buffer {
  const expected: Buffer[] = [];
  for (let at = 0; at < input.length || at === 0; at += block) {
    const final = at + block >= input.length;
    expected.push(
      zlib.deflateRawSync(input.subarray(at, at + block), {
        level: 6,
        ...(at === 0 ? {} : { dictionary: input.subarray(Math.max(at - block, at - 32 * 1024), at) }),
        finishFlush: final ? zlib.constants.Z_FINISH : zlib.constants.Z_SYNC_FLUSH,
      }),
    );
  }
  return Buffer.concat(expected);
}

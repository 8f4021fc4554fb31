/**
 * A 64 MiB bundle is uploaded by a child process whose peak RSS must stay far below the file's size: the body is
 * streamed from disk, never held whole. The receiving server runs in the test process and checks every byte.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent } from 'undici';
import { compileRunner } from '../../../../scripts/compile-runner.mjs';
import { uploadFile } from '../../src/upload/put.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { repoRoot } from '../../../../test/support/context.js';

const run = promisify(execFile);
const MiB = 1024 * 1024;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-upload-stream-'));
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

it('uploads a 64 MiB bundle with bounded memory, every byte intact', async () => {
  const file = path.join(dir, 'big.bundle');
  const size = 64 * MiB;
  const expected = createHash('sha256');
  const handle = await open(file, 'w');
  try {
    for (let i = 0; i < 64; i++) {
      const chunk = Buffer.alloc(MiB, i);
      chunk.writeUInt32BE((i * 2654435761) >>> 0, 0);
      expected.update(chunk);
      await handle.write(chunk);
    }
  } finally {
    await handle.close();
  }
  const sha256 = expected.digest('hex');

  let received = 0;
  const hash = createHash('sha256');
  let contentLength: string | undefined;
  const empty = path.join(dir, 'empty.bundle');
  await writeFile(empty, '');
  const server = createServer((req, res) => {
    if (req.url === '/warm') {
      req.resume();
      req.on('end', () => res.writeHead(200).end());
      return;
    }
    contentLength = req.headers['content-length'];
    req.on('data', (chunk: Buffer) => {
      received += chunk.length;
      hash.update(chunk);
    });
    req.on('end', () => res.writeHead(200).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  try {
    const entry = path.join(dir, 'child.ts');
    await writeFile(
      entry,
      `import { uploadFile } from ${JSON.stringify(path.join(repoRoot, 'packages/agent/src/upload/put.ts'))};
import { Agent } from 'undici';
const peak = () => process.resourceUsage().maxRSS * 1024;
const dispatcher = new Agent();
// A small upload first, so that loading and warming the HTTP client is not counted as the big upload's cost.
await uploadFile(
  { method: 'PUT', url: 'http://127.0.0.1:${port}/warm', headers: {} },
  ${JSON.stringify(empty)},
  { size: 0, sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' },
  { dispatcher, timeoutMs: 30000 },
);
const start = peak();
const result = await uploadFile(
  {
    method: 'PUT',
    url: 'http://127.0.0.1:${port}/b/k?X-Amz-Signature=s',
    headers: { 'content-type': 'application/octet-stream' },
  },
  ${JSON.stringify(file)},
  { size: ${size}, sha256: ${JSON.stringify(sha256)} },
  { dispatcher, timeoutMs: 30000 },
);
await dispatcher.destroy();
process.stdout.write(JSON.stringify({ start, end: peak(), bytes: result.bytes }));
`,
    );
    const bundled = path.join(dir, 'child.mjs');
    await compileRunner(entry, bundled);
    const { stdout } = await run(process.execPath, [bundled], { maxBuffer: 1024 * 1024 });
    const r = JSON.parse(stdout) as { start: number; end: number; bytes: number };
    console.log(`upload peak RSS growth: ${((r.end - r.start) / MiB).toFixed(1)} MiB`);
    expect(r.bytes).toBe(size);
    expect(contentLength).toBe(String(size));
    expect(received).toBe(size);
    expect(hash.digest('hex')).toBe(sha256);
    // Holding the file would add at least its 64 MiB; streamed through a ring of reused read buffers, little grows.
    expect(r.end - r.start).toBeLessThan(16 * MiB);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}, 60_000);

// The uploader reuses a few read buffers: a buffer refilled while the socket still held its bytes would send the
// wrong ones. A receiver that reads slowly and unevenly keeps the socket backed up the whole time.
it('sends every byte intact to a receiver that reads slowly and unevenly', async () => {
  const file = path.join(dir, 'random.bundle');
  const bytes = randomBytes(6 * MiB + 12_345); // not a multiple of any buffer size
  await writeFile(file, bytes);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const hash = createHash('sha256');
  let received = 0;
  const server = createServer(async (req, res) => {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      hash.update(chunk);
      received += chunk.length;
      if (chunk[0]! % 4 === 0) await sleep(1 + (chunk[1]! % 3));
    }
    res.writeHead(200).end();
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  const dispatcher = new Agent();
  try {
    const result = await uploadFile(
      { method: 'PUT', url: `http://127.0.0.1:${port}/slow`, headers: {} },
      file,
      { size: bytes.length, sha256 },
      { dispatcher, timeoutMs: 30_000 },
    );
    expect(result).toEqual({ status: 200, bytes: bytes.length });
    expect(received).toBe(bytes.length);
    expect(hash.digest('hex')).toBe(sha256);
  } finally {
    await dispatcher.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}, 60_000);

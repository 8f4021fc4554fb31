/**
 * The signed-URL transfer against a storage service that answers and then keeps its answer's body trickling in: the
 * upload is done once the status says so, whatever follows it.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Agent } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { uploadFile } from '../../src/upload/put.js';

const dispatcher = new Agent();
let dir: string;
let server: Server;
let sent = 0;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-put-'));
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      // One byte every 20 ms: no silence long enough for an idle timeout. Bounded: at most 10 s of it.
      const timer = setInterval(() => {
        if (++sent > 500) {
          clearInterval(timer);
          res.end();
        } else res.write('.');
      }, 20);
      res.on('close', () => clearInterval(timer));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  await dispatcher.destroy();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await rm(dir, { recursive: true, force: true });
});

it("does not wait for a 2xx answer's body, even within the large budget a large bundle has", async () => {
  // 4 MiB: its budget at the slowest rate still waited for is minutes long.
  const bytes = Buffer.alloc(4 * 1024 * 1024, 7);
  const file = path.join(dir, 'a.bundle');
  await writeFile(file, bytes);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/b/k?X-Amz-Signature=s`;
  const result = await uploadFile(
    { method: 'PUT', url, headers: {} },
    file,
    { size: bytes.length, sha256 },
    { dispatcher, timeoutMs: 300 },
  );
  expect(result).toEqual({ status: 200, bytes: bytes.length });
  expect(sent).toBeLessThan(500);
});

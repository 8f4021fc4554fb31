/**
 * While a scan awaits its sink (extract writes files), the next inflate step and the next read are already running:
 * one that fails meanwhile is the scan's error, never an unhandled rejection that ends the process.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LIMITS } from '../../src/bundle/limits.js';
import { openBundle, scanBundle, type EntrySink } from '../../src/bundle/scan.js';
import { gzip, tarOf } from '../../../../test/support/handmade-bundles.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-scan-await-'));
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

it('reports damage found while the sink is still writing as the scan error', async () => {
  const words = 'the quick session wrote a line of transcript with some tool output and a result '.split(' ');
  let text = '';
  for (let i = 0; text.length < 2 * 1024 * 1024; i++) text += `${words[(i * 7) % words.length]} ${i}\n`;
  const bundle = Buffer.from(gzip(tarOf([{ name: 'files/0000-session.jsonl', data: text }])));
  // Damage well after the first inflate buffer's worth of data.
  const at = Math.floor(bundle.length * 0.6);
  bundle.fill(0xff, at, at + 512);
  const file = path.join(dir, 'damaged.bundle');
  await writeFile(file, bundle);
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  // A sink that takes its time, as one writing files does.
  const sink: EntrySink = { open: async () => sleep(5), write: async () => sleep(5), close: async () => undefined };
  const handle = await openBundle(file);
  try {
    await expect(scanBundle(handle, file, { limits: LIMITS, sink })).rejects.toThrow(
      /damaged compressed data|checksum that does not match/,
    );
  } finally {
    await handle.close();
    await sleep(50);
    process.off('unhandledRejection', onUnhandled);
  }
  expect(unhandled).toEqual([]);
});

import { once } from 'node:events';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { readPayloadText } from '../../src/capture/payload.js';

/** A connected loopback socket pair: what one end writes lands in the kernel at once, like a harness's pipe. */
async function socketPair(): Promise<{ reader: net.Socket; writer: net.Socket; close: () => void }> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  const accepted = once(server, 'connection') as Promise<[net.Socket]>;
  const writer = net.connect(port, '127.0.0.1');
  await once(writer, 'connect');
  const [reader] = await accepted;
  reader.pause();
  return {
    reader,
    writer,
    close: () => {
      reader.destroy();
      writer.destroy();
      server.close();
    },
  };
}

/** Keeps the event loop busy, as loading and checking profiles does in the hook on a loaded machine. */
function busy(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // spin
  }
}

let cleanup: (() => void) | undefined;
afterEach(() => {
  cleanup?.();
  cleanup = undefined;
});

describe('readPayloadText', () => {
  it('takes a payload that was waiting in the pipe when start-up work kept the loop busy past the deadline', async () => {
    const pair = await socketPair();
    cleanup = pair.close;
    const payload = JSON.stringify({ session_id: 'waiting', cwd: '/w' });
    pair.writer.write(payload);
    const text = readPayloadText(pair.reader, { deadlineMs: 5 });
    busy(100);
    await expect(text).resolves.toBe(payload);
  });

  it('still refuses a writer that delivered nothing by the deadline', async () => {
    const pair = await socketPair();
    cleanup = pair.close;
    const text = readPayloadText(pair.reader, { deadlineMs: 5 });
    busy(50);
    await expect(text).rejects.toThrow(/no payload arrived on stdin within 5 ms/);
  });

  it('still refuses an object that was not complete by the deadline', async () => {
    const pair = await socketPair();
    cleanup = pair.close;
    pair.writer.write('{"session_id": "slow"');
    const text = readPayloadText(pair.reader, { deadlineMs: 5 });
    busy(50);
    await expect(text).rejects.toThrow(/was not complete after 5 ms \(21 bytes received\)/);
  });
});

/**
 * Reading the hook's payload against its deadline, in-process with a real socket: what the deadline counts is what had
 * arrived by then, however late this process got round to reading it.
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { readPayloadText } from '../../src/capture/payload.js';

const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

/** A connected loopback pair; the reading end does not read until asked, so written bytes wait in the kernel. */
async function socketPair(): Promise<{ reader: net.Socket; writer: net.Socket }> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const accepted = new Promise<net.Socket>((resolve) => server.once('connection', (socket) => resolve(socket.pause())));
  const writer = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  const reader = await accepted;
  closers.push(() => {
    writer.destroy();
    reader.destroy();
    server.close();
  });
  return { reader, writer };
}

/** Keeps this thread busy until at least `ms` have passed (as a loaded machine or a slow start-up would). */
function block(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // Busy on purpose: no timer or I/O callback can run meanwhile.
  }
}

describe('readPayloadText', () => {
  it('accepts a payload that was waiting unread when its deadline came due', async () => {
    const { reader, writer } = await socketPair();
    const payload = '{"session_id":"late-reader","cwd":"/w"}';
    await new Promise<void>((resolve, reject) => writer.write(payload, (error) => (error ? reject(error) : resolve())));
    const text = readPayloadText(reader, { deadlineMs: 1 });
    // The deadline passes before the event loop runs again, with the payload already delivered.
    block(50);
    await expect(text).resolves.toBe(payload);
  });

  it('still refuses a payload that had not arrived, or was incomplete, by the deadline', async () => {
    const empty = await socketPair();
    await expect(readPayloadText(empty.reader, { deadlineMs: 1 })).rejects.toThrow(
      'no payload arrived on stdin within 1 ms',
    );
    const partial = await socketPair();
    await new Promise<void>((resolve) => partial.writer.write('{"session_id": "slow"', () => resolve()));
    const text = readPayloadText(partial.reader, { deadlineMs: 1 });
    block(50);
    await expect(text).rejects.toThrow(/was not complete after 1 ms \(21 bytes received\)/);
  });
});

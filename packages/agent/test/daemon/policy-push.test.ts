/**
 * The run loop's policy event stream against a loopback Control API whose stream breaks its bounds: each such stream
 * is dropped with its reason, the next one waits the usual backoff (growing, not reset because the stream opened),
 * the reason is said once at warn, and a good stream afterwards brings revisions in again.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { bufferOutput } from '../../src/context.js';
import { createRunLogger } from '../../src/daemon/log.js';
import { PolicyPush } from '../../src/daemon/policy-push.js';
import { STREAM_LIMITS } from '../../src/control-api/policy-events.js';
import { parseLog, waitFor } from '../../../../test/support/agent-home.js';

const servers: http.Server[] = [];
const pushes: PolicyPush[] = [];
afterEach(async () => {
  for (const push of pushes.splice(0)) await push.stop();
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

describe('PolicyPush', () => {
  it(
    'drops a stream that breaks its bounds, backs off as after a failure, says so once, and takes a good stream ' +
      'after',
    async () => {
      const HOSTILE = 3;
      let connections = 0;
      const server = http.createServer((_req, res) => {
        const n = ++connections;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`event: revision\ndata: {"revision":"r${n}"}\n\n`);
        if (n > HOSTILE) return;
        // Comments and nothing else, far past the bound (then the stream ends: an unbounded reader sees it end).
        const chunk = `: ${'x'.repeat(1022)}\n`.repeat(16);
        let written = 0;
        const pump = () => {
          while (written < 8 * STREAM_LIMITS.bytesWithoutEvent && !res.destroyed) {
            written += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        pump();
      });
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const controlUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

      const out = bufferOutput();
      const log = createRunLogger({ target: { kind: 'stdout' }, stdout: out, env: { BLUE_AGENT_LOG_LEVEL: 'debug' } });
      const revisions: string[] = [];
      const push = new PolicyPush(
        // random 0.5: no jitter, so each wait is the backoff itself.
        { env: {}, userAgent: 'test', log, random: () => 0.5, onRevision: (r) => revisions.push(r) },
        { idleMs: 10_000, backoffBaseMs: 50, backoffCapMs: 1_000, unsupportedRetryMs: 3_600_000, spreadMs: 0 },
      );
      pushes.push(push);
      await push.start({ controlUrl, tokenSource: 'test', readToken: async () => 'tok' });
      await waitFor('the good stream', () => revisions.includes(`r${HOSTILE + 1}`), 20_000);
      await push.stop();

      expect(revisions).toEqual(['r1', 'r2', 'r3', 'r4']);
      const lines = parseLog(out.text());
      const retries = lines.filter((l) => l.msg.startsWith('policy event stream unavailable'));
      expect(retries.map((l) => [l.level, l.failures, l.next_try_in_ms])).toEqual([
        ['warn', 1, 50],
        ['debug', 2, 100],
        ['debug', 3, 200],
      ]);
      for (const l of retries)
        expect(l.reason).toContain(`more than ${STREAM_LIMITS.bytesWithoutEvent} bytes without an event; dropped it`);
      expect(lines.filter((l) => l.level === 'warn' || l.level === 'error')).toHaveLength(1);
    },
  );
});

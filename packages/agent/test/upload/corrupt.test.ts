/**
 * End to end: a bundle whose bytes are no longer the recorded ones (same size, one byte changed on disk) is never
 * registered as the session, whoever checks the digest: this project's Control API, whose store refuses the body
 * against the signed checksum (the client leaves the check to it), and a stand-in for Blue's, which presigns the digest
 * as metadata only (the client hashes on the way out and never completes). The intact bundle then uploads.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { ControlClient } from '../../src/control-api/client.js';
import { uploadBundle, type UploadItem } from '../../src/upload/index.js';
import { startBlueContractServer } from '../../../../test/support/blue-contract-server.js';
import { startTestServer } from '../../../../test/support/control-server.js';

const fastRetry = {
  retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 5, maxInlineRetryAfterMs: 10 },
  retryEnv: { sleep: async () => undefined, random: () => 0.5, now: () => Date.now() },
};

let dir: string;
let intact: Buffer;
let item: UploadItem;
const cleanups: (() => Promise<unknown>)[] = [];

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-corrupt-'));
  intact = Buffer.alloc(2 * 1024 * 1024 + 3);
  for (let i = 0; i < intact.length; i++) intact[i] = (i * 31) % 251;
  const bundleFile = path.join(dir, 'a.bundle');
  const corrupt = Buffer.from(intact);
  corrupt[1_000_000] = corrupt[1_000_000]! ^ 0x01;
  await writeFile(bundleFile, corrupt);
  item = {
    bundleFile,
    size: intact.length,
    sha256: createHash('sha256').update(intact).digest('hex'),
    manifest: {
      harness: 'claude',
      native_session_id: 'sess-corrupt',
      compatibility_profile: 'claude-v2_0_12',
      captured_at_unix_ms: 1_700_000_000_000,
      artifact_format: 'blue-session-bundle-v1',
    },
    resumable: false,
  };
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await rm(dir, { recursive: true, force: true });
});

async function clientFor(controlUrl: string, token: string): Promise<ControlClient> {
  const client = await ControlClient.create({
    controlUrl,
    token,
    tokenSource: 'BLUE_AGENT_TOKEN',
    env: {},
    userAgent: 'blue-agent/test',
    timeoutMs: 10_000,
  });
  cleanups.push(() => client.close());
  return client;
}

it("this project's Control API: its store refuses the changed bytes, and nothing is registered", async () => {
  const srv = await startTestServer({ liveClock: true });
  cleanups.push(() => srv.close());
  const client = await clientFor(srv.url, srv.alice.token);
  const listed = async () =>
    (await srv.call('GET', '/session-uploads', srv.alice.token)).body.items as { status?: string }[];

  const result = await uploadBundle(client, item, fastRetry);
  expect(result).toMatchObject({ kind: 'failed', code: 'UPLOAD_REJECTED', status: 400 });
  expect((result as { reason: string }).reason).toContain('SHA-256 differs from the signed digest');
  expect(await listed()).toEqual([]);

  await writeFile(item.bundleFile, intact);
  expect(await uploadBundle(client, item, fastRetry)).toMatchObject({ kind: 'uploaded', already: false });
  expect(await listed()).toHaveLength(1);
});

it(
  "Blue's Control API (digest as metadata): the client refuses to complete the changed bytes, and nothing is " +
    'registered',
  async () => {
    const server = await startBlueContractServer({ clientVersion: '1.0.0' });
    cleanups.push(() => server.close());
    const client = await clientFor(server.url, server.alice.token);
    const completes = () =>
      server.requests.filter((r) => r.origin === 'control' && r.path.endsWith('/complete')).length;

    const result = await uploadBundle(client, item, fastRetry);
    expect(result).toMatchObject({ kind: 'failed', code: 'UPLOAD_FAILED' });
    expect((result as { reason: string }).reason).toContain('its SHA-256 is not the recorded one');
    expect(server.requests.filter((r) => r.origin === 'storage' && r.method === 'PUT')).toHaveLength(1);
    expect(completes()).toBe(0);

    await writeFile(item.bundleFile, intact);
    expect(await uploadBundle(client, item, fastRetry)).toMatchObject({ kind: 'uploaded', already: false });
    expect(completes()).toBe(1);
    expect(server.problems).toEqual([]);
  },
);

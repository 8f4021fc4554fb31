/**
 * The drain with a policy that says `session_upload.redact: secrets`, against a real Control API on loopback: the
 * bundle holds the session with its secrets replaced (the manifest names the rules, its sizes and digests describe the
 * redacted bytes) and nothing of the secret reaches the server; a bundle built before the policy asked for redaction
 * is never uploaded.
 */
import { gunzipSync } from 'node:zlib';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { verifyBundle } from '@blue-agent/contract/bundle/index.js';
import { stateLayout, type Context } from '../../src/context.js';
import { drain } from '../../src/drain/index.js';
import { REDACTION_RULES, REDACTION_VERSION } from '../../src/redaction/index.js';
import { Spool } from '../../src/spool/index.js';
import { agentHome, type AgentHome } from '../../../../test/support/agent-home.js';
import { CLAUDE_PROFILE, claudeSession } from '../../../../test/support/cli-process.js';
import { startUploadStack, type UploadStack } from '../../../../test/support/fault-proxy.js';
import { shippedProfiles } from '../../../../test/support/restore-homes.js';

const TOKEN = 'ghp_R8d3Kq9Lm2Xv7Zt4Wp6Yb1Nc5Hs0Gj3Fa8Ue';
let t: AgentHome;
let stack: UploadStack;
let ctx: Context;

beforeEach(async () => {
  stack = await startUploadStack();
  t = await agentHome();
  ctx = t.context({ env: { BLUE_AGENT_CONTROL_URL: stack.proxy.url, BLUE_AGENT_TOKEN: stack.token } });
});
afterEach(async () => {
  await stack.close();
  await t.cleanup();
});

async function captured(id: string) {
  const cwd = path.join(t.root, 'work');
  await mkdir(cwd, { recursive: true });
  const s = await claudeSession(path.join(t.home, '.claude'), {
    id,
    cwd,
    prompt: `push with ${TOKEN} please`,
    companions: false,
  });
  const spool = await Spool.open(stateLayout(t.stateDir));
  await spool.enqueueIntake({
    harness: 'claude',
    profile: CLAUDE_PROFILE,
    payload: s.payload,
    createdAtUnixMs: Date.now() - 60_000,
  });
  return s;
}

it('uploads the session with its secrets replaced, every line still JSON, the manifest naming the rules', async () => {
  stack.server.store.publishPolicy(
    { session_upload: { presign_url: `${stack.proxy.url}/session-uploads/presign`, redact: 'secrets' } },
    Date.now(),
  );
  const s = await captured('66666666-6666-4666-8666-666666666666');
  const report = await drain(ctx);
  expect(report.uploaded, JSON.stringify(report)).toHaveLength(1);
  const [item] = await stack.listUploads();
  const bytes = await stack.download(item.id);
  expect(gunzipSync(bytes).includes(TOKEN)).toBe(false);
  const file = path.join(t.root, 'got.bundle');
  await writeFile(file, bytes);
  const { manifest } = await verifyBundle(file, { profiles: await shippedProfiles() });
  expect(manifest.redaction).toEqual({
    mode: 'secrets',
    rules: REDACTION_RULES,
    version: REDACTION_VERSION,
    replaced: 1,
  });
  const tar = gunzipSync(bytes).toString('utf8');
  expect(tar).toContain('push with [REDACTED:GITHUB_TOKEN] please');
  // The session on this machine is the user's own and is left exactly as it was.
  expect((await import('node:fs')).readFileSync(s.transcript, 'utf8')).toContain(TOKEN);
});

it('a bundle built before the policy asked for redaction is failed, not uploaded, with what to run', async () => {
  await captured('77777777-7777-4777-8777-777777777777');
  const built = await drain(ctx, { skipUploads: true });
  expect(built.built).toHaveLength(1);
  stack.server.store.publishPolicy(
    { session_upload: { presign_url: `${stack.proxy.url}/session-uploads/presign`, redact: 'secrets' } },
    Date.now(),
  );
  const report = await drain(ctx);
  expect(report.uploaded).toEqual([]);
  expect(report.failed).toEqual([
    expect.objectContaining({
      code: 'REDACTION_REQUIRED',
      stage: 'upload',
      reason: expect.stringContaining('blue-agent backfill --harness claude'),
    }),
  ]);
  expect(await stack.listUploads()).toEqual([]);
});

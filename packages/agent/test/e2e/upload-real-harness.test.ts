/**
 * The whole loop with a real harness: the agent fetches its policy from the reference Control API, reconcile installs
 * the managed hook, a real Claude Code session ends offline, the hook spools it, the detached worker builds the bundle
 * and uploads it, and the Control API lists the session complete with the bundle's size, SHA-256 and title.
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, realpath, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { verifyBundle } from '@blue-agent/contract/bundle/index.js';
import { loadProfiles } from '@blue-agent/contract/profiles/index.js';
import { reconcile } from '../../src/reconcile/index.js';
import { captureLog, waitForWorkers } from '../../../../test/support/cli-process.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';
import { harnessBin } from '../../../../test/support/harness-bins.js';
import { startModelStub, type ModelStub } from '../../../../test/support/model-stub.js';
import { describeRun, waitFor } from '../../../../test/support/run-harness.js';
import { runClaude } from '../harnesses/claude/rig.js';
import { startUploadStack, type UploadStack } from '../../../../test/support/fault-proxy.js';

const REPLY = 'Offline stub reply for the upload test.';

let t: TestHome;
let stub: ModelStub;
let stack: UploadStack;

beforeEach(async () => {
  stack = await startUploadStack();
  t = await makeTestHome({ BLUE_AGENT_CONTROL_URL: stack.proxy.url, BLUE_AGENT_TOKEN: stack.token });
  stub = await startModelStub({ reply: REPLY });
});

afterEach(async () => {
  await waitForWorkers(t.env.BLUE_AGENT_HOME!, 60_000).catch(() => undefined);
  await stub.close();
  await stack.close();
  await t.cleanup();
});

it('Claude Code: policy from the Control API -> hook -> capture -> drain -> listed, fetched, verified', async () => {
  const bin = harnessBin('claude');
  const agent = t.context({ env: { PATH: `${path.dirname(bin)}:${path.dirname(process.execPath)}:/usr/bin:/bin` } });
  const report = await reconcile(agent, { dryRun: false, harnesses: ['claude'] });
  expect(report.policy.source).toBe('fetched');
  expect(report.harnesses[0]).toMatchObject({ state: 'active', action: 'create' });

  await mkdir(path.join(t.root, 'work', 'project'), { recursive: true });
  const cwd = await realpath(path.join(t.root, 'work', 'project'));
  const prompt = 'List the open pull requests.';
  const result = await runClaude({ bin, home: t.home, cwd, prompt, stubUrl: stub.url, env: t.env, timeoutMs: 60_000 });
  expect(result.exitCode, describeRun(result)).toBe(0);

  const items = await waitFor(
    'the session listed complete by the Control API',
    async () => {
      const listed = await stack.listUploads();
      return listed.some((i) => i.status === 'complete') ? listed : undefined;
    },
    60_000,
    200,
  );
  const log = JSON.stringify(captureLog(t.env.BLUE_AGENT_HOME!));
  expect(items, log).toHaveLength(1);
  const item = items[0]!;
  expect(item, log).toMatchObject({
    harness: 'claude',
    status: 'complete',
    compatibility_profile: 'claude-v2_0_12',
    title: prompt,
  });

  // The stored bytes are the bundle that was built: same digest, and it verifies with the session in it.
  const bytes = await stack.download(item.id);
  expect(bytes.length).toBe(item.size_bytes);
  expect(createHash('sha256').update(bytes).digest('hex')).toBe(item.sha256);
  const file = path.join(t.root, 'downloaded.bundle');
  await writeFile(file, bytes);
  const verified = await verifyBundle(file, { profiles: await loadProfiles(t.ctx.paths.profilesDir) });
  expect(verified.manifest).toMatchObject({
    harness: 'claude',
    native_session_id: item.native_session_id,
    cwd,
    title: prompt,
  });

  // Uploaded, so the local copy is gone: the spool holds nothing.
  await waitForWorkers(t.env.BLUE_AGENT_HOME!, 30_000);
  const spool = path.join(t.env.BLUE_AGENT_HOME!, 'spool');
  for (const folder of ['intake', 'building', 'ready', 'uploading', 'failed', 'bundles']) {
    expect(await readdir(path.join(spool, folder)).catch(() => []), folder).toEqual([]);
  }
}, 150_000);

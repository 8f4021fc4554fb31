/**
 * Qwen Code's restore planner: the transcript goes under the destination's project folder with its first record's cwd
 * rewritten (the profile's restore_rewrite) and no other byte changed; shapes Qwen Code never writes, a transcript
 * without a cwd and a destination whose folder name cannot exist are refused.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BundleManifest } from '@blue-agent/contract/bundle/index.js';
import { planQwenRestore, withFirstCwd } from '../../../src/harnesses/qwen/restore.js';
import { qwenProjectKey } from '../../../src/harnesses/qwen/session.js';
import type { RestorePlan } from '../../../src/harnesses/types.js';
import { applyRestore, prepareRestore } from '../../../src/restore/index.js';
import { makeTestHome, type TestHome } from '../../../../../test/support/context.js';
import { fixtureBundle } from '../../../../../test/support/fixture-bundles.js';
import { blueErrorOf, intervalOf } from '../../../../../test/support/recorded-sessions.js';
import { shippedProfiles } from '../../../../../test/support/restore-homes.js';

const ID = '29af4d39-f100-4752-a826-96172b71e0fa';
const FIRST =
  `{"uuid":"a","parentUuid":null,"sessionId":"${ID}","type":"user","cwd":"/src/proj","version":"0.24.4",` +
  '"message":{"role":"user","parts":[{"text":"hi ' +
  `ü"}]}}`;
const TEXT =
  `${FIRST}\n{"uuid":"b","sessionId":"${ID}","type":"assistant","cwd":"/src/proj",` +
  '"message":{"role":"model","parts":[{"text":"ok"}]}}\n';

let home: TestHome;
let destination: string;
beforeEach(async () => {
  home = await makeTestHome();
  destination = path.join(home.root, 'work', 'café dest');
  await mkdir(destination, { recursive: true });
});
afterEach(async () => home.cleanup());

async function plan(
  nativePath = `-src-proj/chats/${ID}.jsonl`,
  role = 'primary_transcript',
  dest = destination,
): Promise<RestorePlan> {
  const file = path.join(home.root, 'staged', 'transcript.jsonl');
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, TEXT);
  const manifest = {
    native_session_id: ID,
    files: [
      {
        role,
        path: 'files/0000-transcript.jsonl',
        native_path: nativePath,
        size: Buffer.byteLength(TEXT),
        sha256: createHash('sha256').update(TEXT).digest('hex'),
      },
    ],
  } as unknown as BundleManifest;
  return planQwenRestore(
    home.ctx,
    { manifest, files: [file], destination: dest, interval: await intervalOf('qwen-v0_15_6') },
    path.join(home.home, '.qwen'),
  );
}

describe('Qwen Code restore', () => {
  it("places the transcript under the destination's folder, rewriting only the first record's cwd", async () => {
    const p = await plan();
    expect(p.placements.map((x) => x.rel)).toEqual([`${qwenProjectKey(destination)}/chats/${ID}.jsonl`]);
    expect(qwenProjectKey(destination).endsWith('-work-caf--dest')).toBe(true);
    expect(p.resumeArgv).toEqual(['qwen', '--resume', ID]);
    const rewritten = p.placements[0]!.rewrite!.apply(Buffer.from(TEXT)).toString();
    expect(rewritten).toBe(TEXT.replace('"cwd":"/src/proj"', JSON.stringify({ cwd: destination }).slice(1, -1)));
    expect(rewritten.split('\n').slice(1).join('\n')).toBe(TEXT.split('\n').slice(1).join('\n'));
  });

  it('changes nothing when the cwd already is the destination, and keeps every other byte of an odd first line', () => {
    expect(withFirstCwd(Buffer.from(TEXT), '/src/proj').toString()).toBe(TEXT);
    const odd = '{ "cwd" : "/a" , "x": 1.50, "y": "\\u00fc" }\nrest';
    expect(withFirstCwd(Buffer.from(odd), '/b').toString()).toBe('{ "cwd" : "/b" , "x": 1.50, "y": "\\u00fc" }\nrest');
  });

  it('refuses a first record without exactly one cwd string', () => {
    for (const bad of ['{"x":1}\n', 'not json\n', '{"cwd":5}\n', '{"cwd":"/a","cwd":"/b"}\n', '']) {
      expect(() => withFirstCwd(Buffer.from(bad), '/b'), bad).toThrow(/first record has no single cwd/);
    }
  });

  it('refuses shapes Qwen Code never writes, and a destination whose folder name would be too long', async () => {
    for (const [nativePath, role] of [
      [`-src-proj/${ID}.jsonl`, 'primary_transcript'],
      [`-src-proj/chats/other.jsonl`, 'primary_transcript'],
      [`-src-proj/chats/${ID}.jsonl`, 'session_companion'],
      [`../chats/${ID}.jsonl`, 'primary_transcript'],
    ] as const) {
      expect((await blueErrorOf(() => plan(nativePath, role))).code, nativePath).toBe('RESTORE_UNSAFE');
    }
    const deep = path.join(home.root, 'x'.repeat(120), 'y'.repeat(120), 'z'.repeat(40));
    const error = await blueErrorOf(() => plan(undefined, undefined, deep));
    expect(error.code).toBe('RESTORE_UNSAFE');
    expect(error.message).toContain('more than a file name may be');
  });
});

describe('Qwen Code restore through the engine', () => {
  it('writes the rewritten transcript, records both digests in the plan; a second restore finds it same', async () => {
    const bundleFile = path.join(home.root, 'qwen.bundle');
    const bundle = await fixtureBundle('qwen', bundleFile);
    const captured = bundle.manifest.files[0]!;
    const prepare = async () =>
      prepareRestore(home.ctx, { bundleFile, destination, profiles: await shippedProfiles() });

    const first = await prepare();
    expect(first.summary.rewritten).toEqual([
      { file: first.plan.placements[0]!.to, what: `the first record's cwd, to ${destination}` },
    ]);
    expect(first.plan.placements[0]!.rewritten).toEqual({
      captured_sha256: captured.sha256,
      what: `the first record's cwd, to ${destination}`,
    });
    expect(first.plan.placements[0]!.sha256).not.toBe(captured.sha256);
    await applyRestore(home.ctx, first);
    await first.dispose();
    const placed = await readFile(first.plan.placements[0]!.to, 'utf8');
    expect(JSON.parse(placed.split('\n')[0]!).cwd).toBe(destination);
    expect(createHash('sha256').update(placed).digest('hex')).toBe(first.plan.placements[0]!.sha256);

    const again = await prepare();
    expect(again.collision).toBe('identical');
    await again.dispose();
  });
});

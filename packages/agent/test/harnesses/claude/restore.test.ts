/**
 * Claude Code's restore planner: the transcript goes under the destination's project folder, and a transcript of the
 * same id already in another project folder is another copy of the session (Claude Code finds a session by its id in
 * every project folder): the plan reports it as a duplicate whatever its bytes, naming the file and what to do.
 */
import { createHash } from 'node:crypto';
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BundleManifest } from '@blue-agent/contract/bundle/index.js';
import { planClaudeRestore } from '../../../src/harnesses/claude/restore.js';
import { claudeProjectKey } from '../../../src/harnesses/claude/session.js';
import type { RestorePlan } from '../../../src/harnesses/types.js';
import { makeTestHome, type TestHome } from '../../../../../test/support/context.js';
import { intervalOf } from '../../../../../test/support/recorded-sessions.js';
import { claude } from './rig.js';

const ID = '7d0c1c2e-5a4b-4c3d-9e8f-112233445566';
const TRANSCRIPT =
  '{"type":"user","sessionId":"7d0c1c2e-5a4b-4c3d-9e8f-112233445566","message":{"role":"user","content":"hi"}}\n';

let home: TestHome;
let configDir: string;
let projects: string;
let destination: string;

beforeEach(async () => {
  home = await makeTestHome();
  configDir = path.join(home.home, '.claude');
  projects = path.join(configDir, 'projects');
  destination = path.join(home.root, 'work', 'here');
  await mkdir(destination, { recursive: true });
});
afterEach(async () => {
  await home.cleanup();
});

/** The plan for a bundle holding TRANSCRIPT, captured under project folder `-recorded`. */
async function plan(): Promise<RestorePlan> {
  const file = path.join(home.root, 'staged', 'transcript.jsonl');
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, TRANSCRIPT);
  const manifest = {
    native_session_id: ID,
    files: [
      {
        role: 'primary_transcript',
        path: 'files/0000-transcript.jsonl',
        native_path: `-recorded/${ID}.jsonl`,
        size: Buffer.byteLength(TRANSCRIPT),
        sha256: createHash('sha256').update(TRANSCRIPT).digest('hex'),
      },
    ],
  } as unknown as BundleManifest;
  return planClaudeRestore(
    home.ctx,
    { manifest, files: [file], destination, interval: await intervalOf(claude.fixture.profile) },
    configDir,
  );
}

async function put(rel: string, content = TRANSCRIPT): Promise<string> {
  const file = path.join(projects, ...rel.split('/'));
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, content);
  return file;
}

describe('planClaudeRestore', () => {
  it("places the transcript under the destination's project folder", async () => {
    const planned = await plan();
    expect(planned.placements.map((p) => p.to)).toEqual([
      path.join(projects, claudeProjectKey(destination), `${ID}.jsonl`),
    ]);
    expect(planned.resumeArgv).toEqual(['claude', '--resume', ID]);
  });

  it("finds no duplicate on a machine without Claude Code, or with only the destination's own copy", async () => {
    const planned = await plan();
    expect(await planned.duplicates!()).toEqual([]);
    await put(`${claudeProjectKey(destination)}/${ID}.jsonl`);
    expect(await planned.duplicates!()).toEqual([]);
  });

  it(
    'a transcript of the same id in another project folder is a duplicate, the same bytes too, named with what to ' +
      'do',
    async () => {
      const planned = await plan();
      const same = await put(`-home-me-old-place/${ID}.jsonl`);
      const other = await put(`-home-me-elsewhere/${ID}.jsonl`, '{"type":"user"}\n');
      const found = await planned.duplicates!();
      expect(found.map((d) => d.file)).toEqual([other, same]);
      expect(found[1]).toEqual({
        file: same,
        why:
          `a copy in another project folder; Claude Code finds a session by its id in every project folder, so a ` +
          `second copy would make \`claude --resume ${ID}\` ambiguous`,
        hint:
          `Resume that copy from the directory it belongs to (\`claude --resume ${ID}\` there), or move or ` +
          `delete ${same} (and the folder ${ID}${path.sep} beside it, if any), then restore again.`,
      });
    },
  );

  it('looks again each time: a copy that appears after planning is found, one that is moved away is gone', async () => {
    const planned = await plan();
    expect(await planned.duplicates!()).toEqual([]);
    const later = await put(`-somewhere/${ID}.jsonl`);
    expect((await planned.duplicates!()).map((d) => d.file)).toEqual([later]);
    await rm(later);
    expect(await planned.duplicates!()).toEqual([]);
  });

  it('other sessions, companion folders without a transcript, files outside projects: no duplicates', async () => {
    const planned = await plan();
    await put(`-other/9d0c1c2e-5a4b-4c3d-9e8f-112233445566.jsonl`);
    await put(`-companion-only/${ID}/subagents/agent-a1.jsonl`);
    await put(`${ID}.jsonl`);
    await put(`-prefix/x-${ID}.jsonl`);
    expect(await planned.duplicates!()).toEqual([]);
  });

  it("the destination's own transcript reached through another folder name is the same file, not a copy", async () => {
    // As on a file system that ignores case, where two spellings name one folder.
    const planned = await plan();
    const key = claudeProjectKey(destination);
    await put(`${key}/${ID}.jsonl`);
    await symlink(path.join(projects, key), path.join(projects, key.toUpperCase()));
    expect(await planned.duplicates!()).toEqual([]);
    // A linked folder with its own copy is another copy.
    await mkdir(path.join(home.root, 'linked'));
    await writeFile(path.join(home.root, 'linked', `${ID}.jsonl`), TRANSCRIPT);
    await symlink(path.join(home.root, 'linked'), path.join(projects, '-linked'));
    expect((await planned.duplicates!()).map((d) => d.file)).toEqual([path.join(projects, '-linked', `${ID}.jsonl`)]);
  });
});

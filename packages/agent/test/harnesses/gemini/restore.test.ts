/**
 * Gemini CLI's restore planner: the chat goes into the folder the resuming version reads (the destination's hash
 * before 0.29, its registry folder from 0.29, found or claimed as Gemini CLI's registry would, and marked), with no
 * byte of it changed; another chat of the same session there is a conflict; anything outside the shapes Gemini CLI
 * writes is refused.
 */
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BundleManifest } from '@blue-agent/contract/bundle/index.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { projectHash, projectSlug } from '../../../src/harnesses/gemini/projects.js';
import { markerFor, planGeminiRestore } from '../../../src/harnesses/gemini/restore.js';
import type { RestorePlan } from '../../../src/harnesses/types.js';
import { makeTestHome, type TestHome } from '../../../../../test/support/context.js';
import { blueErrorOf, intervalOf } from '../../../../../test/support/recorded-sessions.js';

const ID = '217fa86b-524f-4395-8043-ec84cce7a7be';
const CHAT = `session-2026-12-02T02-51-${ID.slice(0, 8)}.jsonl`;
const TEXT =
  `{"sessionId":"${ID}","projectHash":"x","startTime":"s","lastUpdated":"u","kind":"main"}\n` +
  '{"id":"m1","type":"user","content":[{"text":"hi"}]}\n';

let home: TestHome;
let geminiDir: string;
let destination: string;

beforeEach(async () => {
  home = await makeTestHome();
  geminiDir = path.join(home.home, '.gemini');
  destination = path.join(home.root, 'work', 'My_Proj.x');
  await mkdir(destination, { recursive: true });
});
afterEach(async () => {
  await home.cleanup();
});

const sha = (text: string) => createHash('sha256').update(text).digest('hex');

/** The plan for a bundle of the chat (and `extra` companions) captured in `folder`. */
async function plan(
  options: {
    folder?: string;
    installedVersion?: string;
    files?: { role: string; native_path: string }[];
    profile?: string;
  } = {},
): Promise<RestorePlan> {
  const folder = options.folder ?? 'original';
  const entries = options.files ?? [{ role: 'primary_transcript', native_path: `${folder}/chats/${CHAT}` }];
  const staged: string[] = [];
  for (const [i, _entry] of entries.entries()) {
    const file = path.join(home.root, 'staged', `${i}`);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, TEXT);
    staged.push(file);
  }
  const manifest = {
    native_session_id: ID,
    files: entries.map((e, i) => ({ ...e, path: `files/000${i}-x`, size: Buffer.byteLength(TEXT), sha256: sha(TEXT) })),
  } as unknown as BundleManifest;
  return planGeminiRestore(
    home.ctx,
    {
      manifest,
      files: staged,
      destination,
      interval: await intervalOf(options.profile ?? 'gemini-v0_39_0'),
      ...(options.installedVersion === undefined ? {} : { installedVersion: options.installedVersion }),
    },
    geminiDir,
  );
}

describe('Gemini CLI restore: where the chat goes', () => {
  it('into the registry folder the resuming version reads, claimed and marked as Gemini CLI would', async () => {
    const p = await plan({ installedVersion: '0.61.0' });
    expect(p.placements.map((x) => x.rel)).toEqual([`my-proj-x/chats/${CHAT}`]);
    expect(p.root).toBe(path.join(geminiDir, 'tmp'));
    expect(p.resumeArgv).toEqual(['gemini', '--resume', ID]);
    expect(p.merges.map((m) => m.file)).toEqual([path.join(geminiDir, 'tmp', 'my-proj-x', '.project_root')]);
    expect(p.merges[0]!.merge(null).toString()).toBe(destination);
  });

  it("into the destination's hash folder for a version before 0.29, with no marker", async () => {
    const p = await plan({ installedVersion: '0.26.0', folder: 'my-proj-x' });
    expect(p.placements.map((x) => x.rel)).toEqual([`${projectHash(destination)}/chats/${CHAT}`]);
    expect(p.merges).toEqual([]);
  });

  it('in the layout it was captured in when the resuming version is not known', async () => {
    expect((await plan({ folder: 'a'.repeat(64) })).placements[0]!.rel).toBe(
      `${projectHash(destination)}/chats/${CHAT}`,
    );
    expect((await plan({ folder: 'original' })).placements[0]!.rel).toBe(`my-proj-x/chats/${CHAT}`);
  });

  it(
    'uses the folder projects.json maps the destination to, and one whose marker names it; skips one another ' +
      'directory owns',
    async () => {
      await mkdir(geminiDir, { recursive: true });
      await writeFile(
        path.join(geminiDir, 'projects.json'),
        JSON.stringify({ projects: { [destination]: 'chosen' } }, null, 2),
      );
      expect((await plan({ installedVersion: '0.61.0' })).placements[0]!.rel).toBe(`chosen/chats/${CHAT}`);

      await writeFile(path.join(geminiDir, 'projects.json'), '{"projects":{}}');
      await mkdir(path.join(geminiDir, 'tmp', 'marked'), { recursive: true });
      await writeFile(path.join(geminiDir, 'tmp', 'marked', '.project_root'), destination);
      const marked = await plan({ installedVersion: '0.61.0' });
      expect(marked.placements[0]!.rel).toBe(`marked/chats/${CHAT}`);
      expect(marked.merges).toEqual([]);

      await writeFile(path.join(geminiDir, 'tmp', 'marked', '.project_root'), '/somewhere/else');
      await mkdir(path.join(geminiDir, 'history', 'my-proj-x'), { recursive: true });
      await writeFile(path.join(geminiDir, 'history', 'my-proj-x', '.project_root'), '/another/My_Proj.x');
      await writeFile(
        path.join(geminiDir, 'projects.json'),
        JSON.stringify({ projects: { '/third/my-proj-x': 'my-proj-x-1' } }),
      );
      // my-proj-x is owned by another directory, my-proj-x-1 is mapped to a third: the next free name.
      expect((await plan({ installedVersion: '0.61.0' })).placements[0]!.rel).toBe(`my-proj-x-2/chats/${CHAT}`);
      // A mapping whose folder's marker names another directory is not taken (Gemini CLI drops it).
      await writeFile(path.join(geminiDir, 'projects.json'), JSON.stringify({ projects: { [destination]: 'marked' } }));
      expect((await projectSlug(geminiDir, destination)).slug).toBe('my-proj-x-1');
    },
  );

  it('a projects.json Gemini CLI would reset (not JSON, a bad folder name) counts as empty', async () => {
    await mkdir(geminiDir, { recursive: true });
    for (const text of ['{not json', JSON.stringify({ projects: { [destination]: 'Bad Name' } }), '[]']) {
      await writeFile(path.join(geminiDir, 'projects.json'), text);
      expect((await plan({ installedVersion: '0.61.0' })).placements[0]!.rel).toBe(`my-proj-x/chats/${CHAT}`);
    }
  });

  it('places companions under the same folder, keeping their paths inside it', async () => {
    const p = await plan({
      installedVersion: '0.61.0',
      files: [
        { role: 'primary_transcript', native_path: `orig/chats/${CHAT}` },
        { role: 'session_companion', native_path: `orig/chats/${ID}/agent-1.jsonl` },
        { role: 'session_companion', native_path: `orig/tool-outputs/session-${ID}/out.txt` },
        { role: 'session_companion', native_path: `orig/${ID}/plans/p.md` },
      ],
    });
    expect(p.placements.map((x) => x.rel)).toEqual([
      `my-proj-x/chats/${CHAT}`,
      `my-proj-x/chats/${ID}/agent-1.jsonl`,
      `my-proj-x/tool-outputs/session-${ID}/out.txt`,
      `my-proj-x/${ID}/plans/p.md`,
    ]);
  });
});

describe('Gemini CLI restore: refusals and conflicts', () => {
  it('refuses native paths Gemini CLI never writes for the session', async () => {
    const bad: { role: string; native_path: string }[][] = [
      [{ role: 'primary_transcript', native_path: `orig/chats/session-2026-12-02T02-51-deadbeef.jsonl` }],
      [{ role: 'primary_transcript', native_path: `orig/${CHAT}` }],
      [{ role: 'primary_transcript', native_path: `Not A Folder/chats/${CHAT}` }],
      [
        { role: 'primary_transcript', native_path: `orig/chats/${CHAT}` },
        { role: 'session_companion', native_path: 'orig/logs.json' },
      ],
      [
        { role: 'primary_transcript', native_path: `orig/chats/${CHAT}` },
        { role: 'session_companion', native_path: `other/chats/${ID}/a.jsonl` },
      ],
      [
        { role: 'primary_transcript', native_path: `orig/chats/${CHAT}` },
        { role: 'session_companion', native_path: `orig/tool-outputs/session-other/x` },
      ],
      [{ role: 'primary_transcript', native_path: `orig/chats/../../${CHAT}` }],
    ];
    for (const files of bad) {
      const error = await blueErrorOf(() => plan({ files }));
      expect(error.code, JSON.stringify(files)).toBe('RESTORE_UNSAFE');
    }
  });

  it('reports another chat of the same session in the folder as a duplicate, not one of another session', async () => {
    const chats = path.join(geminiDir, 'tmp', 'my-proj-x', 'chats');
    await mkdir(chats, { recursive: true });
    await writeFile(
      path.join(chats, `session-2026-12-03T10-00-${ID.slice(0, 8)}.jsonl`),
      `{"sessionId":"${ID.slice(0, 8)}-0000-4000-8000-000000000000"}\n`,
    );
    const p = await plan({ installedVersion: '0.61.0' });
    expect(await p.duplicates!()).toEqual([]);
    const converted = path.join(chats, `session-2026-12-02T02-51-${ID.slice(0, 8)}.json`);
    await writeFile(converted, JSON.stringify({ sessionId: ID, messages: [] }, null, 2));
    const duplicates = await p.duplicates!();
    expect(duplicates.map((d) => d.file)).toEqual([converted]);
    expect(duplicates[0]!.hint).toContain(`gemini --resume ${ID}`);
  });

  it('the marker merge leaves a marker naming the destination, and refuses one naming another directory', async () => {
    const file = path.join(geminiDir, 'tmp', 'x', '.project_root');
    const mine = Buffer.from(`${destination}\n`);
    expect(markerFor(mine, destination, file)).toBe(mine);
    expect(markerFor(null, destination, file).toString()).toBe(destination);
    expect(() => markerFor(Buffer.from('/elsewhere'), destination, file)).toThrow(BlueError);
  });
});

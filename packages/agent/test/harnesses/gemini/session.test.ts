/**
 * Gemini CLI's collectSession: the recorded chat with its title and preview, the session's own folders and nothing of
 * the project's shared files, a 0.21 payload without a transcript path, and every refusal (a file outside the session
 * folder or of another session, links, hard links, FIFOs, oversize files).
 */
import { link, mkdir, readFile, rm, symlink, truncate, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { gemini } from '../../../src/harnesses/gemini/index.js';
import { projectHash, slugify } from '../../../src/harnesses/gemini/projects.js';
import { MAX_FILE_BYTES } from '../../../src/harness-kit/session-files.js';
import type { CollectedSession, HookPayload } from '../../../src/harnesses/types.js';
import type { BlueError } from '@blue-agent/contract/errors.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';
import {
  blueErrorOf,
  installTree,
  intervalOf,
  useRecordedHome,
} from '../../../../../test/support/recorded-sessions.js';

const w = useRecordedHome('gemini', 'gemini-v0_39_0');
let oldInterval: Interval;
let tmp: string;
let slug: string;
let chat: string;

beforeAll(async () => {
  oldInterval = await intervalOf('gemini-v0_21_0');
});

beforeEach(async () => {
  tmp = path.join(w.t.home, '.gemini', 'tmp');
  slug = slugify(path.basename(w.cwd));
  await installTree(path.join(w.fixture, 'tmp'), tmp, {
    ROOT: w.t.root,
    GEMINI_PROJECT: slug,
    GEMINI_HASH: projectHash(w.cwd),
  });
  chat = path.join(tmp, slug, 'chats', String(w.recorded.chat));
});

const id = () => w.recorded.session_id;

function payload(extra: Partial<HookPayload> = {}): HookPayload {
  return {
    session_id: id(),
    cwd: w.cwd,
    transcript_path: chat,
    hook_event_name: 'SessionEnd',
    reason: 'exit',
    ...extra,
  };
}

function collect(p: HookPayload = payload(), at: Interval = w.interval): Promise<CollectedSession> {
  return gemini.collectSession(w.t.ctx, { interval: at, payload: p });
}

/** The refusal of a capture: ARTIFACT_INVALID with a hint. */
async function refused(p: HookPayload, at: Interval = w.interval): Promise<BlueError> {
  const error = await blueErrorOf(() => collect(p, at));
  expect(error.code, error.message).toBe('ARTIFACT_INVALID');
  expect(error.hint ?? '').not.toBe('');
  return error;
}

describe('Gemini CLI: collectSession on a recorded session', () => {
  it('captures the chat, with the prompt as title and preview (the injected session context skipped)', async () => {
    const session = await collect();
    expect(session).toEqual({
      sessionId: id(),
      cwd: w.cwd,
      root: tmp,
      files: [
        {
          role: 'primary_transcript',
          name: 'transcript.jsonl',
          nativePath: `${slug}/chats/${String(w.recorded.chat)}`,
          path: chat,
        },
      ],
      title: w.recorded.prompt,
      summary: w.recorded.prompt,
    });
  });

  it("takes the session's own folders as companions and leaves the project's shared files and logs out", async () => {
    const project = path.join(tmp, slug);
    const own = [`chats/${id()}/agent-1.jsonl`, `tool-outputs/session-${id()}/out-1.txt`, `${id()}/plans/plan.md`];
    const shared = [
      'logs.json',
      'shell_history',
      `logs/session-${id()}.jsonl`,
      'checkpoints/c1.json',
      `chats/${id()}x/agent.jsonl`,
      'tool-outputs/session-other/out.txt',
    ];
    for (const rel of [...own, ...shared]) {
      await mkdir(path.dirname(path.join(project, rel)), { recursive: true });
      await writeFile(path.join(project, rel), `${rel}\n`);
    }
    const session = await collect();
    expect(session.files.slice(1).map((f) => [f.role, f.nativePath])).toEqual(
      own.map((rel) => ['session_companion', `${slug}/${rel}`]),
    );
  });

  it("prefers Gemini CLI's own summary of the session as the title", async () => {
    await writeFile(
      chat,
      `${await readFile(chat, 'utf8')}{"$set":{"summary":"Walk through the Makefile ` +
        `build","memoryScratchpad":{"version":1}}}\n`,
    );
    const session = await collect();
    expect(session.title).toBe('Walk through the Makefile build');
    expect(session.summary).toBe(w.recorded.prompt);
  });

  it('finds a 0.21 chat without a transcript path: the JSON document in the hash folder of the cwd', async () => {
    const hashChats = path.join(tmp, projectHash(w.cwd), 'chats');
    await mkdir(hashChats, { recursive: true });
    const name = `session-2026-12-02T02-51-${id().slice(0, 8)}.json`;
    const doc = {
      sessionId: id(),
      projectHash: projectHash(w.cwd),
      startTime: 'x',
      lastUpdated: 'y',
      messages: [
        { id: 'm1', type: 'user', content: 'Rename the build target' },
        { id: 'm2', type: 'gemini', content: 'Done.' },
      ],
    };
    await writeFile(path.join(hashChats, name), JSON.stringify(doc, null, 2));
    // Another session whose short id is the same is not this one.
    await writeFile(
      path.join(hashChats, `session-2026-12-02T02-50-${id().slice(0, 8)}.json`),
      JSON.stringify({ ...doc, sessionId: `${id().slice(0, 8)}-other` }, null, 2),
    );
    await rm(chat);
    const session = await collect(payload({ transcript_path: undefined }), oldInterval);
    expect(session.files).toEqual([
      {
        role: 'primary_transcript',
        name: 'transcript.json',
        nativePath: `${projectHash(w.cwd)}/chats/${name}`,
        path: path.join(hashChats, name),
      },
    ]);
    expect(session.title).toBe('Rename the build target');
  });

  it('without a transcript path and no chat of the session: a clear refusal', async () => {
    const error = await refused(
      payload({ transcript_path: undefined, session_id: '00000000-0000-4000-8000-000000000000' }),
    );
    expect(error.message).toContain('no chat of session 00000000-0000-4000-8000-000000000000 was found');
  });
});

describe('Gemini CLI: collectSession refuses', () => {
  it('a transcript outside the session folder, of another shape, or holding another session', async () => {
    const outside = path.join(w.t.root, 'elsewhere.jsonl');
    await writeFile(outside, await readFile(chat));
    expect((await refused(payload({ transcript_path: outside }))).message).toContain(
      "outside Gemini CLI's session folder",
    );
    const misnamed = path.join(tmp, slug, 'chats', 'notes.jsonl');
    await writeFile(misnamed, await readFile(chat));
    expect((await refused(payload({ transcript_path: misnamed }))).message).toContain(
      'is not <project>/chats/session-<time>-',
    );
    const other = path.join(tmp, slug, 'chats', `session-2026-01-01T00-00-${id().slice(0, 8)}.jsonl`);
    await writeFile(
      other,
      (await readFile(chat, 'utf8')).replace(id(), `${id().slice(0, 8)}-0000-4000-8000-000000000000`),
    );
    expect((await refused(payload({ transcript_path: other }))).message).toContain('holds session');
  });

  it('a symbolic link, a hard link or a FIFO for the chat, and a chat over the size limit', async () => {
    const target = path.join(w.t.root, 'real.jsonl');
    await writeFile(target, await readFile(chat));
    const linked = path.join(tmp, slug, 'chats', `session-2026-01-01T00-01-${id().slice(0, 8)}.jsonl`);
    await symlink(target, linked);
    expect((await refused(payload({ transcript_path: linked }))).message).toContain('symbolic link');
    const hard = path.join(tmp, slug, 'chats', `session-2026-01-01T00-02-${id().slice(0, 8)}.jsonl`);
    await link(chat, hard);
    expect((await refused(payload({ transcript_path: hard }))).message).toMatch(/link/);
    const fifo = path.join(tmp, slug, 'chats', `session-2026-01-01T00-03-${id().slice(0, 8)}.jsonl`);
    execFileSync('mkfifo', [fifo]);
    expect((await refused(payload({ transcript_path: fifo }))).message).toContain('not a regular file');
    const big = path.join(tmp, slug, 'chats', `session-2026-01-01T00-04-${id().slice(0, 8)}.jsonl`);
    await writeFile(big, '');
    await truncate(big, MAX_FILE_BYTES + 1);
    expect((await refused(payload({ transcript_path: big }))).message).toContain('over the');
  });

  it('a companion folder holding a link', async () => {
    const dir = path.join(tmp, slug, 'chats', id());
    await mkdir(dir, { recursive: true });
    await symlink('/etc/hostname', path.join(dir, 'agent.jsonl'));
    expect((await refused(payload())).message).toContain('symbolic link');
  });
});

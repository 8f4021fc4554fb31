/**
 * Qwen Code's collectSession: the recorded transcript with its title and preview, a custom title winning, the
 * transcript found from the working directory when the hook names none, and the refusals (a file outside the projects
 * folder, of another shape or another session, links, hard links, oversize).
 */
import { appendFile, link, mkdir, readFile, symlink, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import type { BlueError } from '@blue-agent/contract/errors.js';
import { qwen } from '../../../src/harnesses/qwen/index.js';
import { qwenProjectKey } from '../../../src/harnesses/qwen/session.js';
import { MAX_FILE_BYTES } from '../../../src/harness-kit/session-files.js';
import type { CollectedSession, HookPayload } from '../../../src/harnesses/types.js';
import { blueErrorOf, installTree, useRecordedHome } from '../../../../../test/support/recorded-sessions.js';

const w = useRecordedHome('qwen', 'qwen-v0_15_6');
let projects: string;
let transcript: string;

beforeEach(async () => {
  projects = path.join(w.t.home, '.qwen', 'projects');
  await installTree(path.join(w.fixture, 'projects'), projects, {
    ROOT: w.t.root,
    QWEN_PROJECT: qwenProjectKey(w.cwd),
  });
  transcript = path.join(projects, qwenProjectKey(w.cwd), 'chats', `${w.recorded.session_id}.jsonl`);
});

const payload = (extra: Partial<HookPayload> = {}): HookPayload => ({
  session_id: w.recorded.session_id,
  cwd: w.cwd,
  transcript_path: transcript,
  hook_event_name: 'SessionEnd',
  reason: 'prompt_input_exit',
  ...extra,
});
const collect = (p: HookPayload = payload()): Promise<CollectedSession> =>
  qwen.collectSession(w.t.ctx, { interval: w.interval, payload: p });

async function refused(p: HookPayload): Promise<BlueError> {
  const error = await blueErrorOf(() => collect(p));
  expect(error.code, error.message).toBe('ARTIFACT_INVALID');
  expect(error.hint ?? '').not.toBe('');
  return error;
}

describe('Qwen Code: collectSession on a recorded session', () => {
  it('captures the transcript alone, with the prompt as title and preview', async () => {
    expect(await collect()).toEqual({
      sessionId: w.recorded.session_id,
      cwd: w.cwd,
      root: projects,
      files: [
        {
          role: 'primary_transcript',
          name: 'transcript.jsonl',
          nativePath: `${qwenProjectKey(w.cwd)}/chats/${w.recorded.session_id}.jsonl`,
          path: transcript,
        },
      ],
      title: w.recorded.prompt,
      summary: w.recorded.prompt,
    });
  });

  it('leaves the runtime file beside it out, and takes the newest custom title', async () => {
    await writeFile(transcript.replace(/\.jsonl$/, '.runtime.json'), '{"pid":1,"hostname":"here"}');
    const title = (name: string) =>
      `${JSON.stringify({
        type: 'system',
        subtype: 'custom_title',
        systemPayload: { customTitle: name, titleSource: 'manual' },
      })}\n`;
    await appendFile(transcript, title('First name') + title('Build steps, explained'));
    const session = await collect();
    expect(session.files).toHaveLength(1);
    expect(session.title).toBe('Build steps, explained');
    expect(session.summary).toBe(w.recorded.prompt);
  });

  it('finds the transcript from the working directory when the hook names none', async () => {
    expect((await collect(payload({ transcript_path: undefined }))).files[0]!.path).toBe(transcript);
    const error = await refused(payload({ transcript_path: undefined, cwd: path.join(w.t.root, 'elsewhere') }));
    expect(error.message).toContain('no transcript of session');
  });
});

describe('Qwen Code: collectSession refuses', () => {
  it('a transcript outside the projects folder, of another shape, or of another session', async () => {
    const outside = path.join(w.t.root, 'x.jsonl');
    await writeFile(outside, await readFile(transcript));
    expect((await refused(payload({ transcript_path: outside }))).message).toContain(
      "outside Qwen Code's projects folder",
    );
    const runtime = transcript.replace(/\.jsonl$/, '.runtime.json');
    await writeFile(runtime, '{}');
    expect((await refused(payload({ transcript_path: runtime }))).message).toContain('is not <project>/chats/');
    const other = '00000000-0000-4000-8000-000000000000';
    const otherFile = path.join(path.dirname(transcript), `${other}.jsonl`);
    await writeFile(otherFile, await readFile(transcript));
    expect((await refused(payload({ session_id: other, transcript_path: otherFile }))).message).toContain(
      `not of session ${other}`,
    );
  });

  it('a symbolic link, a hard link, or a transcript over the size limit', async () => {
    const real = path.join(w.t.root, 'real.jsonl');
    await writeFile(real, await readFile(transcript));
    const id = '11111111-0000-4000-8000-000000000000';
    const chats = path.dirname(transcript);
    await symlink(real, path.join(chats, `${id}.jsonl`));
    expect(
      (await refused(payload({ session_id: id, transcript_path: path.join(chats, `${id}.jsonl`) }))).message,
    ).toContain('symbolic link');
    await link(transcript, path.join(w.t.root, 'second-name.jsonl'));
    expect((await refused(payload())).message).toMatch(/link/);
    const big = '22222222-0000-4000-8000-000000000000';
    await mkdir(chats, { recursive: true });
    await writeFile(path.join(chats, `${big}.jsonl`), '');
    await truncate(path.join(chats, `${big}.jsonl`), MAX_FILE_BYTES + 1);
    expect(
      (await refused(payload({ session_id: big, transcript_path: path.join(chats, `${big}.jsonl`) }))).message,
    ).toContain('over the');
  });
});

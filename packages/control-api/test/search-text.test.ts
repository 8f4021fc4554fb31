/**
 * What the server indexes of a session: the user and assistant text of its conversation and of its subagents', not
 * tool output, secrets masked, bounded.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalBlobStore } from '../src/blobs/local.js';
import { MAX_SEARCH_TEXT_CHARS, ONE_PASS_BYTES, searchText, storedSearchText } from '../src/search-text.js';
import { loadProfiles, type ProfileSet } from '@blue-agent/contract/profiles/index.js';
import { agentRoot } from '../../../test/support/context.js';
import { conversationBundle } from '../../../test/support/conversation-bundle.js';

type Conversation = Parameters<typeof searchText>[0];
const conversation = (
  turns: { role: 'user' | 'assistant' | 'tool'; text: string }[],
  sections?: { title: string; transcript: Conversation }[],
): Conversation => ({
  turns,
  skipped: 0,
  truncated: false,
  ...(sections === undefined ? {} : { sections }),
});

describe('searchText', () => {
  it(
    'keeps user and assistant text, subagents included, one turn a line, white space collapsed; leaves tool ' +
      'output out',
    () => {
      const text = searchText(
        conversation(
          [
            { role: 'user', text: 'Fix   the\n\nflaky test' },
            { role: 'tool', text: 'cat secret-file-contents' },
            { role: 'assistant', text: 'Done:\tserialised the retries.' },
          ],
          [{ title: 'subagent', transcript: conversation([{ role: 'assistant', text: 'Listed the folder.' }]) }],
        ),
      );
      expect(text).toBe('Fix the flaky test\nDone: serialised the retries.\nListed the folder.');
    },
  );

  it('masks secrets, and never leaves the start of one at the cut', () => {
    const token = `ghp_${'A1b2C3d4'.repeat(5)}`;
    expect(searchText(conversation([{ role: 'user', text: `use ${token} please` }]))).not.toContain(token);
    const long = 'x'.repeat(MAX_SEARCH_TEXT_CHARS - 10);
    const cut = searchText(
      conversation([
        { role: 'user', text: long },
        { role: 'assistant', text: `key ${token}` },
      ]),
    );
    expect(cut.length).toBeLessThanOrEqual(MAX_SEARCH_TEXT_CHARS);
    // Cut after masking: the end is part of the mask, not `ghp_A` left over from a token cut in two.
    expect(cut).not.toContain('ghp_');
    expect(cut.endsWith('x\nkey ')).toBe(false);
  });

  it('is bounded however long the conversation, and never cuts a surrogate pair in two', () => {
    const huge = conversation(Array.from({ length: 5000 }, () => ({ role: 'user' as const, text: '😀'.repeat(100) })));
    const text = searchText(huge);
    expect(text.length).toBeLessThanOrEqual(MAX_SEARCH_TEXT_CHARS);
    expect(() => encodeURIComponent(text)).not.toThrow();
  });
});

describe('storedSearchText', () => {
  let work: string;
  let profiles: ProfileSet;
  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'blue-search-text-'));
    profiles = await loadProfiles(path.join(agentRoot, 'profiles'));
  });
  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  /** The search text of `bytes` stored in a local blob store, as the indexer reads it. */
  async function stored(bytes: Buffer, name: string): Promise<string | undefined> {
    const blobs = await createLocalBlobStore({
      dir: path.join(work, `blobs-${name}`),
      publicUrl: 'http://127.0.0.1:1',
      secret: 'x'.repeat(32),
    });
    const key = `sessions/${name}.tar.gz`;
    await mkdir(path.dirname(blobs.fileOf!(key)), { recursive: true });
    await writeFile(blobs.fileOf!(key), bytes);
    const artifact = {
      blob_key: key,
      size_bytes: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      artifact_format: 'blue-session-bundle-v1',
    };
    return storedSearchText(blobs, artifact, profiles);
  }

  const turns = ['Why does the watchdog race the uploader?', 'It takes the lock twice; I serialised them.'];
  const toolOutput = (bytes: number) =>
    JSON.stringify({
      type: 'user',
      message: { role: 'user', content: [{ type: 'tool_result', content: 'y'.repeat(bytes) }] },
    });

  it('reads a small bundle (kept in memory while verified) and a large one (read again) alike', async () => {
    const small = await conversationBundle(work, { sessionId: 'small', title: 't', cwd: '/p', turns });
    const large = await conversationBundle(work, {
      sessionId: 'large',
      title: 't',
      cwd: '/p',
      turns,
      extra: [toolOutput(ONE_PASS_BYTES + 1024)],
    });
    const expected = 'Why does the watchdog race the uploader?\nIt takes the lock twice; I serialised them.';
    expect(await stored(small, 'small')).toBe(expected);
    expect(await stored(large, 'large')).toBe(expected);
  });

  it('reads nothing of a bundle whose bytes are not what its manifest says', async () => {
    const bytes = await conversationBundle(work, { sessionId: 'bad', title: 't', cwd: '/p', turns });
    const broken = Buffer.from(bytes);
    broken[Math.floor(broken.length / 2)]! ^= 0xff;
    expect(await stored(broken, 'broken')).toBeUndefined();
  });
});

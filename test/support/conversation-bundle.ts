/**
 * A verified session bundle of a Claude Code conversation, for the Control API's tests of what sessions say (search,
 * the transcript viewer, the dashboard): `turns` alternate user and assistant, `extra` are further transcript lines.
 */
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { writeBundle } from '../../packages/contract/src/bundle/index.js';
import { loadProfiles, type ProfileSet } from '../../packages/contract/src/profiles/index.js';
import { claudeProjectKey } from './cli-process.js';
import { agentRoot } from './context.js';

let profiles: Promise<ProfileSet> | undefined;

export interface Conversation {
  sessionId: string;
  title: string;
  cwd: string;
  turns: string[];
  /** Transcript lines after the turns (tool results, say). */
  extra?: string[];
}

/** The bundle's bytes; its sources and the bundle file are written in a new folder under `work`. */
export async function conversationBundle(work: string, c: Conversation): Promise<Buffer> {
  const src = await mkdtemp(path.join(work, 'conversation-'));
  const key = claudeProjectKey(c.cwd);
  await mkdir(path.join(src, key), { recursive: true });
  const lines = c.turns.map((text, i) => {
    const role = i % 2 === 0 ? 'user' : 'assistant';
    return JSON.stringify({
      type: role,
      sessionId: c.sessionId,
      cwd: c.cwd,
      timestamp: '2026-01-01T10:00:00.000Z',
      message: { role, content: text },
    });
  });
  await writeFile(path.join(src, key, `${c.sessionId}.jsonl`), `${[...lines, ...(c.extra ?? [])].join('\n')}\n`);
  const out = path.join(src, 'bundle.tar.gz');
  profiles ??= loadProfiles(path.join(agentRoot, 'profiles'));
  await writeBundle(
    {
      harness: 'claude',
      profile: 'claude-v2_0_12',
      sessionId: c.sessionId,
      capturedAtUnixMs: Date.UTC(2026, 0, 1),
      cwd: c.cwd,
      title: c.title,
      root: src,
      files: [
        {
          role: 'primary_transcript',
          name: `${c.sessionId}.jsonl`,
          nativePath: `${key}/${c.sessionId}.jsonl`,
          path: path.join(src, key, `${c.sessionId}.jsonl`),
        },
      ],
    },
    out,
    { profiles: await profiles },
  );
  return readFile(out);
}

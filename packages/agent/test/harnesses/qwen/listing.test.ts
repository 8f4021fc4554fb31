/**
 * Qwen Code's sessions as the idle sweep and backfill list them: `<key>/chats/<id>.jsonl` only, with the version its
 * records carry.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect, it } from 'vitest';
import { ADAPTERS } from '../../../src/harnesses/index.js';
import { findInterval } from '@blue-agent/contract/profiles/index.js';
import { makeTestHome } from '../../../../../test/support/context.js';
import { shippedProfiles } from '../../../../../test/support/restore-homes.js';

it('lists the chats of every project folder, not the files beside them, and the version that wrote each', async () => {
  const t = await makeTestHome();
  try {
    const profiles = await shippedProfiles();
    const interval = [...profiles.get('qwen')!.doc.intervals]
      .reverse()
      .find((i) => i.operations.includes('session_capture'))!;
    expect(findInterval(profiles, interval.profile)).toBeDefined();
    const ctx = t.context();
    const root = path.join(t.home, '.qwen', interval.session!.root!);
    const chats = path.join(root, '-work-app', 'chats');
    await mkdir(chats, { recursive: true });
    await mkdir(path.join(root, '-work-app', 'other'), { recursive: true });
    const id = 'a1b2c3d4-0000-4000-8000-000000000001';
    await writeFile(
      path.join(chats, `${id}.jsonl`),
      `${JSON.stringify({ sessionId: id, type: 'user', version: '0.24.4' })}\n`,
    );
    await writeFile(path.join(chats, `${id}.runtime.json`), '{}');
    await writeFile(path.join(root, '-work-app', 'other', 'x.jsonl'), '{}\n');
    const listing = await ADAPTERS.qwen.listSessions!(ctx, interval, 100);
    expect(listing.sessions.map((s) => s.payload.session_id)).toEqual([id]);
    expect(await listing.sessions[0]!.version()).toBe('0.24.4');
  } finally {
    await t.cleanup();
  }
});

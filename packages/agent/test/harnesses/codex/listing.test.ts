/**
 * Codex's sessions as the idle sweep and backfill list them: rollouts in the dated folders, by the id their name ends
 * with, and the Codex version their session_meta line records.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect, it } from 'vitest';
import { ADAPTERS } from '../../../src/harnesses/index.js';
import { findInterval } from '@blue-agent/contract/profiles/index.js';
import { shippedProfiles } from '../../../../../test/support/restore-homes.js';
import { makeTestHome } from '../../../../../test/support/context.js';

it('lists every rollout of the dated folders with its id, and reads the version that wrote it', async () => {
  const t = await makeTestHome();
  try {
    const home = path.join(t.home, '.codex');
    const id = '0199a213-81c0-7800-8aa1-bbab2a035a53';
    const day = path.join(home, 'sessions', '2026', '11', '30');
    await mkdir(day, { recursive: true });
    const rollout = path.join(day, `rollout-2026-11-30T10-00-00-${id}.jsonl`);
    await writeFile(
      rollout,
      `${JSON.stringify({ type: 'session_meta', payload: { id, cwd: '/w', cli_version: '0.171.0' } })}\n`,
    );
    await writeFile(path.join(day, 'rollout-not-a-session.jsonl'), '{}\n');
    const { interval } = findInterval(await shippedProfiles(), 'codex-v0_145_0')!;
    const listing = await ADAPTERS.codex.listSessions!(t.context({ env: { CODEX_HOME: home } }), interval, 100);
    expect(listing.watch).toEqual([{ dir: path.join(home, 'sessions'), depth: 3 }]);
    expect(listing.sessions.map((s) => [s.payload, s.file])).toEqual([
      [{ session_id: id, transcript_path: rollout }, rollout],
    ]);
    expect(await listing.sessions[0]!.version()).toBe('0.171.0');
  } finally {
    await t.cleanup();
  }
});

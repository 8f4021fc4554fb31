/**
 * Kimi Code's restore: its recorded session restored through the engine into another HOME and folder (the folder
 * under the destination's work-dir key, the state's directory and agent homes and the wire's bindings rewritten —
 * the profile's restore_rewrite —, the session's line appended to session_index.jsonl with every other byte kept, a
 * second restore finding it all in place); the index merge on its own; and the planner's refusals.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { BundleManifest } from '@blue-agent/contract/bundle/index.js';
import { planKimiCodeRestore, withIndexLine } from '../../../src/harnesses/kimi/restore.js';
import { kimiCodeWorkDirKey } from '../../../src/harnesses/kimi/workdir.js';
import { applyRestore, prepareRestore } from '../../../src/restore/index.js';
import type { TestHome } from '../../../../../test/support/context.js';
import { blueErrorOf, intervalOf } from '../../../../../test/support/recorded-sessions.js';
import { fixtureBundle, shippedProfiles, useRestoreHomes } from '../../../../../test/support/restore-homes.js';
import { KIMI_INDEX_LINE } from './rig.js';

let source: TestHome;
let target: TestHome;
let destination: string;
useRestoreHomes('my project', (homes) => ({ source, target, destination } = homes));

const prepare = async (bundle: string) =>
  prepareRestore(target.ctx, { bundleFile: bundle, destination, profiles: await shippedProfiles() });

describe('Kimi Code: a whole restore of its recorded session', () => {
  it('moves the session to the destination, rewriting what names the old folder, merges its index line', async () => {
    const session = await fixtureBundle('kimi', source, path.join(source.root, 'kimi.bundle'));
    const home = path.join(target.home, '.kimi-code');
    await mkdir(home, { recursive: true });
    // The user's index, without a final line break, and a line that is not valid UTF-8.
    const index = Buffer.concat([
      Buffer.from(KIMI_INDEX_LINE),
      Buffer.from('{"sessionId":"x","note":"'),
      Buffer.from([0xff]),
      Buffer.from('"}'),
    ]);
    await writeFile(path.join(home, 'session_index.jsonl'), index);

    const prepared = await prepare(session.bundle);
    const key = kimiCodeWorkDirKey(destination);
    const sessionDir = path.join(home, 'sessions', key, session.sessionId);
    expect(prepared.summary.rewritten.map((r) => r.file).sort()).toEqual([
      path.join(sessionDir, 'agents', 'main', 'wire.jsonl'),
      path.join(sessionDir, 'state.json'),
    ]);
    const result = await applyRestore(target.ctx, prepared);
    await prepared.dispose();
    expect(result.resumeArgv).toEqual(['kimi', '--session', session.sessionId]);
    expect(result.merged).toEqual([path.join(home, 'session_index.jsonl')]);

    const state = JSON.parse(await readFile(path.join(sessionDir, 'state.json'), 'utf8')) as {
      cwd: string;
      agents: Record<string, { homedir: string }>;
    };
    expect(state.cwd).toBe(destination);
    expect(state.agents.main!.homedir).toBe(path.join(sessionDir, 'agents', 'main'));
    const sourceKey = kimiCodeWorkDirKey(session.cwd);
    const captured = await readFile(
      path.join(source.home, '.kimi-code', 'sessions', sourceKey, session.sessionId, 'agents', 'main', 'wire.jsonl'),
      'utf8',
    );
    const placed = await readFile(path.join(sessionDir, 'agents', 'main', 'wire.jsonl'), 'utf8');
    expect(captured).toContain(`"workspaceId":"${sourceKey}"`);
    expect(placed).toBe(captured.replaceAll(`"workspaceId":"${sourceKey}"`, `"workspaceId":"${key}"`));

    const line = `${JSON.stringify({ sessionId: session.sessionId, sessionDir, workDir: destination })}\n`;
    expect(await readFile(path.join(home, 'session_index.jsonl'))).toEqual(
      Buffer.concat([index, Buffer.from(`\n${line}`)]),
    );

    const again = await prepare(session.bundle);
    expect(again.collision).toBe('identical');
    await again.dispose();
  });
});

describe('Kimi Code: session_index.jsonl', () => {
  const line = '{"sessionId":"s1","sessionDir":"/h/sessions/wd_a_1/s1","workDir":"/a"}\n';
  it('creates the file, appends the line, and leaves an index that already leads to the folder alone', () => {
    expect(withIndexLine(null, line, 's1', '/h/sessions/wd_a_1/s1').toString()).toBe(line);
    const other = Buffer.from('{"sessionId":"s0","sessionDir":"/x/s0","workDir":"/x"}\n');
    expect(withIndexLine(other, line, 's1', '/h/sessions/wd_a_1/s1').toString()).toBe(other.toString() + line);
    const has = Buffer.from(`junk\n${line}`);
    expect(withIndexLine(has, line, 's1', '/h/sessions/wd_a_1/s1')).toBe(has);
  });

  it('appends when the last word on the session is another folder, or its deletion', () => {
    const moved = Buffer.from(`${line}{"sessionId":"s1","sessionDir":"/h/sessions/wd_b_2/s1","workDir":"/b"}\n`);
    expect(withIndexLine(moved, line, 's1', '/h/sessions/wd_a_1/s1').toString()).toBe(moved.toString() + line);
    const deleted = Buffer.from(`${line}{"sessionId":"s1","deleted":true}`);
    expect(withIndexLine(deleted, line, 's1', '/h/sessions/wd_a_1/s1').toString()).toBe(
      `${deleted.toString()}\n${line}`,
    );
  });
});

describe('Kimi Code: the restore planner refuses', () => {
  const ID = 'session_0b7c4a1e-1111-4222-8333-944455556666';
  async function plan(files: { role: string; native_path?: string }[]) {
    const manifest = {
      native_session_id: ID,
      files: files.map((f, i) => ({
        ...f,
        path: `files/000${i}-x`,
        size: 2,
        sha256: createHash('sha256').update('{}').digest('hex'),
      })),
    } as unknown as BundleManifest;
    const staged = files.map((_, i) => path.join(target.root, `staged-${i}`));
    for (const file of staged) await writeFile(file, '{}');
    return planKimiCodeRestore(
      target.ctx,
      { manifest, files: staged, destination, interval: await intervalOf('kimi-v2_0_2') },
      path.join(target.home, '.kimi-code'),
    );
  }
  const WD = 'wd_src_000000000000';

  it('a file without a native path, a bundle without its wire log, and a bundle without its state', async () => {
    expect((await blueErrorOf(() => plan([{ role: 'kimi_state' }]))).message).toContain('has no native_path');
    expect(
      (await blueErrorOf(() => plan([{ role: 'kimi_state', native_path: `${WD}/${ID}/state.json` }]))).message,
    ).toContain('has no agents/main/wire.jsonl');
    expect(
      (
        await blueErrorOf(() =>
          plan([{ role: 'agent_wire_history', native_path: `${WD}/${ID}/agents/main/wire.jsonl` }]),
        )
      ).message,
    ).toContain('has no state.json');
  });

  it('a state.json the bundle holds that is not a JSON object', async () => {
    const p = await plan([
      { role: 'kimi_state', native_path: `${WD}/${ID}/state.json` },
      { role: 'agent_wire_history', native_path: `${WD}/${ID}/agents/main/wire.jsonl` },
    ]);
    const state = p.placements.find((x) => x.rel.endsWith('state.json'))!;
    for (const bad of ['[1]', 'null', 'nope'])
      expect(() => state.rewrite!.apply(Buffer.from(bad)), bad).toThrow(/state\.json is not/);
  });
});

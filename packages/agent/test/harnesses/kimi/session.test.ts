/**
 * Kimi Code's collectSession on its recorded session (fixtures/sessions/kimi/<version>/): the wire log and the
 * sanitised state, with its title; subagents' wire logs, plans, offloaded blobs and attachments taken, this machine's
 * tasks, undo snapshots, cron, logs and notification state left out; the folder found from the working directory or
 * by the session id; a state of version 1 (Kimi Code before 0.33); and the refusals (no folder, two folders, a state
 * that is not JSON or names another session, links, hard links, FIFOs, oversize).
 */
import { execFileSync } from 'node:child_process';
import { link, mkdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { kimi } from '../../../src/harnesses/kimi/index.js';
import { kimiCodeWorkDirKey } from '../../../src/harnesses/kimi/workdir.js';
import type { CollectedSession, HookPayload } from '../../../src/harnesses/types.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';
import {
  expectArtifactInvalid,
  installTree,
  intervalOf,
  workDir,
  useRecordedHome,
} from '../../../../../test/support/recorded-sessions.js';

const w = useRecordedHome('kimi', 'kimi-v2_0_2');
let sessions: string;
let key: string;
let sessionDir: string;

beforeEach(async () => {
  sessions = path.join(w.t.home, '.kimi-code', 'sessions');
  key = kimiCodeWorkDirKey(w.cwd);
  await installTree(path.join(w.fixture, 'sessions'), sessions, { ROOT: w.t.root, KIMI_WORKDIR: key });
  sessionDir = path.join(sessions, key, w.recorded.session_id);
});

const payload = (extra: Partial<HookPayload> = {}): HookPayload => ({
  hook_event_name: 'Stop',
  session_id: w.recorded.session_id,
  cwd: w.cwd,
  ...extra,
});
const collect = (p: HookPayload = payload(), at: Interval = w.interval): Promise<CollectedSession> =>
  kimi.collectSession(w.t.ctx, { interval: at, payload: p });
const stateOf = (s: CollectedSession) =>
  JSON.parse(new TextDecoder().decode(s.files.find((f) => f.role === 'kimi_state')!.content)) as Record<
    string,
    unknown
  >;
const rel = (inside: string) => `${key}/${w.recorded.session_id}/${inside}`;

async function put(inside: string, text = '{}\n'): Promise<string> {
  const file = path.join(sessionDir, ...inside.split('/'));
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, text);
  return file;
}

describe('Kimi Code: collectSession on a recorded session', () => {
  it('captures the main wire log and the sanitised state, titled by the state', async () => {
    const session = await collect();
    expect(session).toMatchObject({
      sessionId: w.recorded.session_id,
      cwd: w.cwd,
      root: sessions,
      title: w.recorded.prompt,
      summary: w.recorded.prompt,
    });
    expect(session.files.map((f) => [f.role, f.name, f.nativePath])).toEqual([
      ['agent_wire_history', 'wire.jsonl', rel('agents/main/wire.jsonl')],
      ['kimi_state', 'state.json', rel('state.json')],
    ]);
    const raw = JSON.parse(await readFile(path.join(sessionDir, 'state.json'), 'utf8')) as Record<string, unknown>;
    const { custom: _custom, ...kept } = raw;
    expect(stateOf(session)).toEqual(kept);
    expect(raw.custom).toEqual({});
  });

  it('takes subagents, plans, blobs and attachments; leaves tasks, undo snapshots, cron, logs, notify', async () => {
    for (const inside of [
      'agents/agent-0/wire.jsonl',
      'agents/main/plans/p.md',
      'agents/agent-0/blobs/abc',
      'attachments/img.png',
      'media-originals/a/b.png',
    ])
      await put(inside);
    for (const inside of [
      'agents/main/tasks/t1.json',
      'agents/main/tasks/t1/output.log',
      'agents/main/file-history/abc@v2',
      'agents/main/cron/jobs.json',
      'logs/kimi-code.log',
      'notify/state.json',
      'agents/.tmp/wire.jsonl',
      'other.txt',
    ])
      await put(inside);
    const session = await collect();
    expect(session.files.map((f) => [f.role, f.nativePath])).toEqual([
      ['agent_wire_history', rel('agents/main/wire.jsonl')],
      ['kimi_state', rel('state.json')],
      ['session_state', rel('agents/agent-0/wire.jsonl')],
      ['session_state', rel('agents/agent-0/blobs/abc')],
      ['session_state', rel('agents/main/plans/p.md')],
      ['session_state', rel('attachments/img.png')],
      ['session_state', rel('media-originals/a/b.png')],
    ]);
    expect(new Set(session.files.map((f) => f.name)).size).toBe(session.files.length);
  });

  it('titles by the first prompt in the wire when the state has no title', async () => {
    const file = path.join(sessionDir, 'state.json');
    const state = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    await writeFile(file, JSON.stringify({ ...state, title: '', lastPrompt: 'later' }));
    expect(await collect()).toMatchObject({ title: w.recorded.prompt, summary: w.recorded.prompt });
  });

  it('finds the folder by the session id when the payload has another cwd or none; cwd from the state', async () => {
    const elsewhere = await workDir(w.t.root, 'elsewhere');
    expect((await collect(payload({ cwd: elsewhere }))).files).toHaveLength(2);
    const { cwd: _omit, ...noCwd } = payload();
    expect(await collect(noCwd)).toMatchObject({ cwd: w.cwd });
  });

  it('reads a state of version 1 (Kimi Code 0.10 to 0.32) by its own keys', async () => {
    await writeFile(
      path.join(sessionDir, 'state.json'),
      JSON.stringify({
        createdAt: '2026-12-02T03:00:00Z',
        updatedAt: '2026-12-02T03:01:00Z',
        title: 'Old one',
        isCustomTitle: false,
        lastPrompt: 'Old one',
        workDir: w.cwd,
        custom: { x: 1 },
        agents: { main: { homedir: '/h', type: 'main', parentAgentId: null } },
      }),
    );
    const session = await collect(payload(), await intervalOf('kimi-v0_10_0'));
    expect(stateOf(session)).toEqual({
      createdAt: '2026-12-02T03:00:00Z',
      updatedAt: '2026-12-02T03:01:00Z',
      title: 'Old one',
      isCustomTitle: false,
      lastPrompt: 'Old one',
      workDir: w.cwd,
      agents: { main: { homedir: '/h', type: 'main', parentAgentId: null } },
    });
    expect(session.title).toBe('Old one');
  });
});

describe('Kimi Code: what is refused', () => {
  it('a session that has no folder, or folders under two work dirs', async () => {
    const missing = 'session_00000000-0000-4000-8000-000000000000';
    await expectArtifactInvalid(
      () => collect(payload({ session_id: missing })),
      path.join(sessions, key, missing),
      /no Kimi Code session folder/,
    );
    const other = path.join(sessions, 'wd_other_000000000000', w.recorded.session_id);
    await mkdir(other, { recursive: true });
    await expectArtifactInvalid(
      () => collect(payload({ cwd: path.join(w.t.root, 'nowhere') })),
      path.join(sessions, kimiCodeWorkDirKey(path.join(w.t.root, 'nowhere')), w.recorded.session_id),
      /folders under 2 work dirs/,
    );
  });

  it('a state that is not JSON, names another session, or is far too large; a missing wire log', async () => {
    const file = path.join(sessionDir, 'state.json');
    const good = await readFile(file, 'utf8');
    await writeFile(file, '{"id": ');
    await expectArtifactInvalid(() => collect(), file, /is not JSON/);
    await writeFile(file, good.replace(w.recorded.session_id, 'session_someone-else'));
    await expectArtifactInvalid(() => collect(), file, /names session "session_someone-else"/);
    await writeFile(file, `{"pad": "${'x'.repeat(4 * 1024 * 1024)}"}`);
    await expectArtifactInvalid(() => collect(), file, /is \d+ bytes/);
    await writeFile(file, good);
    await rm(path.join(sessionDir, 'agents', 'main', 'wire.jsonl'));
    await expectArtifactInvalid(
      () => collect(),
      path.join(sessionDir, 'agents', 'main', 'wire.jsonl'),
      /does not exist/,
    );
  });

  it('links: a linked state, wire log, agent folder, session folder, or a link among the plans', async () => {
    const wire = path.join(sessionDir, 'agents', 'main', 'wire.jsonl');
    await rename(wire, path.join(w.t.root, 'wire.jsonl'));
    await symlink(path.join(w.t.root, 'wire.jsonl'), wire);
    await expectArtifactInvalid(() => collect(), wire, /symbolic link/);
    await rm(wire);
    await rename(path.join(w.t.root, 'wire.jsonl'), wire);

    await mkdir(path.join(w.t.root, 'agent'), { recursive: true });
    await symlink(path.join(w.t.root, 'agent'), path.join(sessionDir, 'agents', 'agent-1'));
    await expectArtifactInvalid(() => collect(), path.join(sessionDir, 'agents', 'agent-1'), /symbolic link/);
    await rm(path.join(sessionDir, 'agents', 'agent-1'));

    const plan = await put('agents/main/plans/real.md', '#');
    await symlink(plan, path.join(sessionDir, 'agents', 'main', 'plans', 'linked.md'));
    await expectArtifactInvalid(
      () => collect(),
      path.join(sessionDir, 'agents', 'main', 'plans', 'linked.md'),
      /symbolic link/,
    );
    await rm(path.join(sessionDir, 'agents', 'main', 'plans'), { recursive: true });

    await rename(sessionDir, path.join(w.t.root, 'real-session'));
    await symlink(path.join(w.t.root, 'real-session'), sessionDir);
    await expectArtifactInvalid(() => collect(), sessionDir, /symbolic link/);
  });

  it('a hard link or a FIFO among the session files', async () => {
    const secret = path.join(w.t.root, 'secret');
    await writeFile(secret, 'token=abc\n');
    await mkdir(path.join(sessionDir, 'attachments'), { recursive: true });
    const linked = path.join(sessionDir, 'attachments', 'notes.txt');
    await link(secret, linked);
    await expectArtifactInvalid(() => collect(), linked, /has 2 hard links/);
    await rm(linked);

    const state = path.join(sessionDir, 'state.json');
    await link(state, path.join(w.t.root, 'state-second-name.json'));
    await expectArtifactInvalid(() => collect(), state, /has 2 hard links/);
    await rm(path.join(w.t.root, 'state-second-name.json'));

    const fifo = path.join(sessionDir, 'agents', 'main', 'blobs', 'fifo');
    await mkdir(path.dirname(fifo), { recursive: true });
    execFileSync('mkfifo', [fifo]);
    await expectArtifactInvalid(() => collect(), fifo, /a FIFO/);
  });

  it('more than 2048 files', async () => {
    const many = path.join(sessionDir, 'attachments');
    await mkdir(many);
    for (let i = 0; i < 2048; i++) await writeFile(path.join(many, `f${i}`), '');
    await expectArtifactInvalid(() => collect(), many, /more than \d+ files/);
  });
});

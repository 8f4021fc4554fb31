import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { link, mkdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { kimi } from '../../../../src/harnesses/kimi/index.js';
import {
  kimiCanonicalPath,
  kimiWorkDirHash,
  sanitizeKimiState,
} from '../../../../src/harnesses/kimi/legacy/session.js';
import type { CollectedSession, HookPayload, SessionFile } from '../../../../src/harnesses/types.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';
import { makeTestHome, type TestHome } from '../../../../../../test/support/context.js';
import { KIMI_CLI_FIXTURE_VERSION } from '../rig.js';
import {
  expectArtifactInvalid,
  fixtureDir,
  installTree,
  intervalOf,
  readRecorded,
  workDir,
  type RecordedSession,
} from '../../../../../../test/support/recorded-sessions.js';

type KimiRecorded = RecordedSession & { plan_slug: string; subagent_id: string; task_id: string };

let interval: Interval;
let fixture: string;
let recorded: KimiRecorded;
let t: TestHome;
let cwd: string;
let share: string;
let hash: string;
let sessionDir: string;
let sessionRel: string;

beforeAll(async () => {
  interval = await intervalOf('kimi-v1_28_0');
  fixture = await fixtureDir('kimi', KIMI_CLI_FIXTURE_VERSION);
  recorded = (await readRecorded(fixture)) as KimiRecorded;
});

beforeEach(async () => {
  t = await makeTestHome();
  cwd = await workDir(t.root);
  share = path.join(t.home, '.kimi');
  hash = createHash('md5').update(cwd).digest('hex');
  await installTree(path.join(fixture, 'share'), share, { ROOT: t.root, WORKDIR_MD5: hash });
  sessionRel = `sessions/${hash}/${recorded.session_id}`;
  sessionDir = path.join(share, ...sessionRel.split('/'));
});

afterEach(async () => {
  await t.cleanup();
});

function payload(extra: Partial<HookPayload> = {}): HookPayload {
  return { hook_event_name: 'SessionEnd', session_id: recorded.session_id, cwd, reason: 'exit', ...extra };
}

function collect(p: HookPayload = payload()): Promise<CollectedSession> {
  return kimi.collectSession(t.ctx, { interval, payload: p });
}

function stateOf(session: CollectedSession): Record<string, unknown> {
  const state = session.files.find((f) => f.role === 'kimi_state')!;
  return JSON.parse(new TextDecoder().decode(state.content)) as Record<string, unknown>;
}

function onDisk(role: SessionFile['role'], name: string, rel: string): SessionFile {
  return { role, name, nativePath: rel, path: path.join(share, ...rel.split('/')) };
}

describe('Kimi CLI: collectSession on a session built from its source', () => {
  it('captures wire, sanitised state, context, subagents and the plan; leaves background tasks out', async () => {
    const session = await collect();
    const a = `subagents/${recorded.subagent_id}`;
    const sanitised = {
      version: 1,
      custom_title: null,
      title_generated: false,
      title_generate_attempts: 0,
      plan_mode: true,
      plan_session_id: '9b2d4f6a-1c3e-4a5b-8d7f-0e1a2b3c4d5e',
      plan_slug: recorded.plan_slug,
      todos: [
        { title: 'Read the current loader', status: 'done' },
        { title: 'Drop the JSON branch', status: 'pending' },
      ],
    };
    expect(session).toEqual({
      sessionId: recorded.session_id,
      cwd,
      root: share,
      files: [
        onDisk('agent_wire_history', 'wire.jsonl', `${sessionRel}/wire.jsonl`),
        {
          role: 'kimi_state',
          name: 'state.json',
          nativePath: `${sessionRel}/state.json`,
          content: new TextEncoder().encode(`${JSON.stringify(sanitised, null, 2)}\n`),
        },
        onDisk('session_state', 'context.jsonl', `${sessionRel}/context.jsonl`),
        onDisk('session_state', `subagents-${recorded.subagent_id}-context.jsonl`, `${sessionRel}/${a}/context.jsonl`),
        onDisk('session_state', `subagents-${recorded.subagent_id}-meta.json`, `${sessionRel}/${a}/meta.json`),
        onDisk('session_state', `subagents-${recorded.subagent_id}-output`, `${sessionRel}/${a}/output`),
        onDisk('session_state', `subagents-${recorded.subagent_id}-prompt.txt`, `${sessionRel}/${a}/prompt.txt`),
        onDisk('session_state', `subagents-${recorded.subagent_id}-wire.jsonl`, `${sessionRel}/${a}/wire.jsonl`),
        onDisk('session_state', `plan-${recorded.plan_slug}.md`, `plans/${recorded.plan_slug}.md`),
      ],
      title: recorded.prompt,
      summary: recorded.prompt,
    });
    expect(session.files.some((f) => f.nativePath?.includes('/tasks/'))).toBe(false);
  });

  it("takes the state's custom title as the native title; the preview stays the first input", async () => {
    const stateFile = path.join(sessionDir, 'state.json');
    const state = JSON.parse(await readFile(stateFile, 'utf8')) as Record<string, unknown>;
    await writeFile(stateFile, JSON.stringify({ ...state, custom_title: 'TOML-only loader', title_generated: true }));
    const session = await collect();
    expect(session.title).toBe('TOML-only loader');
    expect(session.summary).toBe(recorded.prompt);
  });

  it('falls back to context.jsonl, past injected reminders, when the wire log has no turn', async () => {
    await writeFile(path.join(sessionDir, 'wire.jsonl'), '{"type": "metadata", "protocol_version": "1.9"}\n');
    expect((await collect()).title).toBe(recorded.prompt);
  });

  it('removes grants, credentials, tokens, process state and unknown keys from state.json', async () => {
    const stateFile = path.join(sessionDir, 'state.json');
    const state = JSON.parse(await readFile(stateFile, 'utf8')) as Record<string, unknown>;
    const hostile = {
      ...state,
      approval: { yolo: true, afk: true, auto_approve_actions: ['run command'] },
      additional_dirs: ['/etc'],
      worktree_path: '/home/me/wt',
      parent_repo_path: '/home/me/repo',
      api_key: 'sk-proj-AbCdEf0123456789AbCdEf0123',
      oauth: { access_token: 'ya29.secret-token', refresh_token: 'rt-secret' },
      pid: 4242,
      custom_title: 42,
      todos: [{ title: 'keep', status: 'pending', token: 'tok-secret' }, { title: 7 }],
    };
    await writeFile(stateFile, JSON.stringify(hostile));
    const session = await collect();
    const bytes = new TextDecoder().decode(session.files.find((f) => f.role === 'kimi_state')!.content);
    for (const secret of [
      'approval',
      'yolo',
      'auto_approve_actions',
      'additional_dirs',
      '/etc',
      'worktree_path',
      'parent_repo_path',
      'sk-proj',
      'oauth',
      'secret',
      'pid',
      '4242',
      'wire_mtime',
      'archived',
    ]) {
      expect(bytes, secret).not.toContain(secret);
    }
    expect(stateOf(session)).toEqual({
      version: 1,
      title_generated: false,
      title_generate_attempts: 0,
      plan_mode: true,
      plan_session_id: '9b2d4f6a-1c3e-4a5b-8d7f-0e1a2b3c4d5e',
      plan_slug: recorded.plan_slug,
      todos: [{ title: 'keep', status: 'pending' }],
    });
    // The file on disk is untouched.
    expect(JSON.parse(await readFile(stateFile, 'utf8'))).toEqual(hostile);
  });

  it('writes default state when state.json is missing or corrupt', async () => {
    await writeFile(path.join(sessionDir, 'state.json'), '{not json');
    expect(stateOf(await collect())).toEqual({});
    await rm(path.join(sessionDir, 'state.json'));
    const session = await collect();
    expect(stateOf(session)).toEqual({});
    expect(session.files.some((f) => f.nativePath?.startsWith('plans/'))).toBe(false);
  });

  it('finds the folder by the work dir as Kimi writes it: absolute, normalised, links not resolved', async () => {
    expect((await collect(payload({ cwd: `${cwd}/./sub/../` }))).files[0]!.path).toBe(
      path.join(sessionDir, 'wire.jsonl'),
    );
    expect(kimiCanonicalPath('/a/b/../c/./d/')).toBe('/a/c/d');
    expect(kimiCanonicalPath('//a//b')).toBe('//a/b');
    expect(kimiCanonicalPath('///a')).toBe('/a');
    expect(kimiCanonicalPath('/../..')).toBe('/');
    expect(kimiWorkDirHash(`${cwd}/`)).toBe(hash);

    // Through a link the work dir has another hash: Kimi keeps that session under the link's path.
    const link = path.join(t.root, 'link-to-proj');
    await symlink(cwd, link);
    expect(kimiWorkDirHash(link)).not.toBe(hash);
    const linkRel = `sessions/${kimiWorkDirHash(link)}/${recorded.session_id}`;
    await mkdir(path.dirname(path.join(share, linkRel)), { recursive: true });
    await rename(sessionDir, path.join(share, ...linkRel.split('/')));
    expect((await collect(payload({ cwd: link }))).files[0]!.nativePath).toBe(`${linkRel}/wire.jsonl`);
  });

  it('finds the only folder of the session under another work dir, and refuses two', async () => {
    const other = await workDir(t.root, 'moved');
    expect((await collect(payload({ cwd: other }))).files[0]!.nativePath).toBe(`${sessionRel}/wire.jsonl`);
    const copy = path.join(share, 'sessions', 'f'.repeat(32), recorded.session_id);
    await mkdir(copy, { recursive: true });
    await expectArtifactInvalid(
      () => collect(payload({ cwd: other })),
      path.join(share, 'sessions', kimiWorkDirHash(other), recorded.session_id),
      /folders under 2 work dirs/,
    );
  });

  it('sanitises by keeping known keys of the right type only', () => {
    expect(sanitizeKimiState({ version: 1, plan_slug: '../../etc/passwd', plan_mode: 'yes', todos: 'x' })).toEqual({
      version: 1,
    });
    expect(sanitizeKimiState(null)).toEqual({});
    expect(sanitizeKimiState([1, 2])).toEqual({});
  });
});

describe('Kimi CLI: what is refused', () => {
  it('a session without wire.jsonl or without context.jsonl', async () => {
    await rm(path.join(sessionDir, 'wire.jsonl'));
    await expectArtifactInvalid(() => collect(), path.join(sessionDir, 'wire.jsonl'), /does not exist/);
    await writeFile(path.join(sessionDir, 'wire.jsonl'), '');
    await rm(path.join(sessionDir, 'context.jsonl'));
    await expectArtifactInvalid(() => collect(), path.join(sessionDir, 'context.jsonl'), /does not exist/);
  });

  it('a session folder that does not exist, or a payload without cwd', async () => {
    const missing = '00000000-0000-4000-8000-000000000000';
    await expectArtifactInvalid(
      () => collect(payload({ session_id: missing })),
      path.join(share, 'sessions', hash, missing),
      /no Kimi CLI session folder/,
    );
    const { cwd: _omit, ...rest } = payload();
    await expectArtifactInvalid(() => collect(rest), path.join(share, 'sessions'), /no absolute cwd/);
  });

  it('a plan slug that is not a plan file name, and a linked plan file', async () => {
    const stateFile = path.join(sessionDir, 'state.json');
    const state = JSON.parse(await readFile(stateFile, 'utf8')) as Record<string, unknown>;
    await writeFile(stateFile, JSON.stringify({ ...state, plan_slug: '../../secrets' }));
    await expectArtifactInvalid(() => collect(), stateFile, /plan_slug is not a plan file name/);

    await writeFile(stateFile, JSON.stringify(state));
    const plan = path.join(share, 'plans', `${recorded.plan_slug}.md`);
    await rename(plan, path.join(t.root, 'plan.md'));
    await symlink(path.join(t.root, 'plan.md'), plan);
    await expectArtifactInvalid(() => collect(), plan, /symbolic link/);
  });

  it('a linked state.json, a linked or FIFO file among the session files', async () => {
    const stateFile = path.join(sessionDir, 'state.json');
    await rename(stateFile, path.join(t.root, 'state.json'));
    await symlink(path.join(t.root, 'state.json'), stateFile);
    await expectArtifactInvalid(() => collect(), stateFile, /symbolic link/);
    await rm(stateFile);

    const linked = path.join(sessionDir, 'subagents', recorded.subagent_id, 'linked.jsonl');
    await writeFile(path.join(t.root, 'elsewhere.jsonl'), '{}');
    await symlink(path.join(t.root, 'elsewhere.jsonl'), linked);
    await expectArtifactInvalid(() => collect(), linked, /symbolic link/);
    await rm(linked);

    const fifo = path.join(sessionDir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    await expectArtifactInvalid(() => collect(), fifo, /a FIFO/);
  });

  it('a hard link among the session files, state.json or the plan file refuses the whole capture', async () => {
    const secret = path.join(t.root, 'secret');
    await writeFile(secret, 'token=abc\n');
    const linked = path.join(sessionDir, 'subagents', recorded.subagent_id, 'notes.txt');
    await link(secret, linked);
    await expectArtifactInvalid(() => collect(), linked, /has 2 hard links/);
    await rm(linked);

    const stateFile = path.join(sessionDir, 'state.json');
    await link(stateFile, path.join(t.root, 'state-second-name.json'));
    await expectArtifactInvalid(() => collect(), stateFile, /has 2 hard links/);
    await rm(path.join(t.root, 'state-second-name.json'));

    const plan = path.join(share, 'plans', `${recorded.plan_slug}.md`);
    await link(plan, path.join(t.root, 'plan-second-name.md'));
    await expectArtifactInvalid(() => collect(), plan, /has 2 hard links/);
    await rm(path.join(t.root, 'plan-second-name.md'));

    const wire = path.join(sessionDir, 'wire.jsonl');
    await link(wire, path.join(t.root, 'wire-second-name.jsonl'));
    await expectArtifactInvalid(() => collect(), wire, /has 2 hard links/);
  });

  it('a linked session folder', async () => {
    await rename(sessionDir, path.join(t.root, 'real-session'));
    await symlink(path.join(t.root, 'real-session'), sessionDir);
    await expectArtifactInvalid(() => collect(), sessionDir, /symbolic link/);
  });

  it('more than 2048 files', async () => {
    const many = path.join(sessionDir, 'subagents', 'many');
    await mkdir(many);
    for (let i = 0; i < 2048; i++) await writeFile(path.join(many, `f${i}`), '');
    await expectArtifactInvalid(() => collect(), sessionDir, /more than 2048 files/);
  });
});

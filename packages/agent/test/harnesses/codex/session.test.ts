import { link, mkdir, readFile, rename, rm, symlink, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { zstdCompressSync } from 'node:zlib';
import { beforeEach, describe, expect, it } from 'vitest';
import { codex } from '../../../src/harnesses/codex/index.js';
import { MAX_FILE_BYTES } from '../../../src/harness-kit/session-files.js';
import type { CollectedSession, HookPayload } from '../../../src/harnesses/types.js';
import { harnessBin } from '../../../../../test/support/harness-bins.js';
import { startModelStub } from '../../../../../test/support/model-stub.js';
import { appendStdinCommand, describeRun } from '../../../../../test/support/run-harness.js';
import { userHookPayloadIn } from '../../../../../test/support/real-cli.js';
import { appendCodexHook, runCodex, writeCodexProviderConfig } from './rig.js';
import {
  expectArtifactInvalid,
  installTree,
  type RecordedSession,
  useRecordedHome,
} from '../../../../../test/support/recorded-sessions.js';

const w = useRecordedHome<RecordedSession & { rollout: string }>('codex', 'codex-v0_145_0');
let codexHome: string;
let sessions: string;
let rollout: string;

beforeEach(async () => {
  codexHome = path.join(w.t.home, '.codex');
  sessions = path.join(codexHome, 'sessions');
  await installTree(path.join(w.fixture, 'sessions'), sessions, { ROOT: w.t.root });
  rollout = path.join(sessions, ...w.recorded.rollout.split('/'));
});

function payload(extra: Partial<HookPayload> = {}): HookPayload {
  return {
    session_id: w.recorded.session_id,
    cwd: w.cwd,
    transcript_path: rollout,
    hook_event_name: 'SessionEnd',
    reason: 'other',
    ...extra,
  };
}

function withoutTranscript(): HookPayload {
  const { transcript_path: _omit, ...rest } = payload();
  return rest;
}

function collect(p: HookPayload = payload()): Promise<CollectedSession> {
  return codex.collectSession(w.t.ctx, { interval: w.interval, payload: p });
}

async function rewriteFirstLine(file: string, change: (line: Record<string, unknown>) => unknown): Promise<void> {
  const [first, ...rest] = (await readFile(file, 'utf8')).split('\n');
  await writeFile(file, [JSON.stringify(change(JSON.parse(first!) as Record<string, unknown>)), ...rest].join('\n'));
}

describe('Codex: collectSession on a recorded session', () => {
  it('captures exactly one rollout, titled with the prompt (the environment context skipped)', async () => {
    expect(await readFile(rollout, 'utf8')).toContain('<environment_context>');
    const session = await collect();
    expect(session).toEqual({
      sessionId: w.recorded.session_id,
      cwd: w.cwd,
      root: sessions,
      files: [{ role: 'rollout', name: 'rollout.jsonl', nativePath: w.recorded.rollout, path: rollout }],
      title: w.recorded.prompt,
      summary: w.recorded.prompt,
    });
  });

  it('finds the rollout by id when transcript_path is absent or null, newest dated folder first', async () => {
    expect((await collect(withoutTranscript())).files[0]!.path).toBe(rollout);
    expect((await collect({ ...payload(), transcript_path: null as unknown as string })).files[0]!.path).toBe(rollout);

    // An older copy with the same id (a dated folder before the recorded one) is not the one taken.
    const older = path.join(sessions, '2001', '01', '01', path.basename(rollout));
    await mkdir(path.dirname(older), { recursive: true });
    await writeFile(older, await readFile(rollout));
    expect((await collect(withoutTranscript())).files[0]!.path).toBe(rollout);
    await rm(rollout);
    expect((await collect(withoutTranscript())).files[0]!.nativePath).toBe(`2001/01/01/${path.basename(rollout)}`);
  });

  it('the recorded cwd when the payload has none', async () => {
    const { cwd: _omit, ...rest } = payload();
    expect((await collect(rest)).cwd).toBe(w.cwd);
  });

  it('takes the newest session_index.jsonl name for the id as the title', async () => {
    const lines = [
      { id: w.recorded.session_id, thread_name: 'parser flake', updated_at: '2026-11-30T10:00:00Z' },
      { id: 'ffffffff-0000-7000-8000-000000000000', thread_name: 'another thread', updated_at: '2026-11-30T11:00:00Z' },
      { id: w.recorded.session_id, thread_name: 'Parser flake, take two', updated_at: '2026-11-30T12:00:00Z' },
      {
        id: w.recorded.session_id.toUpperCase(),
        thread_name: 'not an exact match',
        updated_at: '2026-11-30T13:00:00Z',
      },
    ];
    await writeFile(path.join(codexHome, 'session_index.jsonl'), `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
    const session = await collect();
    expect(session.title).toBe('Parser flake, take two');
    expect(session.summary).toBe(w.recorded.prompt);
  });

  it('reads a zstd-compressed rollout, and prefers the plain file when both exist', async () => {
    const compressed = `${rollout}.zst`;
    await writeFile(compressed, zstdCompressSync(await readFile(rollout)));
    expect((await collect(withoutTranscript())).files[0]!.path).toBe(rollout);
    await rm(rollout);
    const session = await collect(withoutTranscript());
    expect(session.files).toEqual([
      { role: 'rollout', name: 'rollout.jsonl.zst', nativePath: `${w.recorded.rollout}.zst`, path: compressed },
    ]);
    expect(session.title).toBe(w.recorded.prompt);
    expect((await collect(payload({ transcript_path: compressed }))).files[0]!.path).toBe(compressed);
  });
});

describe('Codex: what is refused', () => {
  it('a rollout whose session_meta names another session', async () => {
    await rewriteFirstLine(rollout, (line) => ({
      ...line,
      payload: { ...(line.payload as object), id: 'eeeeeeee-0000-7000-8000-000000000000' },
    }));
    await expectArtifactInvalid(
      () => collect(),
      rollout,
      /belongs to session eeeeeeee-0000-7000-8000-000000000000, not /,
    );
    await expectArtifactInvalid(() => collect(withoutTranscript()), rollout, /belongs to session/);
  });

  it('a compressed rollout whose session_meta names another session, or that is not zstd', async () => {
    const compressed = `${rollout}.zst`;
    await rewriteFirstLine(rollout, (line) => ({
      ...line,
      payload: { ...(line.payload as object), id: 'eeeeeeee-0000-7000-8000-000000000000' },
    }));
    await writeFile(compressed, zstdCompressSync(await readFile(rollout)));
    await rm(rollout);
    await expectArtifactInvalid(() => collect(withoutTranscript()), compressed, /belongs to session eeeeeeee/);
    await writeFile(compressed, 'not zstd at all');
    await expectArtifactInvalid(() => collect(withoutTranscript()), compressed, /not a readable zstd stream/);
  });

  it('a rollout that does not open with session_meta', async () => {
    await rewriteFirstLine(rollout, (line) => ({ ...line, type: 'event_msg' }));
    await expectArtifactInvalid(() => collect(), rollout, /does not start with a session_meta line/);
  });

  it('a transcript_path outside the sessions folder, or named for another session', async () => {
    const outside = path.join(codexHome, 'archived_sessions', path.basename(rollout));
    await mkdir(path.dirname(outside), { recursive: true });
    await writeFile(outside, await readFile(rollout));
    await expectArtifactInvalid(
      () => collect(payload({ transcript_path: outside })),
      outside,
      /outside Codex's sessions folder/,
    );
    const other = path.join(
      path.dirname(rollout),
      'rollout-2026-11-30T00-00-00-eeeeeeee-0000-7000-8000-000000000000.jsonl',
    );
    await expectArtifactInvalid(
      () => collect(payload({ transcript_path: other })),
      other,
      /is not a rollout of session/,
    );
  });

  it('a rollout that is a symbolic link, or lies under a linked folder', async () => {
    const elsewhere = path.join(w.t.root, 'rollout-copy.jsonl');
    await rename(rollout, elsewhere);
    await symlink(elsewhere, rollout);
    await expectArtifactInvalid(() => collect(), rollout, /symbolic link/);
    await expectArtifactInvalid(() => collect(withoutTranscript()), rollout, /symbolic link/);

    await rm(rollout);
    await rename(elsewhere, rollout);
    const day = path.dirname(rollout);
    await rename(day, `${day}-real`);
    await symlink(`${day}-real`, day);
    await expectArtifactInvalid(() => collect(), day, /symbolic link/);
  });

  it('a hard-linked rollout, found by transcript_path or by search', async () => {
    await link(rollout, path.join(w.t.root, 'second-name.jsonl'));
    await expectArtifactInvalid(() => collect(), rollout, /has 2 hard links/);
    await expectArtifactInvalid(() => collect(withoutTranscript()), rollout, /has 2 hard links/);
  });

  it('takes no title from a hard-linked session_index.jsonl', async () => {
    const other = path.join(w.t.root, 'index-elsewhere.jsonl');
    await writeFile(
      other,
      `${JSON.stringify({
        id: w.recorded.session_id,
        thread_name: 'from a file elsewhere',
        updated_at: '2026-11-30T12:00:00Z',
      })}\n`,
    );
    await link(other, path.join(codexHome, 'session_index.jsonl'));
    expect((await collect()).title).toBe(w.recorded.prompt);
  });

  it('a rollout over 64 MiB', async () => {
    await truncate(rollout, MAX_FILE_BYTES + 1);
    await expectArtifactInvalid(() => collect(), rollout, /over the 67108864-byte \(64 MiB\) limit/);
  });

  it('a session with no rollout', async () => {
    await rm(rollout);
    await expectArtifactInvalid(
      () => collect(withoutTranscript()),
      path.join(sessions, 'YYYY', 'MM', 'DD', `rollout-*-${w.recorded.session_id}.jsonl`),
      /no rollout file has this id/,
    );
    await expectArtifactInvalid(() => collect(), rollout, /does not exist/);
  });
});

describe('Codex: a real offline session', () => {
  it('collects the rollout `codex exec` wrote, from the SessionEnd payload, titled with the prompt', async () => {
    const stub = await startModelStub({ reply: 'Offline reply.' });
    try {
      const hookOut = path.join(w.t.root, 'hook.jsonl');
      await rm(sessions, { recursive: true, force: true });
      await writeCodexProviderConfig(codexHome, stub.url);
      await appendCodexHook(codexHome, 'SessionEnd', appendStdinCommand(hookOut), 3);
      const prompt = 'Rename the tokenizer module to lexer';
      const result = await runCodex({
        bin: harnessBin('codex'),
        home: w.t.home,
        cwd: w.cwd,
        prompt,
        stubUrl: stub.url,
        env: w.t.env,
        bypassHookTrust: true,
        timeoutMs: 60_000,
      });
      expect(result.exitCode, describeRun(result)).toBe(0);
      const end = (await userHookPayloadIn(hookOut, 'SessionEnd', 10_000)) as HookPayload;

      const session = await codex.collectSession(w.t.ctx, { interval: w.interval, payload: end });
      expect(session.files).toHaveLength(1);
      expect(session.files[0]).toMatchObject({
        role: 'rollout',
        name: 'rollout.jsonl',
        nativePath: expect.stringMatching(new RegExp(`^\\d{4}/\\d{2}/\\d{2}/rollout-.+-${end.session_id}\\.jsonl$`)),
      });
      if (typeof end.transcript_path === 'string') expect(session.files[0]!.path).toBe(end.transcript_path);
      expect(session.title).toBe(prompt);
      expect(session.summary).toBe(prompt);
      expect(session.cwd).toBe(w.cwd);
      const { transcript_path: _omit, ...byId } = end;
      expect((await codex.collectSession(w.t.ctx, { interval: w.interval, payload: byId })).files[0]!.path).toBe(
        session.files[0]!.path,
      );
    } finally {
      await stub.close();
    }
  }, 90_000);
});

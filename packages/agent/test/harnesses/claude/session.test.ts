import { execFileSync } from 'node:child_process';
import { appendFile, link, mkdir, readFile, rename, rm, symlink, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { claude } from '../../../src/harnesses/claude/index.js';
import { claudeProjectKey } from '../../../src/harnesses/claude/session.js';
import type { CollectedSession, HookPayload } from '../../../src/harnesses/types.js';
import { MAX_FILE_BYTES } from '../../../src/harness-kit/session-files.js';
import { harnessBin } from '../../../../../test/support/harness-bins.js';
import { startModelStub } from '../../../../../test/support/model-stub.js';
import { appendStdinCommand, describeRun } from '../../../../../test/support/run-harness.js';
import { userHookPayloadIn } from '../../../../../test/support/real-cli.js';
import { addClaudeUserHook, runClaude } from './rig.js';
import {
  expectArtifactInvalid,
  filesBelow,
  installTree,
  substitute,
  workDir,
  useRecordedHome,
} from '../../../../../test/support/recorded-sessions.js';

const w = useRecordedHome('claude', 'claude-v2_0_12');
let projects: string;
let key: string;
let transcript: string;
let companionDir: string;

beforeEach(async () => {
  projects = path.join(w.t.home, '.claude', 'projects');
  key = claudeProjectKey(w.cwd);
  await installTree(path.join(w.fixture, 'projects'), projects, { ROOT: w.t.root, PROJECT: key });
  transcript = path.join(projects, key, `${w.recorded.session_id}.jsonl`);
  companionDir = path.join(projects, key, w.recorded.session_id);
});

function payload(extra: Partial<HookPayload> = {}): HookPayload {
  return {
    session_id: w.recorded.session_id,
    cwd: w.cwd,
    transcript_path: transcript,
    hook_event_name: 'SessionEnd',
    reason: 'other',
    ...extra,
  };
}

function collect(p: HookPayload = payload()): Promise<CollectedSession> {
  return claude.collectSession(w.t.ctx, { interval: w.interval, payload: p });
}

async function expectedFiles() {
  const companions = await filesBelow(companionDir);
  return [
    {
      role: 'primary_transcript',
      name: 'transcript.jsonl',
      nativePath: `${key}/${w.recorded.session_id}.jsonl`,
      path: transcript,
    },
    ...companions.map((rel) => ({
      role: 'session_companion',
      name: rel.replace(/\//g, '-'),
      nativePath: `${key}/${w.recorded.session_id}/${rel}`,
      path: path.join(companionDir, ...rel.split('/')),
    })),
  ];
}

describe('Claude Code: collectSession on a recorded session', () => {
  it('captures the transcript and every companion file, with the prompt as title and preview', async () => {
    const companions = await filesBelow(companionDir);
    expect(companions.some((f) => /^subagents\/agent-[a-z0-9]+\.jsonl$/.test(f))).toBe(true);
    expect(companions.some((f) => /^subagents\/agent-[a-z0-9]+\.meta\.json$/.test(f))).toBe(true);
    expect(companions.some((f) => /^tool-results\/.+\.txt$/.test(f))).toBe(true);

    const session = await collect();
    expect(session).toEqual({
      sessionId: w.recorded.session_id,
      cwd: w.cwd,
      root: projects,
      files: await expectedFiles(),
      title: w.recorded.prompt,
      summary: w.recorded.prompt,
    });
    for (const file of session.files) expect(file.name).toMatch(/^[A-Za-z0-9._-]+$/);
  });

  it('finds the transcript from the working directory when the hook names no transcript_path', async () => {
    const { transcript_path: _omit, ...rest } = payload();
    const session = await collect(rest);
    expect(session.files).toEqual(await expectedFiles());
    expect(session.title).toBe(w.recorded.prompt);
  });

  it('finds a transcript under another project key (a worktree pinned to its checkout) if it is alone', async () => {
    const other = await workDir(w.t.root, 'elsewhere');
    const { transcript_path: _omit, ...rest } = payload({ cwd: other });
    const session = await collect(rest);
    expect(session.files[0]!.nativePath).toBe(`${key}/${w.recorded.session_id}.jsonl`);
    expect(session.cwd).toBe(other);

    await mkdir(path.join(projects, 'second-key'), { recursive: true });
    await writeFile(path.join(projects, 'second-key', `${w.recorded.session_id}.jsonl`), '{}\n');
    await expectArtifactInvalid(
      () => collect(rest),
      path.join(projects, claudeProjectKey(other), `${w.recorded.session_id}.jsonl`),
      /transcripts in 2 project folders/,
    );
  });

  it(
    'captures subagent transcripts of the layout before 2.1.2 (agent-*.jsonl beside the transcript) that name ' +
      'this session',
    async () => {
      const ours = path.join(projects, key, 'agent-a1b2c3d4.jsonl');
      const theirs = path.join(projects, key, 'agent-e5f6a7b8.jsonl');
      const sidechain = (sessionId: string) =>
        JSON.stringify({
          parentUuid: null,
          isSidechain: true,
          agentId: 'a1b2c3d4',
          sessionId,
          type: 'user',
          message: { role: 'user', content: 'Warmup' },
        }) + '\n';
      await writeFile(ours, sidechain(w.recorded.session_id));
      await writeFile(theirs, sidechain('ffffffff-0000-4000-8000-000000000000'));
      const session = await collect();
      expect(session.files).toEqual([
        ...(await expectedFiles()),
        {
          role: 'session_companion',
          name: 'agent-a1b2c3d4.jsonl',
          nativePath: `${key}/agent-a1b2c3d4.jsonl`,
          path: ours,
        },
      ]);
    },
  );

  it("reads the project's sessions-index.json (2.1.x) by exact session id", async () => {
    const entries = [
      { sessionId: w.recorded.session_id.toUpperCase(), summary: 'Wrong case', firstPrompt: 'no' },
      {
        sessionId: w.recorded.session_id,
        summary: 'Build steps, summarised',
        firstPrompt: 'Explain the build steps, from the index',
      },
      { sessionId: 'ffffffff-0000-4000-8000-000000000000', summary: 'Another session', firstPrompt: 'no' },
    ];
    await writeFile(path.join(projects, key, 'sessions-index.json'), JSON.stringify({ version: 1, entries }));
    // The contract reads the preview from summary before firstPrompt.
    expect(await collect()).toMatchObject({ title: 'Build steps, summarised', summary: 'Build steps, summarised' });
    await writeFile(
      path.join(projects, key, 'sessions-index.json'),
      JSON.stringify({ version: 1, entries: entries.map(({ summary: _drop, ...rest }) => rest) }),
    );
    expect(await collect()).toMatchObject({
      title: w.recorded.prompt,
      summary: 'Explain the build steps, from the index',
    });
    await appendFile(
      transcript,
      `${JSON.stringify({ type: 'custom-title', customTitle: 'Renamed', sessionId: w.recorded.session_id })}\n`,
    );
    expect(await collect()).toMatchObject({ title: 'Renamed', summary: 'Explain the build steps, from the index' });
  });

  it('refuses a session with no transcript', async () => {
    const missing = '00000000-0000-4000-8000-000000000000';
    await expectArtifactInvalid(
      () => collect({ session_id: missing, cwd: w.cwd }),
      path.join(projects, key, `${missing}.jsonl`),
      /no transcript of session/,
    );
  });

  it('prefers a /rename title, then an AI title, to the first prompt; other sessions do not count', async () => {
    await appendFile(
      transcript,
      `${JSON.stringify({ type: 'ai-title', aiTitle: 'Build steps overview', sessionId: w.recorded.session_id })}\n`,
    );
    expect((await collect()).title).toBe('Build steps overview');
    await appendFile(
      transcript,
      `${JSON.stringify({ type: 'custom-title', customTitle: 'My build notes', sessionId: w.recorded.session_id })}\n`,
    );
    await appendFile(
      transcript,
      JSON.stringify({
        type: 'custom-title',
        customTitle: 'Another session',
        sessionId: 'ffffffff-0000-4000-8000-000000000000',
      }) + '\n',
    );
    const session = await collect();
    expect(session.title).toBe('My build notes');
    expect(session.summary).toBe(w.recorded.prompt);
  });
});

describe('Claude Code: project keys', () => {
  it('turns every character outside [A-Za-z0-9] into a dash', () => {
    expect(claudeProjectKey('/home/me/my_proj')).toBe('-home-me-my-proj');
    expect(claudeProjectKey('/tmp/a.b c/ü😀')).toBe('-tmp-a-b-c----');
  });

  it('cuts keys over 200 characters and adds the base-36 hash of the full path', () => {
    const long = `/${'segment/'.repeat(30)}end`;
    const key200 = claudeProjectKey(long);
    expect(key200.slice(0, 200)).toBe(long.replace(/[^A-Za-z0-9]/g, '-').slice(0, 200));
    expect(key200).toMatch(/^.{200}-[0-9a-z]+$/);
    // Same prefix, different tail: different keys.
    expect(claudeProjectKey(`${long}x`)).not.toBe(key200);
    expect(claudeProjectKey(`/${'a'.repeat(199)}`)).toBe(`-${'a'.repeat(199)}`);
  });
});

describe('Claude Code: what is refused', () => {
  it('a transcript that is a symbolic link', async () => {
    const elsewhere = path.join(w.t.root, 'elsewhere.jsonl');
    await rename(transcript, elsewhere);
    await symlink(elsewhere, transcript);
    await expectArtifactInvalid(() => collect(), transcript, /symbolic link/);
  });

  it("a transcript_path outside the projects folder, or not this session's transcript", async () => {
    const outside = path.join(w.t.root, 'outside', `${w.recorded.session_id}.jsonl`);
    await mkdir(path.dirname(outside), { recursive: true });
    await writeFile(outside, '{}\n');
    await expectArtifactInvalid(
      () => collect(payload({ transcript_path: outside })),
      outside,
      /outside Claude Code's projects folder/,
    );
    const sneaky = path.join(projects, key, '..', '..', '..', 'outside', `${w.recorded.session_id}.jsonl`);
    await expectArtifactInvalid(() => collect(payload({ transcript_path: sneaky })), sneaky, /outside/);
    const wrongName = path.join(projects, key, 'other.jsonl');
    await expectArtifactInvalid(
      () => collect(payload({ transcript_path: wrongName })),
      wrongName,
      /is not <project>\//,
    );
    await expectArtifactInvalid(
      () => collect(payload({ transcript_path: `projects/${key}/x.jsonl` })),
      `projects/${key}/x.jsonl`,
      /relative path/,
    );
  });

  it('a symbolic link among the companion files, or a linked companion folder', async () => {
    const secret = path.join(w.t.root, 'secret.txt');
    await writeFile(secret, 'not part of the session');
    const link = path.join(companionDir, 'tool-results', 'linked.txt');
    await symlink(secret, link);
    await expectArtifactInvalid(() => collect(), link, /symbolic link/);
    await rm(link);

    const linkedDir = path.join(companionDir, 'subagents-elsewhere');
    await mkdir(path.join(w.t.root, 'dir'), { recursive: true });
    await symlink(path.join(w.t.root, 'dir'), linkedDir);
    await expectArtifactInvalid(() => collect(), linkedDir, /symbolic link/);
  });

  it('a hard link among the companion files refuses the whole capture; so does a hard-linked transcript', async () => {
    // A hard link reads like a regular file, but its other name may be any file of the machine.
    const secret = path.join(w.t.root, 'id_rsa');
    await writeFile(secret, '-----BEGIN OPENSSH PRIVATE KEY-----\n');
    const linked = path.join(companionDir, 'tool-results', 'x.txt');
    await mkdir(path.dirname(linked), { recursive: true });
    await link(secret, linked);
    const error = await expectArtifactInvalid(() => collect(), linked, /has 2 hard links/);
    expect(error.hint).toMatch(/hard links/);
    await rm(linked);

    await link(transcript, path.join(w.t.root, 'second-name.jsonl'));
    await expectArtifactInvalid(() => collect(), transcript, /has 2 hard links/);
    await expectArtifactInvalid(() => collect(payload({ transcript_path: undefined })), transcript, /has 2 hard links/);
  });

  it('takes no title from a hard-linked sessions-index.json', async () => {
    const other = path.join(w.t.root, 'other.json');
    await writeFile(
      other,
      JSON.stringify({ version: 1, entries: [{ sessionId: w.recorded.session_id, summary: 'from a file elsewhere' }] }),
    );
    await link(other, path.join(projects, key, 'sessions-index.json'));
    expect((await collect()).title).toBe(w.recorded.prompt);
  });

  it('a linked project folder', async () => {
    const real = path.join(w.t.root, 'real-project');
    await rename(path.join(projects, key), real);
    await symlink(real, path.join(projects, key));
    await expectArtifactInvalid(() => collect(), path.join(projects, key), /symbolic link/);
  });

  it('a FIFO in the companion folder', async () => {
    const fifo = path.join(companionDir, 'subagents', 'pipe');
    execFileSync('mkfifo', [fifo]);
    await expectArtifactInvalid(() => collect(), fifo, /not a regular file \(a FIFO\)/);
  });

  it('a file over 64 MiB (a sparse file)', async () => {
    const big = path.join(companionDir, 'tool-results', 'big.txt');
    await writeFile(big, '');
    await truncate(big, MAX_FILE_BYTES);
    expect((await collect()).files.some((f) => f.path === big)).toBe(true);
    await truncate(big, MAX_FILE_BYTES + 1);
    await expectArtifactInvalid(() => collect(), big, /67108865 bytes, over the 67108864-byte \(64 MiB\) limit/);
    await truncate(transcript, MAX_FILE_BYTES + 1);
    await rm(big);
    await expectArtifactInvalid(() => collect(), transcript, /over the 67108864-byte/);
  });

  it('more than 2048 files in all', async () => {
    const existing = (await filesBelow(companionDir)).length;
    const many = path.join(companionDir, 'many');
    await mkdir(many);
    // Transcript + companions = 2048 exactly: captured.
    for (let i = 0; i < 2047 - existing; i++) await writeFile(path.join(many, `f${i}.txt`), '');
    expect((await collect()).files).toHaveLength(2048);
    await writeFile(path.join(many, 'one-more.txt'), '');
    await expectArtifactInvalid(() => collect(), companionDir, /holds more than 2047 files/);
  });

  it('but not a session root reached through a link: the root is where it resolves', async () => {
    const realConfig = path.join(w.t.root, 'dotfiles', 'claude');
    await mkdir(path.dirname(realConfig), { recursive: true });
    await rename(path.join(w.t.home, '.claude'), realConfig);
    await symlink(realConfig, path.join(w.t.home, '.claude'));
    const session = await collect();
    expect(session.root).toBe(projects);
    expect(session.files).toEqual(await expectedFiles());
    // The hook may also name the transcript by its resolved path.
    const resolved = path.join(realConfig, 'projects', key, `${w.recorded.session_id}.jsonl`);
    expect((await collect(payload({ transcript_path: resolved }))).files[0]!.nativePath).toBe(
      `${key}/${w.recorded.session_id}.jsonl`,
    );
  });
});

describe('Claude Code: a real offline session', () => {
  it('collects what `claude -p` wrote, from the SessionEnd payload, titled with the prompt', async () => {
    const stub = await startModelStub({ reply: 'Offline reply.' });
    try {
      const hookOut = path.join(w.t.root, 'hook.jsonl');
      await addClaudeUserHook(path.join(w.t.home, '.claude'), 'SessionEnd', appendStdinCommand(hookOut), 10);
      const prompt = 'Summarise the open pull requests for the parser';
      // A working directory whose project key is over 200 characters: Claude Code adds its hash suffix.
      const deep = await workDir(w.t.root, ...Array.from({ length: 12 }, (_, i) => `nested-folder-number-${i}`));
      expect(deep.replace(/[^A-Za-z0-9]/g, '-').length).toBeGreaterThan(200);
      const result = await runClaude({
        bin: harnessBin('claude'),
        home: w.t.home,
        cwd: deep,
        prompt,
        stubUrl: stub.url,
        env: w.t.env,
        timeoutMs: 60_000,
      });
      expect(result.exitCode, describeRun(result)).toBe(0);
      const end = (await userHookPayloadIn(hookOut, 'SessionEnd', 10_000)) as HookPayload;

      expect(path.basename(path.dirname(end.transcript_path!))).toBe(claudeProjectKey(deep));
      const session = await claude.collectSession(w.t.ctx, { interval: w.interval, payload: end });
      expect(session.files[0]).toEqual({
        role: 'primary_transcript',
        name: 'transcript.jsonl',
        nativePath: `${claudeProjectKey(deep)}/${end.session_id}.jsonl`,
        path: end.transcript_path,
      });
      expect(session.title).toBe(prompt);
      expect(session.summary).toBe(prompt);
      expect(session.cwd).toBe(deep);
      // Without transcript_path, the project key computed here finds the same file.
      const { transcript_path: _omit, ...byCwd } = end;
      expect((await claude.collectSession(w.t.ctx, { interval: w.interval, payload: byCwd })).files[0]!.path).toBe(
        end.transcript_path,
      );
      expect(await readFile(end.transcript_path!, 'utf8')).toContain(prompt);
    } finally {
      await stub.close();
    }
  }, 90_000);
});

// Keep the fixture's placeholders honest: everything that names the recording's paths was replaced.
describe('Claude Code fixture', () => {
  it('holds no path of the machine it was recorded on', async () => {
    for (const rel of await filesBelow(path.join(w.fixture, 'projects'))) {
      const text = await readFile(path.join(w.fixture, 'projects', rel), 'utf8');
      expect(text, rel).not.toMatch(/blue-agent-test-[A-Za-z0-9]{6}/);
      expect(substitute(text, { ROOT: '/r' })).not.toContain('{{ROOT}}');
    }
  });
});

describe('Claude project key of the destination', () => {
  it('is the path with every character outside [A-Za-z0-9] as -, hashed past 200 characters', () => {
    expect(claudeProjectKey('/home/me/my_proj')).toBe('-home-me-my-proj');
    const long = `/${'a'.repeat(250)}`;
    expect(claudeProjectKey(long).length).toBeGreaterThan(200);
    expect(claudeProjectKey(long).startsWith(`-${'a'.repeat(199)}-`)).toBe(true);
  });
});

/**
 * `blue-agent resume` without a terminal (pipes), as scripts run it: id resolution errors, preflight refusals,
 * hostile bundles served by a real Control API, `--no-launch` and `--json`. Every refusal leaves every file under the
 * test's root as it was.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { gzip, sha, tarOf, type RawEntry } from '../../../../test/support/handmade-bundles.js';
import {
  claudeProjectKey,
  cli,
  fakeClaude,
  snapshot,
  startWorld,
  uploadBytes,
  uploadClaudeSession,
  type World,
} from '../../../../test/support/resume-world.js';

let world: World;
beforeEach(async () => {
  world = await startWorld();
});
afterEach(async () => {
  await world.close();
});

function transcriptPath(dest: string, sessionId: string): string {
  return path.join(world.home.home, '.claude', 'projects', claudeProjectKey(dest), `${sessionId}.jsonl`);
}

/** Changes the server's own database behind its back (a second connection, as an operator would). */
function inDatabase(...statements: [sql: string, ...params: string[]][]): void {
  const db = new DatabaseSync(path.join(world.server.dataDir, 'control.db'));
  try {
    db.exec('PRAGMA foreign_keys = OFF; BEGIN');
    for (const [sql, ...params] of statements) db.prepare(sql).run(...params);
    db.exec('COMMIT');
  } finally {
    db.close();
  }
}

/** Gives a captured session another id. */
function renameSession(from: string, to: string): void {
  inDatabase(
    ['UPDATE sessions SET id = ? WHERE id = ?', to, from],
    ['UPDATE artifacts SET session_id = ? WHERE session_id = ?', to, from],
    ['UPDATE session_grants SET session_id = ? WHERE session_id = ?', to, from],
  );
}

/** Runs resume and checks that it failed with `code` and wrote nothing at all. */
async function refused(
  args: string[],
  code: string,
  exitCode = 1,
  extra: { cwd?: string; env?: Record<string, string> } = {},
): Promise<string> {
  const before = await snapshot(world.home.root);
  const result = await cli(world, args, extra);
  expect(result.stderr).toContain(`[${code}]`);
  expect(result.code).toBe(exitCode);
  expect(await snapshot(world.home.root)).toEqual(before);
  return result.stderr;
}

describe('session ids', () => {
  it('tells malformed, not found, ambiguous and not resumable apart', async () => {
    await refused(['not-an-id!', '--dest', world.project, '--yes'], 'SESSION_ID_MALFORMED', 2);
    await refused(['abc', '--dest', world.project, '--yes'], 'SESSION_ID_MALFORMED', 2);
    await refused(['0123abcd', '--dest', world.project, '--yes'], 'SESSION_NOT_FOUND');
    await refused(['0123abcd-0000-4000-8000-000000000000', '--dest', world.project, '--yes'], 'SESSION_NOT_FOUND');

    // Two sessions whose ids share their first 12 characters (ids set in the server's own database).
    const a = await uploadClaudeSession(world, { title: 'first' });
    const b = await uploadClaudeSession(world, { title: 'second' });
    renameSession(a.capturedId, 'feedface-beef-4000-8000-00000000000a');
    renameSession(b.capturedId, 'feedface-beef-4000-8000-00000000000b');
    const stderr = await refused(['feedface-beef', '--dest', world.project, '--yes'], 'SESSION_AMBIGUOUS', 2);
    expect(stderr).toContain('feedface-beef-4000-8000-00000000000a');
    expect(stderr).toContain('feedface-beef-4000-8000-00000000000b');
    // A longer prefix is unambiguous (and upper case is fine).
    const ok = await cli(world, [
      'FEEDFACE-BEEF-4000-8000-00000000000B',
      '--dest',
      world.project,
      '--yes',
      '--no-launch',
    ]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toBe(`cd ${world.project} && claude --resume ${b.sessionId}\n`);

    const marked = await uploadClaudeSession(world, { title: 'not resumable', resumable: false });
    await refused([marked.capturedId, '--dest', world.project, '--yes'], 'SESSION_NOT_RESUMABLE');
    await refused([marked.capturedId.slice(0, 8), '--dest', world.project, '--yes'], 'SESSION_NOT_RESUMABLE');

    // Someone else's private session does not exist, as far as the caller can tell.
    const bobs = await uploadClaudeSession(world, { user: world.server.bob, title: 'private' });
    await refused([bobs.capturedId, '--dest', world.project, '--yes'], 'SESSION_NOT_FOUND');
  });

  it('needs a terminal (or an id) for the picker, and an id for --json', async () => {
    await refused([], 'NOT_A_TERMINAL', 2);
    const before = await snapshot(world.home.root);
    const json = await cli(world, ['--json']);
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, error: { code: 'USAGE' } });
    expect(await snapshot(world.home.root)).toEqual(before);
  });
});

describe('preflight', () => {
  it('refuses when the harness is not installed', async () => {
    const { capturedId } = await uploadClaudeSession(world);
    await rm(path.join(world.bin, 'claude'));
    const stderr = await refused([capturedId, '--dest', world.project, '--yes'], 'HARNESS_NOT_INSTALLED');
    expect(stderr).toContain('Claude Code');
  });

  it('refuses a harness version outside the profile, and one the policy does not allow', async () => {
    const { capturedId } = await uploadClaudeSession(world);
    await fakeClaude(world.bin, '1.0.90');
    const stderr = await refused([capturedId, '--dest', world.project, '--yes'], 'VERSION_INELIGIBLE');
    expect(stderr).toContain('claude-v2_0_12');
    await fakeClaude(world.bin, '2.1.400');
    await refused([capturedId, '--dest', world.project, '--yes'], 'VERSION_INELIGIBLE');
    // The same unverified version is accepted once the policy allows unverified versions.
    world.server.server.store.publishPolicy(
      { harnesses: { claude: { allow_unverified_versions: true } } },
      world.server.clock.now() + 1000,
    );
    const ok = await cli(world, [capturedId, '--dest', world.project, '--yes', '--no-launch']);
    expect(ok.code, ok.stderr).toBe(0);
    world.server.server.store.publishPolicy(
      { allowed_harnesses: ['codex'], harnesses: { claude: { allow_unverified_versions: true } } },
      world.server.clock.now() + 2000,
    );
    expect(await refused([capturedId, '--dest', world.project, '--yes'], 'VERSION_INELIGIBLE')).toContain(
      'allowed_harnesses',
    );
    world.server.server.store.publishPolicy(
      { harnesses: { claude: { version_requirement: '<2.1.0', allow_unverified_versions: true } } },
      world.server.clock.now() + 3000,
    );
    expect(await refused([capturedId, '--dest', world.project, '--yes'], 'VERSION_INELIGIBLE')).toContain(
      'version_requirement',
    );
  });

  it('refuses a repository mismatch under --yes (it needs a person to confirm)', async () => {
    execFileSync('git', ['init', '-q'], { cwd: world.project });
    execFileSync('git', ['remote', 'add', 'origin', 'https://example.com/other/repo.git'], { cwd: world.project });
    const { capturedId } = await uploadClaudeSession(world, { remote: 'git@example.com:team/app.git' });
    await refused([capturedId, '--dest', world.project, '--yes'], 'REPOSITORY_MISMATCH');
    const before = await snapshot(world.home.root);
    const json = await cli(world, [capturedId, '--dest', world.project, '--yes', '--json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, error: { code: 'REPOSITORY_MISMATCH' } });
    expect(await snapshot(world.home.root)).toEqual(before);
    // The same repository under another spelling of its remote is not a mismatch.
    execFileSync('git', ['remote', 'set-url', 'origin', 'https://example.com/team/app'], { cwd: world.project });
    const ok = await cli(world, [capturedId, '--dest', world.project, '--yes', '--no-launch']);
    expect(ok.code, ok.stderr).toBe(0);
  });

  it('asks for --dest when the recorded directory is not the current one and there is no terminal', async () => {
    const { capturedId } = await uploadClaudeSession(world);
    await refused([capturedId, '--yes'], 'DESTINATION_INVALID', 2, { cwd: world.elsewhere });
    await refused([capturedId, '--yes', '--dest', path.join(world.home.root, 'nope')], 'DESTINATION_INVALID', 2);
  });

  it('restores nothing without --yes when there is no terminal to ask', async () => {
    const { capturedId } = await uploadClaudeSession(world);
    await refused([capturedId, '--dest', world.project], 'RESUME_CANCELLED');
  });

  it('accepts the same session already here with identical content, and never overwrites a different one', async () => {
    const { capturedId, sessionId } = await uploadClaudeSession(world);
    const first = await cli(world, [capturedId, '--dest', world.project, '--yes', '--no-launch']);
    expect(first.code, first.stderr).toBe(0);
    const again = await cli(world, [capturedId, '--dest', world.project, '--yes', '--no-launch']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain('already on this machine with the same content');
    await writeFile(transcriptPath(world.project, sessionId), 'my own local changes\n');
    const stderr = await refused([capturedId, '--dest', world.project, '--yes', '--no-launch'], 'RESTORE_CONFLICT');
    expect(stderr).toContain('never overwritten');
    expect(await readFile(transcriptPath(world.project, sessionId), 'utf8')).toBe('my own local changes\n');
  });

  it('refuses a second copy of a session here in another project folder, naming it and what to do', async () => {
    const { capturedId, sessionId } = await uploadClaudeSession(world);
    const first = await cli(world, [capturedId, '--dest', world.project, '--yes', '--no-launch']);
    expect(first.code, first.stderr).toBe(0);
    const other = path.join(path.dirname(world.project), 'another_checkout');
    await mkdir(other);
    const existing = transcriptPath(world.project, sessionId);
    const stderr = await refused([capturedId, '--dest', other, '--yes', '--no-launch'], 'RESTORE_CONFLICT');
    expect(stderr).toContain(
      `Claude Code already has a session ${sessionId} on this machine: ${existing}: a copy in another project folder`,
    );
    expect(stderr).toContain(`move or delete ${existing}`);
    expect(stderr).toContain('Nothing was changed.');
    expect(existsSync(transcriptPath(other, sessionId))).toBe(false);

    const json = await cli(world, [capturedId, '--dest', other, '--json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({
      ok: false,
      error: { code: 'RESTORE_CONFLICT', message: expect.stringContaining(existing) },
    });
  });
});

describe('output for scripts', () => {
  it('--no-launch prints exactly the shell-quoted command with a cd', async () => {
    const odd = path.join(world.home.root, 'work', "it's a dir");
    execFileSync('mkdir', ['-p', odd]);
    const { capturedId, sessionId } = await uploadClaudeSession(world, { cwd: odd });
    const result = await cli(world, [capturedId, '--dest', odd, '--yes', '--no-launch']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(`cd '${odd.replace(/'/g, `'\\''`)}' && claude --resume ${sessionId}\n`);
    expect(result.stderr).not.toContain('FAKE-CLAUDE');
    expect(existsSync(transcriptPath(odd, sessionId))).toBe(true);
  });

  it('--json without --yes reports the plan and writes nothing; with --yes it restores', async () => {
    const { capturedId, sessionId } = await uploadClaudeSession(world);
    const before = await snapshot(world.home.root);
    const plan = await cli(world, [capturedId, '--dest', world.project, '--json']);
    expect(plan.code, plan.stderr).toBe(0);
    expect(await snapshot(world.home.root)).toEqual(before);
    const doc = JSON.parse(plan.stdout);
    const transcript = transcriptPath(world.project, sessionId);
    expect(doc).toMatchObject({
      ok: true,
      dry_run: true,
      id: capturedId,
      session_id: sessionId,
      harness: 'claude',
      destination: world.project,
      command: ['claude', '--resume', sessionId],
    });
    expect(doc.restored).toContain(transcript);
    expect(doc.restored).toHaveLength(2);

    const done = await cli(world, [capturedId, '--dest', world.project, '--json', '--yes']);
    expect(done.code, done.stderr).toBe(0);
    const result = JSON.parse(done.stdout);
    expect(result).toMatchObject({
      ok: true,
      dry_run: false,
      session_id: sessionId,
      command: ['claude', '--resume', sessionId],
    });
    expect(result.restored).toContain(transcript);
    expect(existsSync(transcript)).toBe(true);
    expect(done.stdout).not.toContain('FAKE-CLAUDE');
  });

  it('--json errors are JSON too', async () => {
    const result = await cli(world, ['0123abcd', '--json']);
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toMatchObject({ ok: false, error: { code: 'SESSION_NOT_FOUND' } });
  });
});

describe('hostile bundles from the server are refused, and nothing is written', () => {
  const sessionId = 'bad00000-0000-4000-8000-000000000001';
  const key = () => claudeProjectKey(world.project);
  const manifest = (files: Record<string, unknown>[], extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      schema_version: 1,
      artifact_format: 'blue-session-bundle-v1',
      harness: 'claude',
      compatibility_profile: 'claude-v2_0_12',
      native_session_id: sessionId,
      captured_at_unix_ms: 1700000000000,
      cwd: world.project,
      files,
      ...extra,
    });
  const content = Buffer.from('{"type":"user","message":{"role":"user","content":"hi"}}\n');
  const good = () => ({
    role: 'primary_transcript',
    path: 'files/0000-t.jsonl',
    native_path: `${key()}/${sessionId}.jsonl`,
    size: content.length,
    sha256: sha(content),
  });

  /**
   * Serves `entries` as a resumable session. With `profile`, the server's record names that profile although this
   * server would refuse it at presign (set in its database): as a Control API that does not check profiles would.
   */
  async function serve(entries: RawEntry[], options: { profile?: string } = {}): Promise<string> {
    const { capturedId } = await uploadBytes(world, gzip(tarOf(entries)), { sessionId });
    if (options.profile !== undefined)
      inDatabase(['UPDATE artifacts SET compatibility_profile = ? WHERE session_id = ?', options.profile, capturedId]);
    return capturedId;
  }

  it.each([
    [
      'a traversal entry',
      () => [
        { name: 'files/0000-t.jsonl', data: content },
        { name: '../../escape', data: 'x' },
        { name: 'manifest.json', data: manifest([good()]) },
      ],
    ],
    [
      'a symlink entry',
      () => [
        { name: 'files/0000-t.jsonl', type: '2', linkname: '/etc/passwd' },
        { name: 'manifest.json', data: manifest([good()]) },
      ],
    ],
    [
      'a digest mismatch',
      () => [
        { name: 'files/0000-t.jsonl', data: content },
        { name: 'manifest.json', data: manifest([{ ...good(), sha256: sha('other') }]) },
      ],
    ],
    [
      'a wrong role',
      () => [
        { name: 'files/0000-t.jsonl', data: content },
        { name: 'manifest.json', data: manifest([{ ...good(), role: 'rollout' }]) },
      ],
    ],
    [
      'a native path outside the session root',
      () => [
        { name: 'files/0000-t.jsonl', data: content },
        { name: 'manifest.json', data: manifest([{ ...good(), native_path: `../../.bashrc` }]) },
      ],
    ],
    [
      'an unlisted file',
      () => [
        { name: 'files/0000-t.jsonl', data: content },
        { name: 'files/0001-x', data: 'x' },
        { name: 'manifest.json', data: manifest([good()]) },
      ],
    ],
  ] as [string, () => RawEntry[]][])('%s', async (_name, entries) => {
    const capturedId = await serve(entries());
    await refused([capturedId, '--dest', world.project, '--yes', '--no-launch'], 'BUNDLE_INVALID');
  });

  it('a profile without session_resume: downloadable, not resumable', async () => {
    const capturedId = await serve(
      [
        { name: 'files/0000-t.jsonl', data: content },
        { name: 'manifest.json', data: manifest([good()], { compatibility_profile: 'claude-v1_0_85' }) },
      ],
      { profile: 'claude-v1_0_85' },
    );
    const stderr = await refused(
      [capturedId, '--dest', world.project, '--yes', '--no-launch'],
      'SESSION_NOT_RESUMABLE',
    );
    expect(stderr).toContain('does not support session_resume');
  });

  it('an unknown profile: not resumable', async () => {
    const capturedId = await serve(
      [
        { name: 'files/0000-t.jsonl', data: content },
        { name: 'manifest.json', data: manifest([good()], { compatibility_profile: 'claude-v9_0_0' }) },
      ],
      { profile: 'claude-v9_0_0' },
    );
    await refused([capturedId, '--dest', world.project, '--yes', '--no-launch'], 'SESSION_NOT_RESUMABLE');
  });

  it('a bundle changed in storage after upload: the download is refused', async () => {
    const { capturedId, artifactId } = await uploadClaudeSession(world);
    const blob = path.join(world.server.blobDir, 'sessions', `${artifactId}.tar.gz`);
    const bytes = await readFile(blob);
    bytes[bytes.length - 5] = bytes[bytes.length - 5]! ^ 0xff;
    await writeFile(blob, bytes);
    await refused([capturedId, '--dest', world.project, '--yes', '--no-launch'], 'DOWNLOAD_FAILED');
  });
});

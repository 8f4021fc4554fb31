/**
 * `blue-agent resume` at a real terminal: the built CLI in a pseudo-terminal, against a real Control API on loopback,
 * keys typed and the screen read back. Cancelling at any prompt leaves every file under the test's root as it was.
 */
import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  KEYS,
  claudeProjectKey,
  runPty,
  snapshot,
  startWorld,
  uploadClaudeSession,
  type World,
} from '../../../../test/support/resume-world.js';
import { execFileSync } from 'node:child_process';
import { startFaultProxy } from '../../../../test/support/fault-proxy.js';

let world: World;
beforeEach(async () => {
  world = await startWorld();
});
afterEach(async () => {
  await world.close();
});

function restoredTranscript(dest: string, sessionId: string): string {
  return path.join(world.home.home, '.claude', 'projects', claudeProjectKey(dest), `${sessionId}.jsonl`);
}

describe('the picker', () => {
  it('lists only owned or explicitly shared resumable sessions, filters as you type, resumes the choice', async () => {
    const mine = await uploadClaudeSession(world, { title: 'Fix the flaky login test' });
    const other = await uploadClaudeSession(world, { title: 'Refactor the billing module' });
    const shared = await uploadClaudeSession(world, { user: world.server.bob, title: 'Bob shares his parser work' });
    await world.server.call('PUT', `/session-uploads/${shared.capturedId}/sharing`, world.server.bob.token, {
      mode: 'selected',
      emails: ['alice@example.com'],
    });
    await uploadClaudeSession(world, { user: world.server.bob, title: 'Bob keeps this private' });
    await uploadClaudeSession(world, { title: 'Marked not resumable', resumable: false });

    const pty = runPty(world, [], { cwd: world.project });
    await pty.waitFor('Resume a session');
    await pty.waitFor('Refactor the billing module');
    await pty.waitFor('Esc cancel');
    const screen = pty.frame().join('\n');
    expect(screen).toContain('Fix the flaky login test');
    expect(screen).toContain('Bob shares his parser work');
    expect(screen).toContain('shared by bob@example.com');
    expect(screen).toContain('you');
    expect(screen).toContain('claude');
    expect(screen).not.toContain('Bob keeps this private');
    expect(screen).not.toContain('Marked not resumable');
    expect(screen).toMatch(/3 of 3/);

    // Type to filter, then move and choose.
    pty.mark();
    await pty.type('flaky');
    await pty.waitFor('1 of 3');
    expect(pty.frame().join('\n')).not.toContain('billing');
    await pty.type(KEYS.backspace.repeat(5));
    await pty.waitFor('3 of 3');
    await pty.type('billing');
    await pty.waitFor('1 of 3');
    pty.mark();
    await pty.type(KEYS.enter);
    // Recorded in the current directory: no destination question; straight to the summary and the final prompt.
    await pty.waitFor('Restore and launch Claude Code? [y/N]');
    const summary = pty.text();
    expect(summary).toContain('Refactor the billing module');
    expect(summary).toContain(`Destination  ${world.project}`);
    expect(summary).toContain('Bundle  verified: 2 files');
    expect(summary).toMatch(/Downloading \[#+\]\s+100%/);
    expect(summary).toContain('Harness  Claude Code 2.1.197');
    expect(summary).toContain(`cd ${world.project} && claude --resume ${other.sessionId}`);
    pty.mark();
    await pty.type('y');
    await pty.waitFor('FAKE-CLAUDE');
    const exit = await pty.exit;
    expect(pty.text()).toContain(`FAKE-CLAUDE args=--resume ${other.sessionId} cwd=${world.project}`);
    expect(exit.exitCode).toBe(7);
    expect(await readFile(restoredTranscript(world.project, other.sessionId), 'utf8')).toContain(
      'Refactor the billing module',
    );
    expect(existsSync(restoredTranscript(world.project, mine.sessionId))).toBe(false);
  });
});

describe('searching as you type', () => {
  it('finds a session by a word of its conversation, shows the snippet under it, and resumes it', async () => {
    const deep = await uploadClaudeSession(world, {
      title: 'Tidy the build',
      turns: ['Tidied.', 'While you are there, check the flux capacitor wiring in the release script.', 'Rewired it.'],
    });
    await uploadClaudeSession(world, { title: 'Refactor the billing module' });
    const pty = runPty(world, [], { cwd: world.project });
    await pty.waitFor('2 of 2');
    await pty.waitFor('type to search');
    pty.mark();
    // Nothing on the screen says "capacitor": the local filter finds nothing, the server's search finds the session.
    await pty.type('capacitor');
    await pty.waitFor('0 of 2');
    await pty.waitFor('[capacitor]');
    const screen = pty.frame();
    expect(screen.join('\n')).toContain('1 of 2');
    const row = screen.findIndex((line) => line.includes('Tidy the build'));
    expect(row, screen.join('\n')).toBeGreaterThan(0);
    expect(screen[row + 1]).toMatch(/^ {4}.*\[capacitor\] wiring/);
    expect(screen.join('\n')).not.toContain('billing');
    pty.mark();
    await pty.type(KEYS.enter);
    await pty.waitFor('Restore and launch Claude Code? [y/N]');
    expect(pty.text()).toContain('Tidy the build');
    pty.mark();
    await pty.type('y');
    const exit = await pty.exit;
    expect(pty.text()).toContain(`FAKE-CLAUDE args=--resume ${deep.sessionId}`);
    expect(exit.exitCode).toBe(7);
  });

  it('says so when the search fails, and goes on filtering what it listed', async () => {
    await uploadClaudeSession(world, { title: 'Fix the flaky login test' });
    await uploadClaudeSession(world, { title: 'Refactor the billing module' });
    const proxy = await startFaultProxy();
    proxy.target = world.server.url;
    try {
      const pty = runPty(world, [], { env: { BLUE_AGENT_CONTROL_URL: proxy.url } });
      await pty.waitFor('2 of 2');
      proxy.rules.push({
        method: 'GET',
        path: /\/session-uploads$/,
        times: 100,
        action: { kind: 'answer', status: 403, body: JSON.stringify({ error: 'searching is not allowed here' }) },
      });
      pty.mark();
      await pty.type('billing');
      await pty.waitFor(/Search failed: .*answered HTTP 403: searching is not allowed here/);
      const screen = pty.frame().join('\n');
      expect(screen).toContain('1 of 2');
      expect(screen).toContain('Refactor the billing module');
      expect(proxy.count('GET', /\/session-uploads$/)).toBeGreaterThanOrEqual(2);
      await pty.type(KEYS.esc);
      expect((await pty.exit).exitCode).toBe(1);
    } finally {
      await proxy.close();
    }
  });
});

describe('cancelling leaves the machine exactly as it was', () => {
  async function expectUntouched(
    before: Record<string, string>,
    exit: Promise<{ exitCode: number }>,
    pty: { text(): string },
  ) {
    const { exitCode } = await exit;
    expect(exitCode).toBe(1);
    expect(pty.text()).toContain('nothing was changed');
    expect(await snapshot(world.home.root)).toEqual(before);
  }

  it('at the picker (Esc)', async () => {
    await uploadClaudeSession(world, { title: 'Something to pick' });
    const before = await snapshot(world.home.root);
    const pty = runPty(world, []);
    await pty.waitFor('Something to pick');
    await pty.type(KEYS.esc);
    await expectUntouched(before, pty.exit, pty);
  });

  it('at the picker (Ctrl-C)', async () => {
    await uploadClaudeSession(world, { title: 'Something to pick' });
    const before = await snapshot(world.home.root);
    const pty = runPty(world, []);
    await pty.waitFor('Something to pick');
    await pty.type(KEYS.ctrlC);
    await expectUntouched(before, pty.exit, pty);
  });

  it('at the destination question (Esc), and `n` there too', async () => {
    const { capturedId } = await uploadClaudeSession(world, { title: 'Recorded elsewhere' });
    const before = await snapshot(world.home.root);
    for (const key of [KEYS.esc, 'n']) {
      const pty = runPty(world, [capturedId], { cwd: world.elsewhere });
      await pty.waitFor('Where should the session be restored?');
      // The whole frame: its last line is the keys' (a terminal may be handed a frame in pieces).
      await pty.waitFor('Esc cancel');
      const screen = pty.frame().join('\n');
      expect(screen).toContain('The current directory');
      expect(screen).toContain('The recorded directory');
      expect(screen).toContain('Another directory');
      await pty.type(key);
      await expectUntouched(before, pty.exit, pty);
    }
  });

  it('at the repository mismatch question (n)', async () => {
    git(world.project, ['init', '-q']);
    git(world.project, ['remote', 'add', 'origin', 'https://example.com/someone/else.git']);
    const { capturedId } = await uploadClaudeSession(world, {
      title: 'In the app repo',
      remote: 'git@example.com:team/app.git',
    });
    const before = await snapshot(world.home.root);
    const pty = runPty(world, [capturedId]);
    await pty.waitFor('Restore it into this other repository anyway? [y/N]');
    expect(pty.text()).toContain('recorded in a clone of git@example.com:team/app.git');
    await pty.type('n');
    const { exitCode } = await pty.exit;
    expect(exitCode).toBe(1);
    expect(pty.text()).toContain('REPOSITORY_MISMATCH');
    expect(await snapshot(world.home.root)).toEqual(before);
  });

  it('at the final prompt (Enter keeps things as they are; Esc and Ctrl-C too)', async () => {
    const { capturedId } = await uploadClaudeSession(world, { title: 'Final answer' });
    const before = await snapshot(world.home.root);
    for (const key of [KEYS.enter, KEYS.esc, KEYS.ctrlC, 'n']) {
      const pty = runPty(world, [capturedId]);
      await pty.waitFor('Restore and launch Claude Code? [y/N]');
      await pty.type(key);
      await expectUntouched(before, pty.exit, pty);
    }
  });
});

describe('destination', () => {
  it('takes another directory typed by hand, validated, and prints the command with --no-launch', async () => {
    const { capturedId, sessionId } = await uploadClaudeSession(world, { title: 'Move me' });
    await rm(world.project, { recursive: true });
    const pty = runPty(world, [capturedId, '--no-launch'], { cwd: world.home.home });
    await pty.waitFor('Where should the session be restored?');
    const screen = pty.frame().join('\n');
    // The recorded directory does not exist here: it is not offered.
    expect(screen).toContain('(not on this machine)');
    expect(screen).not.toContain('The recorded directory');
    await pty.type(KEYS.down);
    await pty.type(KEYS.enter);
    await pty.waitFor('Directory:');
    pty.mark();
    await pty.type('/no/such/dir\r');
    await pty.waitFor('/no/such/dir does not exist.');
    pty.mark();
    await pty.type(`\u0015${world.elsewhere}\r`);
    await pty.waitFor('Restore the session? [y/N]');
    pty.mark();
    await pty.type('y');
    await pty.waitFor(`cd ${world.elsewhere} && claude --resume ${sessionId}`);
    expect((await pty.exit).exitCode).toBe(0);
    expect(pty.text()).not.toContain('FAKE-CLAUDE');
    expect(existsSync(restoredTranscript(world.elsewhere, sessionId))).toBe(true);
  });

  it('refuses when the chosen destination vanished before the restore, writing nothing', async () => {
    const { capturedId } = await uploadClaudeSession(world, { title: 'Vanishing' });
    const before = await snapshot(world.home.root);
    delete before['work/elsewhere'];
    const pty = runPty(world, [capturedId, '--dest', world.elsewhere]);
    await pty.waitFor('Restore and launch Claude Code? [y/N]');
    await rm(world.elsewhere, { recursive: true });
    await pty.type('y');
    const { exitCode } = await pty.exit;
    expect(exitCode).toBe(1);
    expect(pty.text()).toMatch(/DESTINATION_INVALID/);
    expect(await snapshot(world.home.root)).toEqual(before);
  });
});

describe('narrow terminals', () => {
  it('truncates with an ellipsis instead of wrapping, and redraws on resize', async () => {
    for (let i = 0; i < 3; i++) {
      await uploadClaudeSession(world, {
        title: `A rather long session title number ${i} that will not fit in a narrow terminal at all`,
      });
    }
    const pty = runPty(world, [], { columns: 50, rows: 12 });
    await pty.waitFor('3 of 3');
    await pty.waitFor(/↑\/↓ move/);
    const check = (columns: number) => {
      const lines = pty.frame();
      expect(lines.length).toBeLessThanOrEqual(12);
      for (const line of lines) expect([...line].length, JSON.stringify(line)).toBeLessThan(columns);
      expect(lines.join('\n')).toContain('…');
    };
    check(50);
    pty.mark();
    pty.resize(28, 10);
    await pty.waitFor(/↑\/↓ move/);
    check(28);
    pty.mark();
    pty.resize(140, 20);
    await pty.waitFor('RECORDED IN');
    const wide = pty.frame().join('\n');
    expect(wide).toContain('OWNER');
    expect(wide).toContain('UPDATED');
    await pty.type(KEYS.esc);
    expect((await pty.exit).exitCode).toBe(1);
  });
});

function git(cwd: string, args: string[]): void {
  execFileSync('git', args, { cwd, env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: world.home.home } });
}

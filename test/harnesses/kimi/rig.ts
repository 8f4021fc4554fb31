/**
 * Kimi CLI's test rig (see test/support/rigs.ts): no CLI can be installed here (PyPI is unreachable), so it has no
 * `cli`; its recorded fixture follows its source, and its certification runs the steps on that fixture, with the hook
 * commands run as Kimi runs them (`sh -c`, the payload on stdin).
 */
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { kimiWorkDirHash } from '../../../src/harnesses/kimi/session.js';
import type { SessionFile } from '../../../src/harnesses/types.js';
import { reconcile } from '../../../src/reconcile/index.js';
import type { Interval } from '../../../src/schema/index.js';
import {
  agentOn,
  captured,
  check,
  drained,
  intervalFor,
  pathWith,
  Recorder,
  restoredOnB,
  shell,
  startMachines,
  userHookSessions,
  type Machines,
  type Target,
  type TargetResult,
} from '../../support/certify.js';
import { entryName, filesBelow, installTree } from '../../support/recorded-sessions.js';
import { fixtureBundle } from '../../support/restore-homes.js';
import { appendStdinCommand } from '../../support/run-harness.js';
import type { HarnessRig } from '../../support/rigs.js';

/** The sessions Kimi's SessionEnd hook payloads speak of. */
function kimiHookSessions(lines: readonly Record<string, any>[]): string[] {
  return lines.filter((e) => e.hook_event_name === 'SessionEnd').map((e) => e.session_id as string);
}

/**
 * Kimi, from fixtures that follow its source: the session folder and kimi.json as Kimi writes them, the hook
 * commands run the way Kimi runs them, the real capture, drain and restore; no CLI to resume with.
 */
async function certifyKimiFixtures(target: Target): Promise<TargetResult> {
  const rec = new Recorder(target);
  const { version } = target;
  let interval: Interval | undefined;
  let r: Machines | undefined;
  try {
    let bin = '';
    await rec.step('install', async () => {
      interval = await intervalFor('kimi', version);
      rec.result.profile = interval.profile;
      r = await startMachines('kimi');
      // No Kimi CLI can be installed here: a stand-in that prints Kimi's `--version` line, for detection only.
      bin = path.join(r.a.root, 'bin', 'kimi');
      await mkdir(path.dirname(bin), { recursive: true });
      await writeFile(bin, `#!/bin/sh\necho "kimi, version ${version}"\n`);
      await chmod(bin, 0o755);
      return 'fixtures (no CLI)';
    });
    if (r === undefined || interval === undefined) return rec.result;
    const rr = r;
    const share = path.join(rr.a.home, '.kimi');
    const config = path.join(share, 'config.toml');
    let sessionId = '';
    let cwd = '';

    await rec.step('reconcile', async () => {
      await mkdir(share, { recursive: true });
      await writeFile(config, `default_model = "kimi-k2"\n\n[[hooks]]\nevent = "SessionEnd"\nmatcher = ""\ncommand = ${JSON.stringify(appendStdinCommand(rr.userOut))}\ntimeout = 5\n`);
      const report = (await reconcile(agentOn(rr.a, bin), { dryRun: false, harnesses: ['kimi'] })).harnesses[0]!;
      check(report.state === 'active', () => `reconcile: ${report.state}: ${report.reason}`);
      check(report.version === version && report.profile === interval!.profile, () => `reconcile read ${report.version} / ${report.profile}`);
      const hooks = (parseToml(await readFile(config, 'utf8')) as { hooks?: { event: string; command: string; timeout?: number }[] }).hooks ?? [];
      const sessionEnd = hooks.filter((h) => h.event === 'SessionEnd');
      check(sessionEnd.length === 2, () => `config.toml holds ${sessionEnd.length} SessionEnd hooks, expected the user's and the managed one`);
      // The fixture session, as Kimi 1.49 leaves it when a session ends.
      const fixture = await fixtureBundle('kimi', rr.a, path.join(rr.a.root, 'unused.bundle'));
      sessionId = fixture.sessionId;
      cwd = fixture.cwd;
      // Kimi runs each matching hook with `sh -c COMMAND`, the payload as JSON on stdin (kimi_cli/hooks).
      const payload = JSON.stringify({ hook_event_name: 'SessionEnd', session_id: sessionId, cwd, reason: 'exit' });
      for (const hook of sessionEnd) {
        const code = await shell(hook.command, payload, { ...rr.a.env, PATH: pathWith(bin) }, cwd);
        check(code === 0, () => `hook ${hook.command} exited ${code}`);
      }
      const sessions = await userHookSessions(rr, kimiHookSessions);
      check(sessions.includes(sessionId), () => `the user hook saw ${sessions.join(', ')}`);
      return 'active; managed + user hook run as Kimi runs them';
    });

    await rec.step('session', async () => {
      check(existsSync(path.join(share, 'sessions', kimiWorkDirHash(cwd), sessionId, 'context.jsonl')), () => 'the fixture session folder is missing');
      return `fixture ${version}`;
    });

    await rec.step('capture', async () => {
      const id = await captured(rr, 'kimi');
      check(id === sessionId, () => `captured ${id}, expected ${sessionId}`);
      return sessionId;
    });

    let upload: { upload_id: string; session_id: string } | undefined;
    await rec.step('drain', async () => {
      upload = await drained(rr, 'kimi', sessionId);
      return upload.upload_id;
    });

    await rec.step('restore', async () => {
      const binB = path.join(rr.b.root, 'bin', 'kimi');
      await mkdir(path.dirname(binB), { recursive: true });
      await writeFile(binB, `#!/bin/sh\necho "kimi, version ${version}"\n`);
      await chmod(binB, 0o755);
      const shareB = path.join(rr.b.home, '.kimi');
      await mkdir(shareB, { recursive: true });
      await writeFile(path.join(shareB, 'kimi.json'), '{"work_dirs": [{"path": "/srv/other", "kaos": "local", "last_session_id": "keep-me"}]}\n');
      const command = await restoredOnB(rr, upload!.upload_id, binB);
      check(JSON.stringify(command) === JSON.stringify(['kimi', '--session', sessionId]), () => `resume command ${JSON.stringify(command)}`);
      const folder = path.join(shareB, 'sessions', kimiWorkDirHash(rr.destination), sessionId);
      check(existsSync(path.join(folder, 'context.jsonl')) && existsSync(path.join(folder, 'wire.jsonl')), () => `${folder} lacks context.jsonl / wire.jsonl`);
      const index = JSON.parse(await readFile(path.join(shareB, 'kimi.json'), 'utf8')) as { work_dirs: { path: string; last_session_id?: string }[] };
      check(index.work_dirs.some((w) => w.path === '/srv/other' && w.last_session_id === 'keep-me'), () => 'the user work_dirs entry was lost');
      check(index.work_dirs.some((w) => w.path === rr.destination && w.last_session_id === sessionId), () => 'no work_dirs entry for the destination');
      return command.join(' ');
    });
    rec.notApplicable('resume', 'Kimi CLI cannot be installed here (PyPI unreachable): no native resume run');
    return rec.result;
  } finally {
    rec.finish();
    await r?.close();
  }
}

export const kimi: HarnessRig = {
  name: 'kimi',
  reconcileStates: ['active'],
  versionLine: 'kimi, version 1.49.0',
  fixture: {
    profile: 'kimi-v1_28_0',
    title: 'Refactor the config loader so it reads TOML only',
    // The session folder's parent: the hash of the working directory.
    placeholders: (cwd) => ({ WORKDIR_MD5: kimiWorkDirHash(cwd) }),
    async files(dir, recorded, vars, content) {
      const id = recorded.session_id;
      const sessionDir = path.join(dir, 'share', 'sessions', '{{WORKDIR_MD5}}', id);
      const sessionRel = `sessions/${vars.WORKDIR_MD5}/${id}`;
      const files: SessionFile[] = [];
      files.push({ role: 'agent_wire_history', name: 'wire.jsonl', nativePath: `${sessionRel}/wire.jsonl`, content: await content(path.join(sessionDir, 'wire.jsonl')) });
      files.push({ role: 'kimi_state', name: 'state.json', nativePath: `${sessionRel}/state.json`, content: await content(path.join(sessionDir, 'state.json')) });
      for (const rel of await filesBelow(sessionDir)) {
        if (rel === 'wire.jsonl' || rel === 'state.json' || rel.startsWith('tasks/')) continue;
        files.push({ role: 'session_state', name: entryName(rel), nativePath: `${sessionRel}/${rel}`, content: await content(path.join(sessionDir, rel)) });
      }
      return files;
    },
    sessionsIn: (home) => path.join(home, '.kimi'),
    async seedIndexes(home) {
      await mkdir(path.join(home, '.kimi'), { recursive: true });
      await writeFile(path.join(home, '.kimi', 'kimi.json'), '{"work_dirs": []}\n');
    },
    async install(dir, { root, home, cwd }) {
      const vars = { ROOT: root, WORKDIR_MD5: kimiWorkDirHash(cwd) };
      await installTree(path.join(dir, 'share'), kimi.fixture.sessionsIn!(home), vars);
      return vars;
    },
  },
  certifyOnFixtures: certifyKimiFixtures,
};

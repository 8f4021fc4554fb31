/**
 * Claude Code's test rig (see test/support/rigs.ts): `claude -p` against the stub's Anthropic Messages API, its
 * settings.json hooks, its project folders under CLAUDE_CONFIG_DIR, and its recorded fixture.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { claudeProjectKey } from '../../../src/harnesses/claude/session.js';
import type { SessionFile } from '../../../src/harnesses/types.js';
import { entryName, filesBelow, installTree } from '../../../../../test/support/recorded-sessions.js';
import {
  appendStdinCommand,
  harnessEnv,
  runProcess,
  STUB_API_KEY,
  type HarnessRunOptions,
  type HarnessRunResult,
} from '../../../../../test/support/run-harness.js';
import type { HarnessRig } from '../../../../../test/support/rigs.js';
import { addHookGroup } from '../../../../../test/support/settings-file.js';

/** Claude's configuration folder for an env built by harnessEnv. */
export function claudeDir(env: Readonly<Record<string, string>>): string {
  return env.CLAUDE_CONFIG_DIR!;
}

/** `claude -p PROMPT` against the stub. `args` go before `-p` (for example `['--resume', id]`). */
export async function runClaude(options: HarnessRunOptions): Promise<HarnessRunResult> {
  const env = harnessEnv(
    options.home,
    {
      ANTHROPIC_BASE_URL: options.stubUrl,
      ANTHROPIC_API_KEY: STUB_API_KEY,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
      ...options.env,
    },
    options.isolationRoot,
  );
  await mkdir(env.CLAUDE_CONFIG_DIR!, { recursive: true });
  return runProcess(options.bin, [...(options.args ?? []), '-p', options.prompt], {
    env,
    cwd: options.cwd,
    timeoutMs: options.timeoutMs,
    onSpawn: options.onSpawn,
  });
}

/** Adds a user `SessionEnd` group to Claude's settings.json (creating it when missing). */
export function addClaudeUserHook(
  claudeDir: string,
  event: string,
  command: string,
  timeoutSeconds = 10,
): Promise<string> {
  return addHookGroup(claudeDir, event, {
    matcher: '',
    hooks: [{ type: 'command', command, timeout: timeoutSeconds }],
  });
}

export const claude: HarnessRig = {
  name: 'claude',
  reconcileStates: ['active'],
  versionLine: '2.1.332 (Claude Code)',
  locations: (home) => ({ CLAUDE_CONFIG_DIR: path.join(home, '.claude') }),
  fixture: {
    profile: 'claude-v2_0_12',
    title: 'Explain the build steps of this project',
    // The project key of the working directory, and Claude Code's per-user temporary folder.
    placeholders: (cwd) => ({ PROJECT: claudeProjectKey(cwd), CLAUDE_TMP: '/tmp/claude-1000' }),
    async files(dir, recorded, vars, content) {
      const id = recorded.session_id;
      const projects = path.join(dir, 'projects', '{{PROJECT}}');
      const files: SessionFile[] = [];
      files.push({
        role: 'primary_transcript',
        name: 'transcript.jsonl',
        nativePath: `${vars.PROJECT}/${id}.jsonl`,
        content: await content(path.join(projects, `${id}.jsonl`)),
      });
      for (const rel of await filesBelow(path.join(projects, id))) {
        files.push({
          role: 'session_companion',
          name: entryName(rel),
          nativePath: `${vars.PROJECT}/${id}/${rel}`,
          content: await content(path.join(projects, id, rel)),
        });
      }
      return files;
    },
    sessionsIn: (home) => path.join(home, '.claude', 'projects'),
    async install(dir, { root, home, cwd }) {
      const vars = { ROOT: root, PROJECT: claudeProjectKey(cwd) };
      await installTree(path.join(dir, 'projects'), claude.fixture.sessionsIn!(home), vars);
      return vars;
    },
  },
  cli: {
    modelPath: '/v1/messages',
    run: runClaude,
    addUserHook: async (env, outFile) =>
      void (await addClaudeUserHook(claudeDir(env), 'SessionEnd', appendStdinCommand(outFile), 10)),
    userHookSessions: (lines) =>
      lines.filter((e) => e.hook_event_name === 'SessionEnd').map((e) => e.session_id as string),
    resumeCommand: (id) => ['claude', '--resume', id],
  },
};

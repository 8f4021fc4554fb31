/**
 * The README's undo, `blue-agent service uninstall --remove-hooks`, against a real `blue-agent run` (the built CLI, a
 * temporary HOME, a local policy file): the agent is stopped before the hooks go, so it cannot put them back as drift,
 * whether it was started by hand (no user manager in the session) or the service manager cannot stop it. systemctl is
 * the stand-in of test/support/service-fakes.ts, failing as it does without a user manager.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { agentHome, waitFor, type AgentHome } from '../../../../test/support/agent-home.js';
import { runCli, type CliResult } from '../../../../test/support/cli-process.js';
import { CAPTURE_POLICY, installFakes, type Fakes } from '../../../../test/support/service-fakes.js';

let t: AgentHome;
let fakes: Fakes;
const children: ReturnType<typeof runCli>[] = [];

beforeEach(async () => {
  t = await agentHome();
  fakes = await installFakes(t.root);
  const policy = path.join(t.root, 'policy.yaml');
  await writeFile(policy, CAPTURE_POLICY);
  await mkdir(path.dirname(t.env.BLUE_AGENT_CONFIG!), { recursive: true });
  await writeFile(t.env.BLUE_AGENT_CONFIG!, `policy_file: ${policy}\n`);
});
afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
    await c.catch(() => undefined);
  }
  await t.cleanup();
});

const env = (): Record<string, string> => ({
  ...t.env,
  PATH: `${fakes.bin}:${t.env.PATH}`,
  FAKE_SERVICE_STATE: fakes.state,
  BLUE_AGENT_LOG: 'file',
});
const unitFile = () => path.join(t.home, '.config', 'systemd', 'user', 'blue-agent.service');
const lockFile = () => path.join(t.stateDir, 'agent-run.lock');
const hooked = () => existsSync(t.settings) && readFileSync(t.settings, 'utf8').includes('capture --harness claude');

function cli(args: string[], timeoutMs = 60_000): ReturnType<typeof runCli> {
  const c = runCli(args, { env: env(), timeoutMs });
  children.push(c);
  return c;
}

const exited = (c: ReturnType<typeof runCli>) => c.child.exitCode !== null || c.child.signalCode !== null;

/** `blue-agent run` as a person starts it, once its hooks are in place (wrapped: the process is a promise too). */
async function startAgent(): Promise<{ agent: ReturnType<typeof runCli> }> {
  const agent = cli(['run'], 120_000);
  await waitFor('the agent to install the hook', hooked, 30_000);
  await waitFor(
    'the agent to hold its lock',
    () => existsSync(lockFile()) && JSON.parse(readFileSync(lockFile(), 'utf8')).pid === agent.child.pid,
  );
  return { agent };
}

describe('service uninstall --remove-hooks with the agent running', () => {
  it('no user manager: install leaves nothing, the agent runs by hand, undo stops it before the hooks go', async () => {
    await writeFile(path.join(fakes.state, 'no-bus'), '');
    const install = await cli(['service', 'install']);
    expect(install.code).toBe(1);
    expect(install.stderr).toContain('Nothing was left installed');
    expect(existsSync(unitFile())).toBe(false);

    const { agent } = await startAgent();
    const undo: CliResult = await cli(['service', 'uninstall', '--remove-hooks']);
    // The agent finished its stop (exit 0) and let go of its lock: nothing is left that would put the hook back.
    await waitFor('the agent to stop', () => exited(agent), 40_000);
    expect((await agent).code).toBe(0);
    expect(existsSync(lockFile())).toBe(false);
    expect(hooked()).toBe(false);
    expect(undo.stderr).toBe('');
    expect(undo.code).toBe(0);
    expect(undo.stdout).toContain(`Stopped the running agent (\`blue-agent run\`, pid ${agent.child.pid})\n`);
    expect(undo.stdout).toContain('Removed the managed hooks:\n  claude: delete');
    const log = readFileSync(path.join(t.stateDir, 'run.log'), 'utf8');
    expect(log).toContain('"msg":"stopping"');
    expect(log).not.toContain('drift corrected');
  }, 90_000);

  it('the service manager cannot stop the agent: uninstall stops it, removes the hooks and the unit, and says what ' +
    'systemd did not do', async () => {
    expect((await cli(['service', 'install'])).code).toBe(0);
    expect(existsSync(unitFile())).toBe(true);
    // The agent the service runs, and then the session loses its way to the user manager.
    const { agent } = await startAgent();
    await writeFile(path.join(fakes.state, 'no-bus'), '');

    const undo = await cli(['service', 'uninstall', '--remove-hooks', '--json']);
    expect(undo.code).toBe(1);
    const json = JSON.parse(undo.stdout) as {
      ok: boolean;
      steps: { step: string; status: string; stopped?: { pid: number }[] }[];
    };
    expect(json.steps.map((s) => [s.step, s.status])).toEqual([
      ['run', 'failed'],
      ['stop-agent', 'done'],
      ['remove-hooks', 'done'],
      ['remove', 'done'],
      ['run', 'skipped'],
    ]);
    await waitFor('the agent to stop', () => exited(agent), 40_000);
    expect((await agent).code).toBe(0);
    expect(json.steps[1]!.stopped).toEqual([expect.objectContaining({ pid: agent.child.pid })]);
    expect(hooked()).toBe(false);
    expect(existsSync(unitFile())).toBe(false);
  }, 90_000);
});

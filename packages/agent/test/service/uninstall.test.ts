/**
 * `service uninstall` does every step it can whatever the service manager answers: the unit file, its enable link and
 * the managed hooks go even when systemctl or launchctl fail, and the exit code and --json say what was not done. An
 * agent that runs and cannot be stopped keeps the hooks in place, with the reason. The managers are the stand-ins of
 * test/support/service-fakes.ts.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { processStart } from '../../src/lock/liveness.js';
import { waitFor } from '../../../../test/support/agent-home.js';
import {
  installManagedHook,
  serviceHome,
  type ManagedHook,
  type ServiceHome,
} from '../../../../test/support/service-fakes.js';

const UID = String(process.getuid?.() ?? 0);
let h: ServiceHome;
let hook: ManagedHook;

beforeEach(async () => {
  h = await serviceHome();
  hook = await installManagedHook(h);
});
afterEach(async () => h.cleanup());

const linux = () => h.context('linux', { PATH: `${hook.bin}:/usr/bin:/bin` });
const link = () => path.join(path.dirname(h.unitPath()), 'default.target.wants', 'blue-agent.service');

interface StepJson {
  step: string;
  status: string;
  command?: string[];
  detail?: string;
  error?: { code: string; message: string; hint?: string };
}

describe('the service manager cannot be reached', () => {
  it(
    'the hooks, the unit file and its enable link are removed anyway; exit 1 and --json say what systemd did not ' +
      'do',
    async () => {
      expect((await h.cli(linux(), ['service', 'install'])).code).toBe(0);
      expect(existsSync(link())).toBe(true);
      await h.fail('no-bus');
      await h.fakes.reset();

      const { code, out } = await h.cli(linux(), ['service', 'uninstall', '--remove-hooks', '--json']);
      expect(code).toBe(1);
      const json = JSON.parse(out) as { ok: boolean; steps: StepJson[]; hooks: { harness: string; action: string }[] };
      expect(json.ok).toBe(false);
      expect(json.steps).toEqual([
        {
          step: 'run',
          command: ['systemctl', '--user', 'disable', '--now', 'blue-agent.service'],
          status: 'failed',
          detail:
            '`systemctl --user disable --now blue-agent.service` failed (exit 1): Failed to connect to bus: No ' +
            'medium found',
        },
        { step: 'stop-agent', running: null, stopped: [], status: 'done' },
        { step: 'remove-hooks', status: 'done' },
        { step: 'remove', file: h.unitPath(), status: 'done', detail: `also removed ${link()}` },
        {
          step: 'run',
          command: ['systemctl', '--user', 'daemon-reload'],
          status: 'skipped',
          detail: expect.stringContaining('systemctl could not be reached'),
        },
      ]);
      expect(json.hooks.find((x) => x.harness === 'claude')).toMatchObject({ action: 'remove' });
      expect(await hook.hooked()).toBe(false);
      expect(existsSync(h.unitPath())).toBe(false);
      expect(existsSync(link())).toBe(false);
      // Tried once: after the first command that cannot reach the manager, the next is not tried in vain.
      expect(await h.fakes.calls()).toEqual([
        ['systemctl', '--user', 'disable', '--now', 'blue-agent.service'],
        ['systemctl', 'is-system-running'],
      ]);
    },
  );

  it('in words: what was done, what was not, and how to finish where systemd answers', async () => {
    expect((await h.cli(linux(), ['service', 'install'])).code).toBe(0);
    await h.fail('no-bus');
    const { code, out, err } = await h.cli(linux(), ['service', 'uninstall', '--remove-hooks']);
    expect(code).toBe(1);
    expect(err).toBe('');
    expect(out).toContain(
      'Failed: `systemctl --user disable --now blue-agent.service` failed (exit 1): Failed to connect to bus: No ' +
        'medium found\n',
    );
    expect(out).toContain(`Removed the managed hooks:\n  claude: delete ${hook.settings}\n`);
    expect(out).toContain(
      `Done: the managed hooks are removed; ${h.unitPath()} is removed.\nNot done: systemd did not do its part ` +
        `(disable, daemon-reload).\n`,
    );
    expect(out).toContain(
      'hint: where systemd can be reached (your login session at the machine), finish with: systemctl --user stop ' +
        'blue-agent.service && systemctl --user daemon-reload\n',
    );
  });

  it('without systemd on the machine there is nothing for it to stop: everything done, exit 0', async () => {
    // A unit written by an earlier install, on a machine without systemd (a container).
    expect((await h.cli(linux(), ['service', 'install'])).code).toBe(0);
    await h.fail('no-bus');
    await h.systemState('offline');
    const { code, out } = await h.cli(linux(), ['service', 'uninstall', '--remove-hooks']);
    expect(code).toBe(0);
    expect(out).toContain(
      'Not needed: systemctl --user disable --now blue-agent.service (systemd does not run this machine, so no ' +
        'user manager runs the service',
    );
    expect(out).toContain('The systemd user unit blue-agent.service is stopped and removed.\n');
    expect(await hook.hooked()).toBe(false);
    expect(existsSync(h.unitPath())).toBe(false);
  });

  it('launchd: a bootout that fails keeps neither the plist nor the hooks', async () => {
    const mac = h.context('darwin', { PATH: `${hook.bin}:/usr/bin:/bin` });
    expect((await h.cli(mac, ['service', 'install'])).code).toBe(0);
    await h.fail('bootout-fails');
    const { code, out } = await h.cli(mac, ['service', 'uninstall', '--remove-hooks', '--json']);
    expect(code).toBe(1);
    const steps = (JSON.parse(out) as { steps: StepJson[] }).steps;
    expect(steps.map((s) => [s.step, s.status])).toEqual([
      ['run', 'failed'],
      ['stop-agent', 'done'],
      ['remove-hooks', 'done'],
      ['remove', 'done'],
    ]);
    expect(steps[0]!.detail).toBe(
      `\`launchctl bootout gui/${UID}/com.blue-agent.agent\` failed (exit 1): Boot-out failed: 1: Operation not ` +
        `permitted`,
    );
    expect(await hook.hooked()).toBe(false);
    expect(existsSync(h.plistPath())).toBe(false);
  });
});

describe('an agent that runs', () => {
  it('on another host sharing the state directory: the hooks stay, the refusal says why; the rest done', async () => {
    expect((await h.cli(linux(), ['service', 'install'])).code).toBe(0);
    const lock = linux().paths.runLockFile;
    await writeFile(lock, JSON.stringify({ pid: 4242, host: 'other-host', started_at_unix_ms: Date.now() - 1_000 }));
    const { code, out } = await h.cli(linux(), ['service', 'uninstall', '--remove-hooks', '--json']);
    expect(code).toBe(1);
    const steps = (JSON.parse(out) as { steps: StepJson[] }).steps;
    expect(steps.map((s) => [s.step, s.status])).toEqual([
      ['run', 'done'],
      ['stop-agent', 'failed'],
      ['remove-hooks', 'skipped'],
      ['remove', 'done'],
      ['run', 'done'],
    ]);
    expect(steps[1]!.error).toMatchObject({
      code: 'AGENT_RUNNING',
      message: expect.stringContaining(
        'it runs on other-host, which shares this state directory, so the managed hooks were left in place',
      ),
    });
    expect(await hook.hooked()).toBe(true);
    expect(existsSync(h.unitPath())).toBe(false);

    const human = await h.cli(linux(), ['service', 'uninstall', '--remove-hooks']);
    expect(human.code).toBe(1);
    expect(human.out).toContain(
      'Not stopped: the agent (`blue-agent run`, pid 4242 on other-host) could not be stopped',
    );
    expect(human.out).toContain('Left the managed hooks in place: the agent still runs and would put them back\n');
    expect(human.out).toContain(
      'Not done: the managed hooks were left in place: the agent still runs and would put them back.\n',
    );
    expect(human.out).toContain('hint: Stop it there (`blue-agent service uninstall` on other-host');
  });

  it('--dry-run names the agent it would stop, and stops nothing', async () => {
    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      await waitFor('sleep to start', () => child.pid !== undefined);
      const lock = linux().paths.runLockFile;
      const start = processStart(child.pid!);
      await writeFile(
        lock,
        JSON.stringify({
          pid: child.pid,
          host: hostname(),
          ...(start === undefined ? {} : { proc_start: start }),
          started_at_unix_ms: Date.now(),
        }),
      );
      const { code, out } = await h.cli(linux(), ['service', 'uninstall', '--remove-hooks', '--dry-run']);
      expect(code).toBe(0);
      expect(out).toBe(
        `Would stop the running agent (\`blue-agent run\`, pid ${child.pid}) and wait for it to exit\n` +
          `Would remove the managed hooks:\n  claude: delete ${hook.settings}\n` +
          'Nothing was changed (--dry-run).\n',
      );
      expect(child.exitCode).toBeNull();
      expect(await hook.hooked()).toBe(true);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

/**
 * A failed `service install` leaves nothing behind: the unit it wrote (or the previous one put back), the enable link,
 * the folders it made; and its hint says what can run the agent here. The service managers are the stand-ins of
 * test/support/service-fakes.ts, failing the way the real ones do.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { serviceStatus } from '../../src/service/index.js';
import { installManagedHook, serviceHome, type ServiceHome } from '../../../../test/support/service-fakes.js';

const UID = String(process.getuid?.() ?? 0);
let h: ServiceHome;

beforeEach(async () => {
  h = await serviceHome();
});
afterEach(async () => h.cleanup());

const link = () => path.join(path.dirname(h.unitPath()), 'default.target.wants', 'blue-agent.service');

describe('systemd', () => {
  it(
    'without a user manager in the session: nothing is left installed, the hint says why and what works, and the ' +
      "README's undo then works",
    async () => {
      const hook = await installManagedHook(h);
      await h.fail('no-bus');
      const ctx = h.context('linux', { PATH: `${hook.bin}:/usr/bin:/bin` });
      const { code, err } = await h.cli(ctx, ['service', 'install']);
      expect(code).toBe(1);
      expect(err).toContain(
        'error [SERVICE_FAILED]: `systemctl --user daemon-reload` failed (exit 1): Failed to connect to bus: No ' +
          'medium found',
      );
      expect(err).toContain(`hint: Nothing was left installed (removed ${h.unitPath()}).`);
      // systemd runs the machine (`is-system-running` says so): this session lacks a user manager.
      expect(err).toContain('The service cannot run here: there is no systemd user manager in this session');
      expect(err).toContain('`loginctl enable-linger $USER`');
      expect(err).toContain('`blue-agent run` in a session that stays open');
      expect(existsSync(h.unitPath())).toBe(false);
      // The folders the unit's write made went with it.
      expect(existsSync(path.join(h.t.home, '.config', 'systemd'))).toBe(false);
      expect(await h.fakes.calls()).toEqual([
        ['systemctl', '--user', 'daemon-reload'],
        ['systemctl', 'is-system-running'],
      ]);
      expect(await serviceStatus(ctx)).toMatchObject({ installed: false, availability: 'no_user_manager' });

      // The undo the README gives: nothing of the service to stop, and the hooks go.
      const undo = await h.cli(ctx, ['service', 'uninstall', '--remove-hooks']);
      expect(undo.err).toBe('');
      expect(undo.code).toBe(0);
      expect(undo.out).toContain(`Removed the managed hooks:\n  claude: delete ${hook.settings}\n`);
      expect(await hook.hooked()).toBe(false);
    },
  );

  it('without systemd on the machine (a container, WSL): no lingering advice, the agent run by hand', async () => {
    await h.fail('no-bus');
    await h.systemState('offline');
    const ctx = h.context('linux', {
      WSL_DISTRO_NAME: 'Debian',
      PATH: `${path.join(h.t.home, '.local', 'bin')}:${path.join(h.t.root, "it's 100%")}:/usr/bin:/bin`,
    });
    const { code, err } = await h.cli(ctx, ['service', 'install']);
    expect(code).toBe(1);
    expect(err).toContain(
      'systemd does not run this machine (a container, or WSL without systemd), so there is no user manager',
    );
    expect(err).toContain(
      '`blue-agent run` in a session that stays open (tmux or screen), or at boot from cron (this line in `crontab -e`',
    );
    // The crontab line works as cron runs it: `sh -c`, an environment of cron's own, `\%` for a `%`. It starts the
    // agent the unit would start, with the PATH the harnesses were found on.
    const line = /`(@reboot [^`]*)`/.exec(err)![1]!;
    const seen = path.join(h.t.root, 'cron-run.json');
    await writeFile(
      ctx.self.entry,
      `require('node:fs').writeFileSync(${JSON.stringify(seen)}, JSON.stringify({ argv: process.argv.slice(2), ` +
        `path: process.env.PATH }));\n`,
    );
    execFileSync(
      '/usr/bin/env',
      [
        '-i',
        `HOME=${h.t.home}`,
        'PATH=/usr/bin:/bin',
        '/bin/sh',
        '-c',
        line.slice('@reboot '.length).replace(/\\%/g, '%'),
      ],
      { timeout: 30_000 },
    );
    expect(JSON.parse(await readFile(seen, 'utf8'))).toEqual({ argv: ['run'], path: ctx.env.PATH });
    expect(err).toContain('[boot] systemd=true in /etc/wsl.conf');
    expect(err).not.toContain('enable-linger');
    expect(existsSync(h.unitPath())).toBe(false);
  });

  it('a unit that does not start: the link `enable` made and the unit are removed; systemd forgets it', async () => {
    await h.fail('start-fails');
    const { code, err } = await h.cli(h.context(), ['service', 'install']);
    expect(code).toBe(1);
    expect(err).toContain(
      '`systemctl --user enable --now blue-agent.service` failed (exit 1): Job for blue-agent.service failed',
    );
    expect(err).toContain(
      `hint: Nothing was left installed (ran systemctl --user disable --now blue-agent.service, removed ` +
        `${h.unitPath()}, ran systemctl --user daemon-reload).`,
    );
    expect(await h.fakes.calls()).toEqual([
      ['systemctl', '--user', 'daemon-reload'],
      ['systemctl', '--user', 'enable', '--now', 'blue-agent.service'],
      ['systemctl', '--user', 'disable', '--now', 'blue-agent.service'],
      ['systemctl', '--user', 'daemon-reload'],
    ]);
    expect(existsSync(h.unitPath())).toBe(false);
    expect(existsSync(link())).toBe(false);
  });

  it('an enable link that systemctl could not remove is removed by hand', async () => {
    // systemctl enables (the link is made), then loses its manager before it can start or undo anything.
    const enableThenLose = [
      '#!/bin/sh',
      `echo "systemctl|$*" | tr ' ' '|' >> "$FAKE_SERVICE_STATE/calls.log"`,
      'units="$XDG_CONFIG_HOME/systemd/user"',
      'case "$2" in',
      '  daemon-reload) exit 0 ;;',
      '  enable) mkdir -p "$units/default.target.wants" && ln -s "$units/blue-agent.service" ' +
        '"$units/default.target.wants/blue-agent.service"',
      '    echo "Failed to connect to bus: Connection reset by peer" >&2; exit 1 ;;',
      'esac',
      'echo "Failed to connect to bus: No medium found" >&2; exit 1',
      '',
    ].join('\n');
    await writeFile(path.join(h.fakes.bin, 'systemctl'), enableThenLose, { mode: 0o755 });
    const { code, err } = await h.cli(h.context(), ['service', 'install']);
    expect(code).toBe(1);
    expect(err).toContain(`removed ${link()}`);
    expect(existsSync(link())).toBe(false);
    expect(existsSync(h.unitPath())).toBe(false);
  });

  it('a changed unit that does not start: the previous unit is put back, still enabled', async () => {
    expect((await h.cli(h.context(), ['service', 'install'])).code).toBe(0);
    const previous = await readFile(h.unitPath(), 'utf8');
    await h.fakes.reset();
    await h.fail('start-fails');
    const { code, err } = await h.cli(h.context('linux', { CODEX_HOME: '/srv/codex' }), ['service', 'install']);
    expect(code).toBe(1);
    expect(err).toContain('`systemctl --user restart blue-agent.service` failed (exit 1)');
    expect(err).toContain(
      `Nothing was left installed (put the previous ${h.unitPath()} back, ran systemctl --user daemon-reload).`,
    );
    expect(await readFile(h.unitPath(), 'utf8')).toBe(previous);
    // It was enabled before this install: it stays so.
    expect(existsSync(link())).toBe(true);
    expect(await h.fakes.calls()).toEqual([
      ['systemctl', '--user', 'daemon-reload'],
      ['systemctl', '--user', 'enable', 'blue-agent.service'],
      ['systemctl', '--user', 'restart', 'blue-agent.service'],
      ['systemctl', '--user', 'daemon-reload'],
    ]);
  });
});

describe('launchd', () => {
  const target = `gui/${UID}/com.blue-agent.agent`;

  it('a bootstrap that fails: the plist and the folders it made are removed', async () => {
    await h.fail('bootstrap-fails');
    const { code, err } = await h.cli(h.context('darwin'), ['service', 'install']);
    expect(code).toBe(1);
    expect(err).toContain(
      `\`launchctl bootstrap gui/${UID} ${h.plistPath()}\` failed (exit 5): Bootstrap failed: 5: Input/output error`,
    );
    expect(err).toContain(`Nothing was left installed (removed ${h.plistPath()}).`);
    expect(existsSync(path.join(h.t.home, 'Library'))).toBe(false);
    // The log folder (the state directory) made for launchd went too.
    expect(existsSync(path.join(h.t.home, '.local'))).toBe(false);
  });

  it('a changed plist that does not load: the previous one is put back and loaded again', async () => {
    expect((await h.cli(h.context('darwin'), ['service', 'install'])).code).toBe(0);
    const previous = await readFile(h.plistPath(), 'utf8');
    await h.fakes.reset();
    await h.fail('bootstrap-fails');
    const { code, err } = await h.cli(h.context('darwin', { CODEX_HOME: '/srv/codex' }), ['service', 'install']);
    expect(code).toBe(1);
    expect(err).toContain(`put the previous ${h.plistPath()} back`);
    expect(await readFile(h.plistPath(), 'utf8')).toBe(previous);
    expect(await h.fakes.calls()).toEqual([
      ['launchctl', 'print', target],
      ['launchctl', 'bootout', target],
      ['launchctl', 'enable', target],
      ['launchctl', 'bootstrap', `gui/${UID}`, h.plistPath()],
      // The reload of the previous plist: the stand-in still fails it, which the hint then names.
      ['launchctl', 'bootstrap', `gui/${UID}`, h.plistPath()],
      // Is there a GUI session at all? There is: the failure is the bootstrap's own.
      ['launchctl', 'print', `gui/${UID}`],
    ]);
    expect(err).toContain(`Not undone: \`launchctl bootstrap gui/${UID} ${h.plistPath()}\` failed (exit 5)`);
  });

  it('an SSH login without a GUI session: nothing left installed; the hint says where a LaunchAgent runs', async () => {
    await h.fail('no-gui');
    const { code, err } = await h.cli(h.context('darwin'), ['service', 'install']);
    expect(code).toBe(1);
    expect(err).toContain('Bootstrap failed: 125: Domain does not support specified action');
    expect(err).toContain(
      'The service cannot run here: a LaunchAgent runs in your login session at the Mac, and there is none now (an ' +
        'SSH login)',
    );
    expect(err).toContain('`blue-agent run`');
    expect(existsSync(h.plistPath())).toBe(false);
    expect(await serviceStatus(h.context('darwin'))).toMatchObject({
      installed: false,
      availability: 'no_gui_session',
    });
  });
});

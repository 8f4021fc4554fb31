import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import type { Context } from '../../src/context.js';
import { isManagedCommand } from '../../src/harness-kit/signature.js';
import { reconcile } from '../../src/reconcile/index.js';
import { serviceStatus } from '../../src/service/index.js';
import { renderLaunchdPlist } from '../../src/service/launchd.js';
import { LAUNCHD_LABEL, type ServiceSpec } from '../../src/service/spec.js';
import { renderSystemdUnit } from '../../src/service/systemd.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';
import { installFakes, type Fakes } from '../../../../test/support/service-fakes.js';

const exec = promisify(execFile);
const UID = String(process.getuid?.() ?? 0);

let t: TestHome;
let fakes: Fakes;
let entry: string;

beforeEach(async () => {
  t = await makeTestHome();
  fakes = await installFakes(t.root);
  // A space in the agent's path: every renderer and every printed command must quote it.
  entry = path.join(t.root, 'agent dir', 'bin', 'blue-agent.js');
  await mkdir(path.dirname(entry), { recursive: true });
  await writeFile(entry, '// stand-in entry\n');
});
afterEach(async () => t.cleanup());

function context(platform: NodeJS.Platform = 'linux', env: Record<string, string> = {}): Context {
  return t.context({
    platform,
    env: { PATH: `${fakes.bin}:/usr/bin:/bin`, FAKE_SERVICE_STATE: fakes.state, ...env },
    self: { node: process.execPath, entry },
  });
}

/** Runs the CLI; returns the exit code and what it printed (stdout, stderr), temp paths replaced for golden strings. */
async function cli(ctx: Context, args: string[]): Promise<{ code: number; out: string; err: string }> {
  const outBefore = t.stdout.text().length;
  const errBefore = t.stderr.text().length;
  const code = await main(args, ctx);
  return { code, out: t.stdout.text().slice(outBefore), err: t.stderr.text().slice(errBefore) };
}

function generic(text: string): string {
  return text.split(t.root).join('<ROOT>').split(process.execPath).join('<NODE>').split(`gui/${UID}`).join('gui/<UID>');
}

const unitPath = () => path.join(t.home, '.config', 'systemd', 'user', 'blue-agent.service');
const plistPath = () => path.join(t.home, 'Library', 'LaunchAgents', `${LAUNCHD_LABEL}.plist`);

const SYSTEMD_UNIT = `# Managed by blue-agent: written by \`blue-agent service install\`; edits are overwritten.
# Remove it with \`blue-agent service uninstall\`.
[Unit]
Description=blue-agent: keeps coding-agent harnesses wired to the session-capture policy

[Service]
Type=simple
ExecStart="<NODE>" "--max-opt=0" "--max-semi-space-size=1" "<ROOT>/agent dir/bin/blue-agent.js" "run"
Environment="BLUE_AGENT_HOME=<ROOT>/home/.local/state/blue-agent"
Environment="BLUE_AGENT_CONFIG=<ROOT>/home/.config/blue-agent/config.yaml"
Environment="XDG_CONFIG_HOME=<ROOT>/home/.config"
Environment="XDG_DATA_HOME=<ROOT>/home/.local/share"
Environment="XDG_STATE_HOME=<ROOT>/home/.local/state"
Environment="PATH=<ROOT>/fakebin:/usr/bin:/bin"
Environment=BLUE_AGENT_LOG=json
Restart=on-failure
RestartSec=10
RestartPreventExitStatus=3
TimeoutStopSec=30
KillMode=mixed
UMask=0077
NoNewPrivileges=yes
LockPersonality=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes

[Install]
WantedBy=default.target
`;

describe('rendering', () => {
  const spec = (over: Partial<ServiceSpec> = {}): ServiceSpec => ({
    node: process.execPath,
    entry: '/opt/blue-agent/bin/blue-agent.js',
    env: [],
    stdoutPath: '/state/service.out.log',
    stderrPath: '/state/service.err.log',
    ...over,
  });

  /**
   * `systemd-analyze --user verify` loads the unit the way a user manager would: unknown sections and keys, bad values,
   * unresolvable specifiers, and an ExecStart binary that does not exist or is not executable are all reported. It
   * needs a runtime directory for its private manager, so it gets a fresh one.
   */
  async function verify(unitText: string): Promise<{ code: number; stderr: string; file: string }> {
    const dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-unit-'));
    try {
      const runtime = path.join(dir, 'runtime');
      await mkdir(runtime, { mode: 0o700 });
      const file = path.join(dir, 'blue-agent.service');
      await writeFile(file, unitText);
      try {
        const { stderr } = await exec('/usr/bin/systemd-analyze', ['--user', 'verify', file], {
          env: { ...process.env, XDG_RUNTIME_DIR: runtime, SYSTEMD_LOG_COLOR: '0' },
        });
        return { code: 0, stderr, file };
      } catch (error) {
        const e = error as { code?: number; stderr?: string };
        return { code: e.code ?? -1, stderr: e.stderr ?? '', file };
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  it('the systemd unit passes systemd-analyze --user verify without a single warning', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'blue agent 100%$x-'));
    try {
      const awkwardEntry = path.join(dir, 'blue-agent "quoted" \\ $HOME %h.js');
      await writeFile(awkwardEntry, '');
      const unit = renderSystemdUnit(
        spec({
          entry: awkwardEntry,
          env: [
            ['BLUE_AGENT_HOME', '/tmp/a "b" $x %h \\ c'],
            ['PATH', '/usr/bin:/bin'],
          ],
        }),
      );
      const result = await verify(unit);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      // Quoting round-trips: %% and $$ and the C escapes give back the exact path.
      expect(unit).toContain(
        `"${awkwardEntry.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/%/g, '%%').replace(/\$/g, '$$$$')}"`,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('systemd-analyze verify does check the unit: a missing Node.js binary fails it', async () => {
    const result = await verify(renderSystemdUnit(spec({ node: '/nonexistent/bin/node' })));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/\/nonexistent\/bin\/node is not executable/);
    // And a warning, which would not fail it, is on stderr: the test above asserts there is none.
    const unknownKey = await verify(renderSystemdUnit(spec()).replace('[Install]', 'Bogus=1\n\n[Install]'));
    expect(unknownKey.stderr).toMatch(/Unknown key 'Bogus'/);
  });

  it('a path with a line break is refused rather than written into the unit', () => {
    expect(() => renderSystemdUnit(spec({ entry: '/opt/a\nExecStartPre=/bin/evil' }))).toThrow(
      expect.objectContaining({ code: 'SERVICE_FAILED' }),
    );
  });

  it('the LaunchAgent parses as a property list with the expected keys', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-plist-'));
    try {
      const file = path.join(dir, 'agent.plist');
      const text = renderLaunchdPlist(
        spec({
          entry: '/Users/me/A & <B>/blue-agent.js',
          env: [
            ['BLUE_AGENT_HOME', '/Users/me/Library/Application Support/blue-agent'],
            ['PATH', '/usr/bin:/bin'],
          ],
        }),
      );
      await writeFile(file, text);
      const { stdout } = await exec('python3', [
        '-c',
        'import json,plistlib,sys; print(json.dumps(plistlib.load(open(sys.argv[1],"rb"))))',
        file,
      ]);
      expect(JSON.parse(stdout)).toEqual({
        Label: 'com.blue-agent.agent',
        ProgramArguments: [
          process.execPath,
          '--max-opt=0',
          '--max-semi-space-size=1',
          '/Users/me/A & <B>/blue-agent.js',
          'run',
        ],
        EnvironmentVariables: {
          BLUE_AGENT_HOME: '/Users/me/Library/Application Support/blue-agent',
          PATH: '/usr/bin:/bin',
          BLUE_AGENT_LOG: 'file',
        },
        RunAtLoad: true,
        KeepAlive: { SuccessfulExit: false },
        ThrottleInterval: 10,
        Umask: 0o077,
        StandardOutPath: '/state/service.out.log',
        StandardErrorPath: '/state/service.err.log',
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('never passes a token to the service', () => {
    const ctx = context('linux', {
      BLUE_AGENT_TOKEN: 'secret-token-value',
      AWS_SECRET_ACCESS_KEY: 'aws-secret',
      CODEX_HOME: '/x/codex',
    });
    // Rendered through the public path: install --dry-run.
    return cli(ctx, ['service', 'install', '--dry-run']).then(({ out }) => {
      expect(out).not.toContain('secret');
      expect(out).toContain('Environment="CODEX_HOME=/x/codex"');
    });
  });
});

describe('--dry-run', () => {
  it('systemd: prints the unit and the commands exactly, and changes nothing', async () => {
    const { code, out } = await cli(context(), ['service', 'install', '--dry-run']);
    expect(code).toBe(0);
    expect(generic(out)).toBe(
      `Would create <ROOT>/home/.config/systemd/user/blue-agent.service:\n${SYSTEMD_UNIT}` +
        'Would run: systemctl --user daemon-reload\n' +
        'Would run: systemctl --user enable --now blue-agent.service\n' +
        'Nothing was changed (--dry-run).\n',
    );
    expect(await fakes.calls()).toEqual([]);
    await expect(stat(unitPath())).rejects.toThrow(/ENOENT/);
  });

  it('launchd: prints the plist and the commands exactly, and changes nothing', async () => {
    const { code, out } = await cli(context('darwin'), ['service', 'install', '--dry-run']);
    expect(code).toBe(0);
    expect(generic(out)).toBe(`Would create directory <ROOT>/home/.local/state/blue-agent
Would create <ROOT>/home/Library/LaunchAgents/com.blue-agent.agent.plist:
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- Managed by blue-agent: written by \`blue-agent service install\`; edits are overwritten. -->
<!-- Remove it with \`blue-agent service uninstall\`. -->
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>com.blue-agent.agent</string>
	<key>ProgramArguments</key>
	<array>
		<string><NODE></string>
		<string>--max-opt=0</string>
		<string>--max-semi-space-size=1</string>
		<string><ROOT>/agent dir/bin/blue-agent.js</string>
		<string>run</string>
	</array>
	<key>EnvironmentVariables</key>
	<dict>
		<key>BLUE_AGENT_HOME</key>
		<string><ROOT>/home/.local/state/blue-agent</string>
		<key>BLUE_AGENT_CONFIG</key>
		<string><ROOT>/home/.config/blue-agent/config.yaml</string>
		<key>XDG_CONFIG_HOME</key>
		<string><ROOT>/home/.config</string>
		<key>XDG_DATA_HOME</key>
		<string><ROOT>/home/.local/share</string>
		<key>XDG_STATE_HOME</key>
		<string><ROOT>/home/.local/state</string>
		<key>PATH</key>
		<string><ROOT>/fakebin:/usr/bin:/bin</string>
		<key>BLUE_AGENT_LOG</key>
		<string>file</string>
	</dict>
	<key>RunAtLoad</key>
	<true/>
	<key>KeepAlive</key>
	<dict>
		<key>SuccessfulExit</key>
		<false/>
	</dict>
	<key>ThrottleInterval</key>
	<integer>10</integer>
	<key>Umask</key>
	<integer>63</integer>
	<key>StandardOutPath</key>
	<string><ROOT>/home/.local/state/blue-agent/service.out.log</string>
	<key>StandardErrorPath</key>
	<string><ROOT>/home/.local/state/blue-agent/service.err.log</string>
</dict>
</plist>
Would run: launchctl enable gui/<UID>/com.blue-agent.agent
Would run: launchctl bootstrap gui/<UID> <ROOT>/home/Library/LaunchAgents/com.blue-agent.agent.plist
Nothing was changed (--dry-run).
`);
    // Only the read-only question "is it loaded?" was asked.
    expect(await fakes.calls()).toEqual([['launchctl', 'print', `gui/${UID}/${LAUNCHD_LABEL}`]]);
    await expect(stat(plistPath())).rejects.toThrow(/ENOENT/);
    await expect(stat(path.join(t.home, '.local', 'state', 'blue-agent'))).rejects.toThrow(/ENOENT/);
  });

  it('uninstall --dry-run lists the steps and changes nothing', async () => {
    const ctx = context();
    expect((await cli(ctx, ['service', 'install'])).code).toBe(0);
    await fakes.reset();
    const before = await readFile(unitPath(), 'utf8');
    const { code, out } = await cli(ctx, ['service', 'uninstall', '--dry-run']);
    expect(code).toBe(0);
    expect(generic(out)).toBe(
      'Would run: systemctl --user disable --now blue-agent.service\n' +
        'Would remove <ROOT>/home/.config/systemd/user/blue-agent.service\n' +
        'Would run: systemctl --user daemon-reload\n' +
        'Nothing was changed (--dry-run).\n',
    );
    expect(await fakes.calls()).toEqual([]);
    expect(await readFile(unitPath(), 'utf8')).toBe(before);
  });
});

describe('systemd', () => {
  it('install writes the unit atomically, reloads and enables it; a second install is unchanged', async () => {
    const ctx = context();
    const first = await cli(ctx, ['service', 'install']);
    expect(first.code).toBe(0);
    expect(generic(first.out)).toBe(
      'Created <ROOT>/home/.config/systemd/user/blue-agent.service\n' +
        'Ran: systemctl --user daemon-reload\n' +
        'Ran: systemctl --user enable --now blue-agent.service\n' +
        'The systemd user unit blue-agent.service is installed and started.\n',
    );
    expect(generic(await readFile(unitPath(), 'utf8'))).toBe(SYSTEMD_UNIT);
    expect(await fakes.calls()).toEqual([
      ['systemctl', '--user', 'daemon-reload'],
      ['systemctl', '--user', 'enable', '--now', 'blue-agent.service'],
    ]);
    const written = await stat(unitPath());
    expect(written.mode & 0o777).toBe(0o644);

    await fakes.reset();
    const second = await cli(ctx, ['service', 'install', '--json']);
    expect(second.code).toBe(0);
    const json = JSON.parse(second.out) as Record<string, unknown>;
    expect(json).toMatchObject({
      ok: true,
      action: 'install',
      dry_run: false,
      manager: 'systemd',
      unit_file: unitPath(),
      file: 'unchanged',
    });
    expect(json.commands).toEqual([
      ['systemctl', '--user', 'daemon-reload'],
      ['systemctl', '--user', 'enable', '--now', 'blue-agent.service'],
    ]);
    expect((await stat(unitPath())).mtimeMs).toBe(written.mtimeMs);
  });

  it('a changed unit (another Node.js, another variable) is updated and the running service restarted', async () => {
    expect((await cli(context(), ['service', 'install'])).code).toBe(0);
    await fakes.reset();
    const { code, out } = await cli(context('linux', { CODEX_HOME: '/srv/codex' }), ['service', 'install']);
    expect(code).toBe(0);
    expect(generic(out)).toContain('Updated <ROOT>/home/.config/systemd/user/blue-agent.service\n');
    expect(await readFile(unitPath(), 'utf8')).toContain('Environment="CODEX_HOME=/srv/codex"\n');
    expect(await fakes.calls()).toEqual([
      ['systemctl', '--user', 'daemon-reload'],
      ['systemctl', '--user', 'enable', 'blue-agent.service'],
      ['systemctl', '--user', 'restart', 'blue-agent.service'],
    ]);
  });

  it('honours XDG_CONFIG_HOME for the unit path', async () => {
    const config = path.join(t.root, 'elsewhere');
    const ctx = context('linux', { XDG_CONFIG_HOME: config });
    expect((await cli(ctx, ['service', 'install'])).code).toBe(0);
    expect(await readFile(path.join(config, 'systemd', 'user', 'blue-agent.service'), 'utf8')).toContain(
      `Environment="XDG_CONFIG_HOME=${config}"`,
    );
  });

  it('a unit path below a regular file is a typed error naming the unit, and nothing is run', async () => {
    const plain = path.join(t.root, 'plain');
    await writeFile(plain, 'x');
    const unit = path.join(plain, 'systemd', 'user', 'blue-agent.service');
    const json = await cli(context('linux', { XDG_CONFIG_HOME: plain }), ['service', 'install', '--json']);
    expect(json.code).toBe(1);
    const error = (JSON.parse(json.out) as { error: { code: string; message: string } }).error;
    expect(error).toMatchObject({
      code: 'NOT_A_DIRECTORY',
      file: unit,
      message: `${unit}: a part of the path is not a directory (ENOTDIR: lstat)`,
    });
    expect(await fakes.calls()).toEqual([]);
  });

  // Linux's sysfs refuses new folders to every user, root included.
  it.skipIf(process.platform !== 'linux' || !existsSync('/sys/kernel'))(
    'a unit that may not be written is named, with the permission to check',
    async () => {
      const unit = '/sys/blue-agent-test/systemd/user/blue-agent.service';
      const json = await cli(context('linux', { XDG_CONFIG_HOME: '/sys/blue-agent-test' }), [
        'service',
        'install',
        '--json',
      ]);
      expect(json.code).toBe(1);
      const error = (JSON.parse(json.out) as { error: { code: string; message: string; hint: string } }).error;
      expect(error).toMatchObject({ code: 'PERMISSION_DENIED', file: unit });
      expect(error.message).toMatch(new RegExp(`^cannot write the service unit ${unit}: `));
      expect(error.hint).toMatch(new RegExp(`ls -ld /sys(/\\S*)? ${unit}`));
      expect(await fakes.calls()).toEqual([]);
    },
  );

  it('refuses to overwrite or remove a unit file blue-agent did not write', async () => {
    const foreign = '[Unit]\nDescription=my own agent\n\n[Service]\nExecStart=/usr/local/bin/my-agent\n';
    await mkdir(path.dirname(unitPath()), { recursive: true });
    await writeFile(unitPath(), foreign);
    for (const action of ['install', 'uninstall']) {
      const { code, err } = await cli(context(), ['service', action]);
      expect(code).toBe(1);
      expect(err).toContain('error [SERVICE_CONFLICT]');
      expect(err).toContain(`${unitPath()} exists but was not written by blue-agent`);
      expect(err).toContain('hint: ');
    }
    const json = await cli(context(), ['service', 'install', '--json']);
    expect(JSON.parse(json.out)).toMatchObject({ ok: false, error: { code: 'SERVICE_CONFLICT', file: unitPath() } });
    expect(await readFile(unitPath(), 'utf8')).toBe(foreign);
    expect(await fakes.calls()).toEqual([]);
    const state = await serviceStatus(context());
    expect(state).toMatchObject({ installed: true, ours: false, current: false });
  });

  it('a missing systemctl is a clear error; the unit written first is removed again', async () => {
    const ctx = context('linux', { PATH: '/nonexistent' });
    const { code, err } = await cli(ctx, ['service', 'install']);
    expect(code).toBe(1);
    expect(err).toContain('error [SERVICE_FAILED]: systemctl could not be run (ENOENT)');
    expect(err).toContain(
      `hint: Nothing was left installed (removed ${unitPath()}). The service cannot run here: there is no ` +
        `systemctl on PATH. What works: run the agent yourself: \`blue-agent run\``,
    );
    await expect(stat(unitPath())).rejects.toThrow(/ENOENT/);
  });

  it('status reports the file, whether it is ours and current, and the enabled/active state', async () => {
    expect(await serviceStatus(context())).toEqual({
      manager: 'systemd',
      unitFile: unitPath(),
      installed: false,
      ours: false,
      current: false,
      enabled: false,
      active: false,
      availability: 'available',
      detail: 'not installed (`blue-agent service install`); not-found, inactive',
    });
    expect((await cli(context(), ['service', 'install'])).code).toBe(0);
    expect(await serviceStatus(context())).toEqual({
      manager: 'systemd',
      unitFile: unitPath(),
      installed: true,
      ours: true,
      current: true,
      enabled: true,
      active: true,
      availability: 'available',
      detail: 'installed and current; enabled, active',
    });
    // Rendered now with another environment: the installed unit is no longer current.
    expect(await serviceStatus(context('linux', { KIMI_SHARE_DIR: '/srv/kimi' }))).toMatchObject({
      ours: true,
      current: false,
    });

    const human = await cli(context(), ['service', 'status']);
    expect(generic(human.out)).toBe(
      'manager:   systemd\n' +
        'unit file: <ROOT>/home/.config/systemd/user/blue-agent.service\n' +
        'installed: yes (current)\n' +
        'enabled:   yes\n' +
        'active:    yes\n' +
        'detail:    installed and current; enabled, active\n',
    );
    const json = await cli(context(), ['service', 'status', '--json']);
    expect(Object.keys(JSON.parse(json.out))[0]).toBe('ok');
    expect(JSON.parse(json.out)).toEqual({
      ok: true,
      manager: 'systemd',
      unit_file: unitPath(),
      installed: true,
      ours: true,
      current: true,
      enabled: true,
      active: true,
      availability: 'available',
      detail: 'installed and current; enabled, active',
    });
  });

  it('uninstall stops and disables the service, removes the unit and reloads', async () => {
    expect((await cli(context(), ['service', 'install'])).code).toBe(0);
    await fakes.reset();
    const { code, out } = await cli(context(), ['service', 'uninstall']);
    expect(code).toBe(0);
    expect(generic(out)).toBe(
      'Ran: systemctl --user disable --now blue-agent.service\n' +
        'Removed <ROOT>/home/.config/systemd/user/blue-agent.service\n' +
        'Ran: systemctl --user daemon-reload\n' +
        'The systemd user unit blue-agent.service is stopped and removed.\n',
    );
    expect(await fakes.calls()).toEqual([
      ['systemctl', '--user', 'disable', '--now', 'blue-agent.service'],
      ['systemctl', '--user', 'daemon-reload'],
    ]);
    await expect(stat(unitPath())).rejects.toThrow(/ENOENT/);
    expect(await serviceStatus(context())).toMatchObject({ installed: false, enabled: false, active: false });

    await fakes.reset();
    const again = await cli(context(), ['service', 'uninstall']);
    expect(again).toMatchObject({
      code: 0,
      out: 'The systemd user unit blue-agent.service is not installed; nothing to do.\n',
    });
    expect(await fakes.calls()).toEqual([]);
  });
});

describe('launchd', () => {
  it('install bootstraps the LaunchAgent; again is unchanged and only kickstarts; uninstall boots it out', async () => {
    const ctx = context('darwin');
    const first = await cli(ctx, ['service', 'install']);
    expect(first.code).toBe(0);
    expect(generic(first.out)).toBe(
      'Created directory <ROOT>/home/.local/state/blue-agent\n' +
        'Created <ROOT>/home/Library/LaunchAgents/com.blue-agent.agent.plist\n' +
        'Ran: launchctl enable gui/<UID>/com.blue-agent.agent\n' +
        'Ran: launchctl bootstrap gui/<UID> <ROOT>/home/Library/LaunchAgents/com.blue-agent.agent.plist\n' +
        'The LaunchAgent com.blue-agent.agent is installed and started.\n',
    );
    const target = `gui/${UID}/${LAUNCHD_LABEL}`;
    expect(await fakes.calls()).toEqual([
      ['launchctl', 'print', target],
      ['launchctl', 'enable', target],
      ['launchctl', 'bootstrap', `gui/${UID}`, plistPath()],
    ]);
    const written = await stat(plistPath());
    expect((await stat(path.join(t.home, '.local', 'state', 'blue-agent'))).mode & 0o777).toBe(0o700);

    await fakes.reset();
    const second = await cli(ctx, ['service', 'install']);
    expect(second.code).toBe(0);
    expect(generic(second.out)).toContain('<ROOT>/home/Library/LaunchAgents/com.blue-agent.agent.plist is unchanged\n');
    expect(await fakes.calls()).toEqual([
      ['launchctl', 'print', target],
      ['launchctl', 'enable', target],
      ['launchctl', 'kickstart', target],
    ]);
    expect((await stat(plistPath())).mtimeMs).toBe(written.mtimeMs);

    expect(await serviceStatus(ctx)).toEqual({
      manager: 'launchd',
      unitFile: plistPath(),
      installed: true,
      ours: true,
      current: true,
      enabled: true,
      active: true,
      availability: 'available',
      detail: 'installed and current; loaded, running',
    });

    // A changed plist: the loaded agent is booted out and bootstrapped again from the new file.
    await fakes.reset();
    expect((await cli(context('darwin', { CODEX_HOME: '/srv/codex' }), ['service', 'install'])).code).toBe(0);
    expect(await fakes.calls()).toEqual([
      ['launchctl', 'print', target],
      ['launchctl', 'bootout', target],
      ['launchctl', 'enable', target],
      ['launchctl', 'bootstrap', `gui/${UID}`, plistPath()],
    ]);

    await fakes.reset();
    const removed = await cli(ctx, ['service', 'uninstall']);
    expect(removed.code).toBe(0);
    expect(generic(removed.out)).toBe(
      'Ran: launchctl bootout gui/<UID>/com.blue-agent.agent\n' +
        'Removed <ROOT>/home/Library/LaunchAgents/com.blue-agent.agent.plist\n' +
        'The LaunchAgent com.blue-agent.agent is stopped and removed.\n',
    );
    expect(await fakes.calls()).toEqual([
      ['launchctl', 'print', target],
      ['launchctl', 'bootout', target],
    ]);
    await expect(stat(plistPath())).rejects.toThrow(/ENOENT/);
    expect(await serviceStatus(ctx)).toMatchObject({
      installed: false,
      enabled: false,
      active: false,
      detail: 'not installed (`blue-agent service install`); not loaded',
    });
  });

  it('refuses a plist at its path that blue-agent did not write', async () => {
    await mkdir(path.dirname(plistPath()), { recursive: true });
    const foreign =
      '<?xml version="1.0"?>\n<plist ' +
      'version="1.0"><dict><key>Label</key><string>com.blue-agent.agent</string></dict></plist>\n';
    await writeFile(plistPath(), foreign);
    const { code, err } = await cli(context('darwin'), ['service', 'install']);
    expect(code).toBe(1);
    expect(err).toContain('error [SERVICE_CONFLICT]');
    expect(await readFile(plistPath(), 'utf8')).toBe(foreign);
  });
});

describe('other platforms', () => {
  it('status says there is no service manager; install is refused', async () => {
    expect(await serviceStatus(context('win32'))).toMatchObject({
      manager: 'none',
      unitFile: undefined,
      installed: false,
      enabled: undefined,
      active: undefined,
    });
    const { code, err } = await cli(context('win32'), ['service', 'install']);
    expect(code).toBe(1);
    expect(err).toContain('error [SERVICE_UNSUPPORTED]');
  });
});

describe('uninstall --remove-hooks', () => {
  const ENABLED = 'revision: 5\nsession_upload: { presign_url: "https://control.example/session-uploads/presign" }\n';
  const USER_SETTINGS =
    '{\n  "model": "opus",\n  "hooks": {\n    "SessionEnd": [\n      { "matcher": "", "hooks": [ { "type": ' +
    '"command", "command": "echo mine" } ] }\n    ]\n  }\n}\n';

  it("stops the service first, then removes the managed hooks and keeps the user's", async () => {
    const harnessBin = path.join(t.root, 'harness-bin');
    await mkdir(harnessBin);
    await writeFile(path.join(harnessBin, 'claude'), "#!/bin/sh\necho '2.1.332 (Claude Code)'\n");
    await chmod(path.join(harnessBin, 'claude'), 0o755);
    const policy = path.join(t.root, 'policy.yaml');
    await writeFile(policy, ENABLED);
    const settings = path.join(t.home, '.claude', 'settings.json');
    await mkdir(path.dirname(settings), { recursive: true });
    await writeFile(settings, USER_SETTINGS);

    const ctx = context('linux', { PATH: `${harnessBin}:${fakes.bin}:/usr/bin:/bin` });
    const applied = await reconcile(ctx, { dryRun: false, policyFile: policy });
    expect(applied.harnesses.find((h) => h.harness === 'claude')).toMatchObject({ state: 'active', action: 'create' });
    const withHook = await readFile(settings, 'utf8');
    expect(commands(withHook).filter((c) => isManagedCommand(c, 'claude'))).toHaveLength(1);

    expect((await cli(ctx, ['service', 'install'])).code).toBe(0);
    await fakes.reset();

    // The dry run shows the removal and writes nothing.
    const dry = await cli(ctx, ['service', 'uninstall', '--remove-hooks', '--dry-run']);
    expect(dry.code).toBe(0);
    expect(generic(dry.out)).toBe(
      'Would run: systemctl --user disable --now blue-agent.service\n' +
        'Would remove the managed hooks:\n' +
        '  claude: update <ROOT>/home/.claude/settings.json\n' +
        'Would remove <ROOT>/home/.config/systemd/user/blue-agent.service\n' +
        'Would run: systemctl --user daemon-reload\n' +
        'Nothing was changed (--dry-run).\n',
    );
    expect(await readFile(settings, 'utf8')).toBe(withHook);

    const { code, out } = await cli(ctx, ['service', 'uninstall', '--remove-hooks', '--json']);
    expect(code).toBe(0);
    const json = JSON.parse(out) as {
      ok: boolean;
      commands: string[][];
      hooks: { harness: string; action: string; files: { path: string; action: string }[] }[];
    };
    expect(json.ok).toBe(true);
    expect(json.commands).toEqual([
      ['systemctl', '--user', 'disable', '--now', 'blue-agent.service'],
      ['systemctl', '--user', 'daemon-reload'],
    ]);
    expect(json.hooks.find((h) => h.harness === 'claude')).toMatchObject({
      action: 'remove',
      files: [{ path: settings, action: 'update' }],
    });
    // Installing and removing the hook gives back the original bytes: the user's hook and everything else stay.
    expect(await readFile(settings, 'utf8')).toBe(USER_SETTINGS);
    await expect(stat(unitPath())).rejects.toThrow(/ENOENT/);
  });
});

function commands(settingsText: string): string[] {
  const parsed = JSON.parse(settingsText) as { hooks?: { SessionEnd?: { hooks: { command: string }[] }[] } };
  return (parsed.hooks?.SessionEnd ?? []).flatMap((group) => group.hooks.map((h) => h.command));
}

describe('an agent config that does not validate', () => {
  async function brokenConfig(text = 'control_url: [unclosed\n'): Promise<string> {
    const file = t.env.BLUE_AGENT_CONFIG!;
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, text);
    return file;
  }

  it('install --dry-run warns on stderr and in --json notes, with the parse location; nothing changes', async () => {
    const file = await brokenConfig();
    const dry = await cli(context(), ['service', 'install', '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.err).toMatch(
      new RegExp(
        '^warning: the agent config does not validate, so the service would fail at start: ' +
          `${escapeRe(file)}:\\d+:\\d+: `,
        'm',
      ),
    );
    // The unit and the commands are still shown.
    expect(dry.out).toContain('Would run: systemctl --user enable --now blue-agent.service');
    const json = await cli(context(), ['service', 'install', '--dry-run', '--json']);
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.out) as { notes: string[]; dry_run: boolean };
    expect(parsed.dry_run).toBe(true);
    expect(parsed.notes).toEqual([
      expect.stringMatching(
        new RegExp(
          `^the agent config does not validate, so the service would fail at start: ${escapeRe(file)}:\\d+:\\d+: `,
        ),
      ),
    ]);
    expect(await fakes.calls()).toEqual([]);
    await expect(stat(unitPath())).rejects.toThrow(/ENOENT/);
  });

  it('a real install is refused with CONFIG_INVALID and a hint; nothing is written or run', async () => {
    const file = await brokenConfig();
    const { code, err } = await cli(context(), ['service', 'install']);
    expect(code).toBe(1);
    expect(err).toMatch(
      new RegExp(
        `error \\[CONFIG_INVALID\\]: ${escapeRe(file)}:\\d+:\\d+: .*: the service would fail at start, so it is ` +
          `not installed`,
      ),
    );
    // The hint is the YAML error's own (which line to fix, and how), then what to run once it is fixed.
    expect(err).toMatch(/\n {2}hint: .+\. Then run `blue-agent service install` again\.\n/);
    const json = await cli(context(), ['service', 'install', '--json']);
    expect(JSON.parse(json.out)).toMatchObject({ ok: false, error: { code: 'CONFIG_INVALID', file } });
    expect(await fakes.calls()).toEqual([]);
    await expect(stat(unitPath())).rejects.toThrow(/ENOENT/);
  });

  it('a config that parses but would stop the agent (a bad drain_schedule) is refused too', async () => {
    await brokenConfig('drain_schedule: "99 * * * *"\n');
    const { code, err } = await cli(context(), ['service', 'install']);
    expect(code).toBe(1);
    expect(err).toContain('error [CONFIG_INVALID]');
    expect(err).toContain(
      'drain_schedule "99 * * * *" is not a valid cron expression: the service would fail at start',
    );
    await expect(stat(unitPath())).rejects.toThrow(/ENOENT/);
  });

  it('a valid config (or none) gives no warning, and uninstall never reads the config', async () => {
    const clean = await cli(context(), ['service', 'install', '--dry-run']);
    expect(clean.err).toBe('');
    expect((await cli(context(), ['service', 'install'])).code).toBe(0);
    await brokenConfig();
    const removal = await cli(context(), ['service', 'uninstall']);
    expect(removal.code).toBe(0);
    expect(removal.err).toBe('');
    await expect(stat(unitPath())).rejects.toThrow(/ENOENT/);
  });
});

function escapeRe(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

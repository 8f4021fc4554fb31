/**
 * Stand-ins for systemctl and launchctl: shell scripts that append their argv to a log and answer like the real tools,
 * keeping the service's state (enabled, active, loaded) in files next to the log. `enable` makes the unit's
 * default.target.wants link as systemctl does, `disable` removes it. Files in the state folder make them fail the way
 * the real tools do:
 *   - `no-bus`: every `systemctl --user` command, as in a session without a user manager;
 *   - `system-state`: what `systemctl is-system-running` prints (`running` when absent; `offline` without systemd);
 *   - `start-fails`: `enable --now`, `start` and `restart` enable the unit but fail to start it;
 *   - `no-gui`: there is no GUI domain for the user (an SSH login): `print gui/<uid>` and `bootstrap` fail;
 *   - `bootstrap-fails`, `bootout-fails`: those launchctl commands fail.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { main } from '../../packages/agent/src/cli/main.js';
import type { Context } from '../../packages/agent/src/context.js';
import { LAUNCHD_LABEL } from '../../packages/agent/src/service/label.js';
import { reconcile } from '../../packages/agent/src/reconcile/index.js';
import { makeTestHome, versionStubs, type TestHome } from './context.js';

const SYSTEMCTL = `#!/bin/sh
state="$FAKE_SERVICE_STATE"
{ printf 'systemctl'; for a in "$@"; do printf '|%s' "$a"; done; echo; } >> "$state/calls.log"
if [ "$1" = "is-system-running" ]; then
  s=running; [ -f "$state/system-state" ] && s=$(cat "$state/system-state")
  echo "$s"; [ "$s" = running ]; exit $?
fi
[ "$1" = "--user" ] || { echo "fake systemctl: expected --user" >&2; exit 2; }
shift
if [ -f "$state/no-bus" ]; then echo "Failed to connect to bus: No medium found" >&2; exit 1; fi
units="$XDG_CONFIG_HOME/systemd/user"
link="$units/default.target.wants/blue-agent.service"
failed_start() {
  echo "Job for blue-agent.service failed because the control process exited with error code." >&2; exit 1
}
case "$1" in
  daemon-reload) exit 0 ;;
  enable)
    touch "$state/enabled"
    mkdir -p "$units/default.target.wants" && ln -sf "$units/blue-agent.service" "$link"
    if [ "$2" = "--now" ]; then [ -f "$state/start-fails" ] && failed_start; touch "$state/active"; fi
    exit 0 ;;
  disable)
    rm -f "$state/enabled" "$link"
    [ "$2" = "--now" ] && rm -f "$state/active"
    exit 0 ;;
  restart|start) [ -f "$state/start-fails" ] && failed_start; touch "$state/active"; exit 0 ;;
  is-enabled)
    if [ -f "$state/enabled" ]; then echo enabled; exit 0; fi
    if [ ! -f "$XDG_CONFIG_HOME/systemd/user/$2" ]; then
      echo "Failed to get unit file state for $2: No such file or directory" >&2; exit 1
    fi
    echo disabled; exit 1 ;;
  is-active)
    if [ -f "$state/active" ]; then echo active; exit 0; fi
    echo inactive; exit 3 ;;
esac
echo "fake systemctl: unknown command $1" >&2
exit 1
`;

const LAUNCHCTL = `#!/bin/sh
state="$FAKE_SERVICE_STATE"
{ printf 'launchctl'; for a in "$@"; do printf '|%s' "$a"; done; echo; } >> "$state/calls.log"
label=com.blue-agent.agent
case "$1" in
  print)
    case "$2" in
      */*/*) ;;
      *)
        if [ -f "$state/no-gui" ]; then
          echo "Bad request." >&2; echo "Could not find domain for user gui: $(id -u)" >&2; exit 113
        fi
        printf '%s = {\\n\\ttype = gui\\n}\\n' "$2"; exit 0 ;;
    esac
    if [ -f "$state/loaded" ]; then
      printf '%s = {\\n\\tactive count = 1\\n\\tpath = %s\\n\\tstate = running\\n}\\n' "$2" "$(cat "$state/loaded")"
      exit 0
    fi
    echo "Could not find service \\"$label\\" in domain for user gui: $(id -u)" >&2
    exit 113 ;;
  bootstrap)
    if [ -f "$state/no-gui" ]; then
      echo "Bootstrap failed: 125: Domain does not support specified action" >&2; exit 125
    fi
    if [ -f "$state/bootstrap-fails" ]; then echo "Bootstrap failed: 5: Input/output error" >&2; exit 5; fi
    if [ -f "$state/loaded" ]; then echo "Bootstrap failed: 5: Input/output error" >&2; exit 5; fi
    [ -f "$3" ] || { echo "Bootstrap failed: 2: No such file or directory" >&2; exit 2; }
    printf '%s' "$3" > "$state/loaded"; exit 0 ;;
  bootout)
    if [ -f "$state/bootout-fails" ]; then echo "Boot-out failed: 1: Operation not permitted" >&2; exit 1; fi
    if [ -f "$state/loaded" ]; then rm -f "$state/loaded"; exit 0; fi
    echo "Boot-out failed: 3: No such process" >&2; exit 3 ;;
  enable|kickstart) exit 0 ;;
esac
echo "fake launchctl: unknown command $1" >&2
exit 1
`;

export interface Fakes {
  bin: string;
  state: string;
  /** Every call so far, one argv per call. */
  calls(): Promise<string[][]>;
  /** Forget the calls so far. */
  reset(): Promise<void>;
}

export async function installFakes(root: string): Promise<Fakes> {
  const bin = path.join(root, 'fakebin');
  const state = path.join(root, 'fakestate');
  await mkdir(bin, { recursive: true });
  await mkdir(state, { recursive: true });
  await writeFile(path.join(bin, 'systemctl'), SYSTEMCTL, { mode: 0o755 });
  await writeFile(path.join(bin, 'launchctl'), LAUNCHCTL, { mode: 0o755 });
  const log = path.join(state, 'calls.log');
  return {
    bin,
    state,
    calls: async () =>
      (await readFile(log, 'utf8').catch(() => ''))
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => line.split('|')),
    reset: () => writeFile(log, ''),
  };
}

/** A temporary HOME with the stand-ins first on PATH, and the CLI run in-process against it. */
export interface ServiceHome {
  t: TestHome;
  fakes: Fakes;
  /** A Context on that HOME for `platform`, with the stand-ins on PATH (before `env.PATH`, when given). */
  context(platform?: NodeJS.Platform, env?: Record<string, string>): Context;
  /** Runs the CLI; returns the exit code and what it printed. */
  cli(ctx: Context, args: string[]): Promise<{ code: number; out: string; err: string }>;
  unitPath(): string;
  plistPath(): string;
  /** A file in the stand-ins' state folder that makes them fail (see the top of this file). */
  fail(flag: 'no-bus' | 'start-fails' | 'no-gui' | 'bootstrap-fails' | 'bootout-fails'): Promise<void>;
  /** What `systemctl is-system-running` prints from now on. */
  systemState(state: string): Promise<void>;
  cleanup(): Promise<void>;
}

export async function serviceHome(): Promise<ServiceHome> {
  const t = await makeTestHome();
  const fakes = await installFakes(t.root);
  const entry = path.join(t.root, 'agent', 'bin', 'blue-agent.js');
  await mkdir(path.dirname(entry), { recursive: true });
  await writeFile(entry, '// stand-in entry\n');
  return {
    t,
    fakes,
    context: (platform = 'linux', env = {}) =>
      t.context({
        platform,
        env: { FAKE_SERVICE_STATE: fakes.state, ...env, PATH: `${fakes.bin}:${env.PATH ?? '/usr/bin:/bin'}` },
        self: { node: process.execPath, entry },
      }),
    cli: async (ctx, args) => {
      const outBefore = t.stdout.text().length;
      const errBefore = t.stderr.text().length;
      const code = await main(args, ctx);
      return { code, out: t.stdout.text().slice(outBefore), err: t.stderr.text().slice(errBefore) };
    },
    unitPath: () => path.join(t.home, '.config', 'systemd', 'user', 'blue-agent.service'),
    plistPath: () => path.join(t.home, 'Library', 'LaunchAgents', `${LAUNCHD_LABEL}.plist`),
    fail: (flag) => writeFile(path.join(fakes.state, flag), ''),
    systemState: (state) => writeFile(path.join(fakes.state, 'system-state'), `${state}\n`),
    cleanup: () => t.cleanup(),
  };
}

/** A policy that captures, as a local file. */
export const CAPTURE_POLICY =
  'revision: 5\nsession_upload: { presign_url: "https://control.example/session-uploads/presign" }\n';

export interface ManagedHook {
  /** Put first on PATH: a Claude Code stand-in that prints a supported version. */
  bin: string;
  policy: string;
  settings: string;
  /** Whether Claude Code's settings hold the managed hook now. */
  hooked(): Promise<boolean>;
}

/** Claude Code on PATH, and its managed hook installed by a reconcile of a capturing local policy. */
export async function installManagedHook(home: ServiceHome): Promise<ManagedHook> {
  const bin = await versionStubs(home.t.root, { claude: '2.1.332 (Claude Code)' });
  const policy = path.join(home.t.root, 'policy.yaml');
  await writeFile(policy, CAPTURE_POLICY);
  const settings = path.join(home.t.home, '.claude', 'settings.json');
  const hooked = async () => /capture --harness claude/.test(await readFile(settings, 'utf8').catch(() => ''));
  const report = await reconcile(home.context('linux', { PATH: `${bin}:/usr/bin:/bin` }), {
    dryRun: false,
    policyFile: policy,
  });
  if (!report.ok || !(await hooked())) throw new Error('the managed hook was not installed');
  return { bin, policy, settings, hooked };
}

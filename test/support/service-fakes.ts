/**
 * Stand-ins for systemctl and launchctl: shell scripts that append their argv to a log and answer like the real tools,
 * keeping the service's state (enabled, active, loaded) in files next to the log.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

const SYSTEMCTL = `#!/bin/sh
state="$FAKE_SERVICE_STATE"
{ printf 'systemctl'; for a in "$@"; do printf '|%s' "$a"; done; echo; } >> "$state/calls.log"
[ "$1" = "--user" ] || { echo "fake systemctl: expected --user" >&2; exit 2; }
shift
if [ -f "$state/no-bus" ]; then echo "Failed to connect to bus: No medium found" >&2; exit 1; fi
case "$1" in
  daemon-reload) exit 0 ;;
  enable)
    touch "$state/enabled"
    [ "$2" = "--now" ] && touch "$state/active"
    exit 0 ;;
  disable)
    rm -f "$state/enabled"
    [ "$2" = "--now" ] && rm -f "$state/active"
    exit 0 ;;
  restart|start) touch "$state/active"; exit 0 ;;
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
    if [ -f "$state/loaded" ]; then
      printf '%s = {\\n\\tactive count = 1\\n\\tpath = %s\\n\\tstate = running\\n}\\n' "$2" "$(cat "$state/loaded")"
      exit 0
    fi
    echo "Could not find service \\"$label\\" in domain for user gui: $(id -u)" >&2
    exit 113 ;;
  bootstrap)
    if [ -f "$state/loaded" ]; then echo "Bootstrap failed: 5: Input/output error" >&2; exit 5; fi
    [ -f "$3" ] || { echo "Bootstrap failed: 2: No such file or directory" >&2; exit 2; }
    printf '%s' "$3" > "$state/loaded"; exit 0 ;;
  bootout)
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

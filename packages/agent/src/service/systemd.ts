/**
 * Pure: the systemd user unit that runs `blue-agent run`. Text in (a few paths and variables), text out.
 */
import { BlueError } from '@blue-agent/contract/errors.js';
import { EXIT_ALREADY_RUNNING } from '../daemon/lock.js';
import { agentCommand, MARKER, type ServiceSpec } from './spec.js';

export const SYSTEMD_UNIT_NAME = 'blue-agent.service';

/** The first line of every unit blue-agent writes; how `install` and `uninstall` know the file is theirs. */
export const SYSTEMD_MARKER_LINE = `# ${MARKER}: written by \`blue-agent service install\`; edits are overwritten.`;

export function isOurSystemdUnit(text: string): boolean {
  return text.split('\n', 1)[0]!.replace(/\r$/, '').startsWith(`# ${MARKER}`);
}

export function renderSystemdUnit(spec: ServiceSpec): string {
  const exec = agentCommand(spec)
    .map((word) => quoteExecWord(word, 'ExecStart'))
    .join(' ');
  const env = spec.env.map(([name, value]) => `Environment=${quoteValue(`${name}=${value}`, `Environment ${name}`)}`);
  return [
    SYSTEMD_MARKER_LINE,
    '# Remove it with `blue-agent service uninstall`.',
    '[Unit]',
    'Description=blue-agent: keeps coding-agent harnesses wired to the session-capture policy',
    // No After=network-online.target: a user manager has no such target. The agent waits for the network itself
    // (a policy fetch that fails falls back to the last-known-good copy and is retried).
    '',
    '[Service]',
    'Type=simple',
    `ExecStart=${exec}`,
    ...env,
    // The agent's log goes to stdout, which is the journal here (no detection guesswork, no run.log).
    'Environment=BLUE_AGENT_LOG=json',
    'Restart=on-failure',
    'RestartSec=10',
    // Another agent already runs for this user (`run` exits 3): restarting would only fail again, forever.
    `RestartPreventExitStatus=${EXIT_ALREADY_RUNNING}`,
    // `run` finishes the write in progress on SIGTERM; give it time before SIGKILL. Its stop is bounded well below
    // this.
    'TimeoutStopSec=30',
    // SIGTERM goes to the agent alone, which decides when its drain and step children stop (a drain gets its grace);
    // whatever is left when the agent has exited, or at the timeout, is then SIGKILLed with the whole cgroup.
    'KillMode=mixed',
    // Everything the agent creates (ledger, spool, backups) is private to the user.
    'UMask=0077',
    // Hardening that works in a *user* unit. NoNewPrivileges is a prctl; LockPersonality, RestrictRealtime and
    // RestrictSUIDSGID are seccomp filters, which an unprivileged manager may install once NoNewPrivileges is set.
    // Not used, on purpose: PrivateTmp, ProtectSystem, ProtectHome, PrivateDevices and the other namespace options
    // need unprivileged user namespaces in a user manager (disabled or restricted on several distributions, and the
    // unit would then fail to start), and the agent must write the harnesses' configs under $HOME anyway.
    // MemoryDenyWriteExecute is not used because Node.js's JIT needs writable-executable memory.
    'NoNewPrivileges=yes',
    'LockPersonality=yes',
    'RestrictRealtime=yes',
    'RestrictSUIDSGID=yes',
    '',
    '[Install]',
    'WantedBy=default.target',
    '',
  ].join('\n');
}

function checkLine(value: string, what: string): void {
  if (/[\n\r\0]/.test(value)) {
    throw new BlueError(
      'SERVICE_FAILED',
      `${what} contains a line break or NUL, which a systemd unit cannot hold: ${JSON.stringify(value)}`,
      {
        hint:
          'Install blue-agent (and Node.js) under a path without line breaks, or unset that variable, then run ' +
          '`blue-agent service install` again.',
      },
    );
  }
}

/** A double-quoted word of ExecStart=: C escapes for `\` and `"`, `%%` for specifiers, `$$` for variable expansion. */
function quoteExecWord(word: string, what: string): string {
  checkLine(word, what);
  return `"${word.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/%/g, '%%').replace(/\$/g, '$$$$')}"`;
}

/** A double-quoted Environment= assignment: specifiers are expanded there, variables are not. */
function quoteValue(assignment: string, what: string): string {
  checkLine(assignment, what);
  return `"${assignment.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/%/g, '%%')}"`;
}

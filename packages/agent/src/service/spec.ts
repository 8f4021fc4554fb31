/**
 * What a service definition is rendered from: which Node.js, which entry script, which environment, which paths.
 * Built from the Context once, then rendered by the pure systemd and launchd renderers.
 */
import path from 'node:path';
import type { Context } from '../context.js';
import { ADAPTERS } from '../harnesses/index.js';

/** Marker text every unit blue-agent writes carries (a comment in both formats). */
export const MARKER = 'Managed by blue-agent';

export { LAUNCHD_LABEL } from './label.js';

/**
 * The variables passed on to the service, when set at install time: where the agent keeps its state and config,
 * where the harnesses keep theirs, and PATH (the service manager's own PATH usually lacks ~/.local/bin, npm's global
 * bin or a version manager's, and a harness not found is a harness whose hook is removed). Never a token: the
 * service reads the token file `login` wrote.
 */
export const PASSED_VARIABLES: readonly string[] = [
  'BLUE_AGENT_HOME',
  'BLUE_AGENT_CONFIG',
  'BLUE_AGENT_CONTROL_URL',
  'BLUE_AGENT_PROFILES_DIR',
  'BLUE_AGENT_LOG_LEVEL',
  // Each harness's own home variables, in registry order.
  ...Object.values(ADAPTERS).flatMap((adapter) => adapter.environment),
  'XDG_CONFIG_HOME',
  'XDG_DATA_HOME',
  'XDG_STATE_HOME',
  'PATH',
];

/**
 * The long-running agent's Node.js flags. It waits (timers, watches, one HTTP stream) and runs every heavy step in a
 * child process of its own (started without them), so it runs interpreted: V8's optimizing compilers, paged in and
 * compiling at start-up, would stay resident for as long as it runs (--max-opt=0; bench/run-idle.mjs), and its young
 * generation stays at 1 MiB (--max-semi-space-size=1), what allocating little needs.
 */
export const AGENT_NODE_FLAGS: readonly string[] = ['--max-opt=0', '--max-semi-space-size=1'];

/** The command the service starts: Node.js with the agent's flags, the entry script, `run`. */
export function agentCommand(spec: Pick<ServiceSpec, 'node' | 'entry'>): string[] {
  return [spec.node, ...AGENT_NODE_FLAGS, spec.entry, 'run'];
}

/**
 * The crontab line that starts the agent at boot where no service manager can: the command and environment the unit
 * would have. Cron runs it with its own minimal environment (PATH=/usr/bin:/bin: no ~/.local/bin, no npm's global
 * bin), where `blue-agent` is not found and a harness not found is a harness whose hook the agent removes. Cron turns
 * an unescaped `%` into a newline.
 */
export function cronLine(spec: Pick<ServiceSpec, 'node' | 'entry' | 'env'>): string {
  const words = [
    ...spec.env.map(([name, value]) => `${name}=${cronQuote(value)}`),
    ...agentCommand(spec).map(cronQuote),
  ];
  return `@reboot ${words.join(' ')}`.replace(/%/g, '\\%');
}

/** POSIX shell quoting for a crontab command: bare when safe, else single quotes (a `'` inside becomes `'\''`). */
function cronQuote(word: string): string {
  return /^[A-Za-z0-9_@+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

export interface ServiceSpec {
  /** Absolute Node.js binary. */
  node: string;
  /** Absolute entry script of the agent. */
  entry: string;
  /** Name/value pairs, in PASSED_VARIABLES order. */
  env: [string, string][];
  /** launchd only: where the agent's stdout and stderr go. */
  stdoutPath: string;
  stderrPath: string;
}

export function serviceSpec(ctx: Context): ServiceSpec {
  const env: [string, string][] = [];
  for (const name of PASSED_VARIABLES) {
    const value = name === 'PATH' ? cleanPath(ctx.env.PATH) : ctx.env[name];
    if (value !== undefined && value !== '') env.push([name, value]);
  }
  return {
    node: path.resolve(ctx.self.node),
    entry: path.resolve(ctx.self.entry),
    env,
    stdoutPath: ctx.paths.serviceStdoutFile,
    stderrPath: ctx.paths.serviceStderrFile,
  };
}

/** PATH with only absolute directories, each once: a relative entry would depend on the service's working directory. */
function cleanPath(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const seen = new Set<string>();
  for (const dir of value.split(path.delimiter)) if (path.isAbsolute(dir)) seen.add(dir);
  return seen.size === 0 ? undefined : [...seen].join(path.delimiter);
}

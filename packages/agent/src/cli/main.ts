/**
 * The command line: the program built from every command's declaration (commands/<command>.ts). A command's own module
 * is loaded only when it runs, so the hot paths start fast.
 */
import { Command, CommanderError } from 'commander';
import { createContext, type Context } from '../context.js';
import { BlueError, EXIT_FAILURE, EXIT_USAGE, toBlueError, usageError } from '@blue-agent/contract/errors.js';
import { HARNESS_DISPLAY_NAMES, HARNESSES } from '../harnesses/names.js';
import { backfill } from './commands/backfill.js';
import { bundle } from './commands/bundle.js';
import { capture } from './commands/capture.js';
import { controlPlane } from './commands/control-plane.js';
import { demo } from './commands/demo.js';
import { doctor } from './commands/doctor.js';
import { drain } from './commands/drain.js';
import { importSessions } from './commands/import.js';
import { login } from './commands/login.js';
import { logout } from './commands/logout.js';
import { profiles } from './commands/profiles.js';
import { reconcile } from './commands/reconcile.js';
import { resume } from './commands/resume.js';
import { run } from './commands/run.js';
import { service } from './commands/service.js';
import { sessions } from './commands/sessions.js';
import { spool } from './commands/spool.js';
import { status } from './commands/status.js';
import { addCommand, loadHelp, type CommandDeclaration } from './declaration.js';
import { reportError } from './output.js';
import { controlApiMissing } from '../control-api-package.js';

export { reportError } from './output.js';

/** Every command, in the order `--help` lists them. */
const COMMANDS: readonly CommandDeclaration[] = [
  reconcile,
  profiles,
  capture,
  drain,
  importSessions,
  backfill,
  login,
  logout,
  sessions,
  resume,
  run,
  service,
  status,
  doctor,
  spool,
  bundle,
  demo,
  controlPlane,
];

export interface RunState {
  exitCode: number;
}

/** The program; `loadedHelp` holds the help that declarations loaded for this run (`loadHelp`). */
export function buildProgram(
  ctx: Context,
  state: RunState,
  loadedHelp: ReadonlyMap<CommandDeclaration, string> = new Map(),
): Command {
  const program = new Command('blue-agent')
    .description(
      `Keeps coding-agent harnesses (${HARNESSES.map((h) => HARNESS_DISPLAY_NAMES[h]).join(', ')}) wired to the ` +
        `organisation's session-capture policy.`,
    )
    .version(ctx.self.version, '-V, --version', 'print the blue-agent version')
    .configureOutput({
      writeOut: (s) => ctx.stdout.write(s),
      writeErr: (s) => ctx.stderr.write(s),
      // Parse errors are reported by main() in the standard form (and as JSON with --json), never in commander's own.
      outputError: () => undefined,
    })
    .exitOverride();
  program.addHelpText(
    'after',
    `
Exit codes: 0 success, 1 failure (details on stderr, or in the --json document), 2 usage error,
3 \`run\`: another agent is already running for this user (LOCK_TIMEOUT; any other LOCK_TIMEOUT exits 1),
75 \`drain\`: nothing failed, but another drain held records (run it again later).
\`resume\` exits with the launched harness's own status; \`resume\`, \`demo\` and \`login\` exit 130 or 143 when
interrupted by SIGINT (Ctrl-C) or SIGTERM.
Environment: BLUE_AGENT_HOME (state), BLUE_AGENT_CONFIG (config file), BLUE_AGENT_CONTROL_URL, BLUE_AGENT_TOKEN.`,
  );
  const runner = {
    loadedHelp,
    run: async (declaration: CommandDeclaration, values: readonly unknown[]) => {
      // The values are what the declaration's arguments and options say: commander parsed them so.
      state.exitCode = await declaration.run!(ctx, ...(values as never[]));
    },
  };
  for (const declaration of COMMANDS) addCommand(program, declaration, runner);
  return program;
}

/** Runs the CLI and returns the process exit code. */
export async function main(argv: readonly string[], ctx: Context = createContext()): Promise<number> {
  const state: RunState = { exitCode: 0 };
  const wantsJson = argv.includes('--json');
  let program: Command | undefined;
  try {
    program = buildProgram(ctx, state, await loadHelp(COMMANDS, argv));
    await program.parseAsync([...argv], { from: 'user' });
    return state.exitCode;
  } catch (error) {
    if (error instanceof CommanderError && program !== undefined) {
      if (
        error.code === 'commander.helpDisplayed' ||
        error.code === 'commander.version' ||
        error.code === 'commander.help'
      )
        return 0;
      if (error.exitCode === 0) return 0;
      reportError(ctx, parseError(error, program, argv), wantsJson);
      return EXIT_USAGE;
    }
    const failure = controlApiMissing(error);
    reportError(ctx, toBlueError(failure), wantsJson);
    return failure instanceof BlueError ? failure.exitCode : EXIT_FAILURE;
  }
}

/** A commander parse error (unknown flag, missing argument, bad value) as a USAGE error naming the command's help. */
function parseError(error: CommanderError, program: Command, argv: readonly string[]): BlueError {
  // Commander puts its suggestion for a typo on a line of its own: it belongs in the hint, the message stays one line.
  const [first = '', ...rest] = error.message
    .replace(/^error:\s*/, '')
    .trim()
    .split('\n');
  const suggested = /^\(Did you mean (?<name>.+)\?\)$/.exec(rest.join(' ').trim())?.groups?.name;
  const names = commandPath(program, argv);
  const help = `run \`${['blue-agent', ...names].join(' ')} --help\``;
  const isCommand = suggested !== undefined && !suggested.startsWith('-');
  const guess =
    suggested === undefined ? undefined : isCommand ? `blue-agent ${[...names, suggested].join(' ')}` : suggested;
  return usageError(first.trim(), guess === undefined ? help : `did you mean \`${guess}\`? Else ${help}`);
}

/** The (sub)command names that argv selects, as far as they are known: `['control-plane', 'users', 'add']`. */
function commandPath(program: Command, argv: readonly string[]): string[] {
  const names: string[] = [];
  let command = program;
  for (const arg of argv) {
    if (arg === '--') break;
    if (arg.startsWith('-')) continue;
    const sub = command.commands.find((c) => c.name() === arg || c.aliases().includes(arg));
    if (sub === undefined) break;
    names.push(sub.name());
    command = sub;
    if (command.commands.length === 0) break;
  }
  return names;
}

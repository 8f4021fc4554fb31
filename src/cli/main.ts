/**
 * The command line. Each command lives in its own module, loaded only when it runs, so the hot paths start fast.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { createContext, type Context } from '../context.js';
import { BlueError, EXIT_FAILURE, EXIT_USAGE, toBlueError } from '../errors.js';
import { HARNESSES } from '../harnesses/names.js';

export interface RunState {
  exitCode: number;
}

export function buildProgram(ctx: Context, state: RunState): Command {
  const program = new Command('blue-agent')
    .description(
      'Keeps coding-agent harnesses (Claude Code, Codex, Kimi CLI, OpenCode) wired to the organisation\'s session-capture policy.',
    )
    .version(ctx.self.version, '-V, --version', 'print the blue-agent version')
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({
      writeOut: (s) => ctx.stdout.write(s),
      writeErr: (s) => ctx.stderr.write(s),
    })
    .exitOverride();
  program.addHelpText(
    'after',
    `
Exit codes: 0 success, 1 failure (details on stderr, or in the --json document), 2 usage error.
Environment: BLUE_AGENT_HOME (state), BLUE_AGENT_CONFIG (config file), BLUE_AGENT_CONTROL_URL, BLUE_AGENT_TOKEN.`,
  );

  const harnessOption = new Option('--harness <name>', `only this harness, repeatable (${HARNESSES.join(', ')})`).argParser(
    (value: string, previous: string[] | undefined) => {
      if (!(HARNESSES as readonly string[]).includes(value)) {
        throw new InvalidArgumentError(`unknown harness "${value}"; use one of ${HARNESSES.join(', ')}.`);
      }
      return [...(previous ?? []), value];
    },
  );
  program
    .command('reconcile')
    .description('bring the managed session_upload hooks in every harness\'s native config in line with the policy')
    .option('--dry-run', 'compute the same plan and show it, writing nothing at all (not even caches)')
    .option('--json', 'print the report as JSON')
    .option('--policy <file>', 'use this policy file (YAML or JSON) instead of the Control API')
    .addOption(harnessOption)
    .addHelpText(
      'after',
      `
For every harness: is it installed, which version and profile, and should it carry the managed capture hook?
Files that change are shown as unified diffs. Only entries that run \`blue-agent capture\` are ever added, updated
or removed; everything else in the file keeps its bytes.

Examples:
  blue-agent reconcile --dry-run --policy policy.yaml
  blue-agent reconcile --json --harness claude --harness codex`,
    )
    .action(async (opts: { dryRun?: boolean; json?: boolean; policy?: string; harness?: string[] }) => {
      const { reconcileCommand } = await import('./reconcile.js');
      state.exitCode = await reconcileCommand(ctx, opts);
    });

  const profiles = program.command('profiles').description('inspect the compatibility profiles');
  profiles
    .command('list')
    .description('list every harness version interval with its profile, operations and certification ceiling')
    .option('--json', 'print as JSON')
    .action(async (opts: { json?: boolean }) => {
      const { profilesListCommand } = await import('./profiles.js');
      state.exitCode = await profilesListCommand(ctx, opts);
    });
  profiles
    .command('check')
    .description('check the profiles for overlapping intervals, bad bounds, missing ceilings and unknown operations')
    .option('--json', 'print as JSON')
    .action(async (opts: { json?: boolean }) => {
      const { profilesCheckCommand } = await import('./profiles.js');
      state.exitCode = await profilesCheckCommand(ctx, opts);
    });
  return program;
}

/** Runs the CLI and returns the process exit code. */
export async function main(argv: readonly string[], ctx: Context = createContext()): Promise<number> {
  const state: RunState = { exitCode: 0 };
  const program = buildProgram(ctx, state);
  const wantsJson = argv.includes('--json');
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return state.exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help') return 0;
      return error.exitCode === 0 ? 0 : EXIT_USAGE;
    }
    reportError(ctx, toBlueError(error), wantsJson);
    return error instanceof BlueError ? error.exitCode : EXIT_FAILURE;
  }
}

export function reportError(ctx: Context, error: BlueError, json: boolean): void {
  if (json) {
    ctx.stdout.write(`${JSON.stringify({ ok: false, error: error.toJSON() }, null, 2)}\n`);
    return;
  }
  ctx.stderr.write(`blue-agent: error [${error.code}]: ${error.message}\n`);
  if (error.hint !== undefined) ctx.stderr.write(`  hint: ${error.hint}\n`);
}

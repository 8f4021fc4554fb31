/**
 * A plain `reconcile`, the command the agent, installers and cron run over and over: the entry of dist/reconcile.cjs,
 * which bin/blue-agent.js runs with a code cache of its own (see scripts/build.mjs), without commander. Building the
 * whole program with every command's help costs more than a reconcile that changes nothing. Any other argv, help and
 * every parse error included, is left to the full CLI (./main.ts); what a plain one does is what the full CLI does.
 */
import { createContext, type Context } from '../context.js';
import { BlueError, EXIT_FAILURE, toBlueError } from '@blue-agent/contract/errors.js';
import { HARNESSES } from '../harnesses/names.js';
import { reportError } from './output.js';
import type { ReconcileOptions } from './reconcile.js';

/**
 * The options of `reconcile` when `argv` is one with nothing but its own options, each spelled the one plain way
 * (`--policy FILE`, `--harness NAME` with a known name); undefined for anything else, which the full CLI parses.
 * What it returns is what commander makes of the same argv.
 */
export function plainReconcileArgs(argv: readonly string[]): ReconcileOptions | undefined {
  if (argv[0] !== 'reconcile') return undefined;
  const args: ReconcileOptions = {};
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--dry-run') args.dryRun = true;
    else if (arg === '--json') args.json = true;
    else if (arg === '--policy' || arg === '--harness') {
      const value = argv[++i];
      if (value === undefined || value.startsWith('-')) return undefined;
      if (arg === '--policy') args.policy = value;
      else if ((HARNESSES as readonly string[]).includes(value)) args.harness = [...(args.harness ?? []), value];
      else return undefined;
    } else return undefined;
  }
  return args;
}

/** Runs a plain reconcile and returns the exit code, reporting a failure as the full CLI does. */
export async function runPlainReconcile(
  ctx: Context,
  args: ReconcileOptions,
  argv: readonly string[],
): Promise<number> {
  try {
    const { reconcileCommand } = await import('./reconcile.js');
    return await reconcileCommand(ctx, args);
  } catch (error) {
    reportError(ctx, toBlueError(error), argv.includes('--json'));
    return error instanceof BlueError ? error.exitCode : EXIT_FAILURE;
  }
}

/** The CLI for a plain reconcile: its exit code, or undefined when `argv` is not one (the full CLI takes it). */
export async function run(argv: readonly string[]): Promise<number | undefined> {
  const args = plainReconcileArgs(argv);
  return args === undefined ? undefined : runPlainReconcile(createContext(), args, argv);
}

/**
 * A bare `blue-agent run`, without the full CLI: the long-running agent and its step children start here
 * (bin/blue-agent.js sends exactly `run` this way), so the agent's own process never builds commander's program with
 * every command's help, which would stay resident for as long as it runs. `run --help` and anything else go to
 * ./main.ts; what this does is what the full CLI does for `run`.
 */
import { createContext, type Context } from '../context.js';
import { BlueError, EXIT_FAILURE, toBlueError } from '@blue-agent/contract/errors.js';
import { reportError } from './output.js';
import { runCommand } from './run.js';

export async function run(ctx: Context = createContext()): Promise<number> {
  try {
    return await runCommand(ctx);
  } catch (error) {
    reportError(ctx, toBlueError(error), false);
    return error instanceof BlueError ? error.exitCode : EXIT_FAILURE;
  }
}

import type { CommandDeclaration } from '../declaration.js';

/** A bare `run` starts from ../agent.ts instead, without the full program; this is `run` with anything else. */
export const run: CommandDeclaration = {
  usage: 'run',
  summary: 'run as the workstation agent: keep the hooks in line with the policy, repair drift, drain on a schedule',
  help: `
Normally started by the service manager (\`blue-agent service install\`). One instance per user; SIGTERM or SIGINT
stop it after the write in progress, SIGHUP reloads the agent config. Logs are JSON lines on stdout under a service
manager, otherwise written to run.log in the state directory.`,
  run: async (ctx) => (await import('../run.js')).runCommand(ctx),
};

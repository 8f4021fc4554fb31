import type { CommandDeclaration } from '../declaration.js';

/** The help, naming the checks harnesses add (known once the doctor's checks are loaded). */
const help = (harnessChecks: readonly string[]): string => `
Exits 1 when any check fails, else 0. Checks: node, config, control-api, token, policy, spool,
harness:NAME (one per harness; \`harnesses\` when they cannot be examined), ${[...harnessChecks, 'service'].join(', ')}.
Writes nothing, not even the policy cache.

Example:
  blue-agent doctor --json`;

export const doctor: CommandDeclaration = {
  usage: 'doctor',
  summary: "check this machine's set-up and print the fix for each problem found",
  options: [{ flags: '--json', description: 'print as JSON' }],
  help: help([]),
  loadHelp: async () => help((await import('../../doctor/checks.js')).HARNESS_CHECK_IDS),
  run: async (ctx, opts: { json?: boolean }) => (await import('../doctor.js')).doctorCommand(ctx, opts),
};

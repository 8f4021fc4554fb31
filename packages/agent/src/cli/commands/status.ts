import type { CommandDeclaration } from '../declaration.js';

export const status: CommandDeclaration = {
  usage: 'status',
  summary: 'policy revision and age, per-harness state, spool, last drain, service state',
  options: [{ flags: '--json', description: 'print as JSON' }],
  help: `
Read-only: never contacts the network or writes; always exits 0; see \`doctor\` for checks that fail.

Example:
  blue-agent status --json`,
  run: async (ctx, opts: { json?: boolean }) => (await import('../status.js')).statusCommand(ctx, opts),
};

import type { CommandDeclaration } from '../declaration.js';

export const spool: CommandDeclaration = {
  usage: 'spool',
  summary: 'inspect the local spool of captured sessions',
  subcommands: [
    {
      usage: 'list',
      summary: 'every spool record with its state, session, size, attempts and last error',
      options: [{ flags: '--json', description: 'print as JSON' }],
      run: async (ctx, opts: { json?: boolean }) => (await import('../spool.js')).spoolListCommand(ctx, opts),
    },
  ],
};

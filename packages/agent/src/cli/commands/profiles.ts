import type { CommandDeclaration } from '../declaration.js';

export const profiles: CommandDeclaration = {
  usage: 'profiles',
  summary: 'inspect the compatibility profiles',
  subcommands: [
    {
      usage: 'list',
      summary: 'list every harness version interval with its profile, operations and certification ceiling',
      options: [{ flags: '--json', description: 'print as JSON' }],
      run: async (ctx, opts: { json?: boolean }) => (await import('../profiles.js')).profilesListCommand(ctx, opts),
    },
    {
      usage: 'check',
      summary: 'check the profiles for overlapping intervals, bad bounds, missing ceilings and unknown operations',
      options: [{ flags: '--json', description: 'print as JSON' }],
      run: async (ctx, opts: { json?: boolean }) => (await import('../profiles.js')).profilesCheckCommand(ctx, opts),
    },
  ],
};

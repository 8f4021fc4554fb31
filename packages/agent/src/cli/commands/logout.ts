import type { CommandDeclaration } from '../declaration.js';

export const logout: CommandDeclaration = {
  usage: 'logout',
  summary: 'sign this machine out: remove the saved token or credentials, and end a device sign-in on the Control API',
  options: [
    {
      flags: '--revoke',
      description:
        'also revoke a token that came from --token-stdin (by default it is only removed here: it may be in use ' +
        'elsewhere)',
    },
    { flags: '--json', description: 'print the result as JSON' },
  ],
  help: `
Removes the token file (<state dir>/token, or token_file from the config). A device sign-in (\`blue-agent login\`
without --token-stdin) belongs to this machine alone: it is revoked on the Control API first, so its tokens stop
working everywhere. A token an administrator made (\`login --token-stdin\`) may be in use elsewhere, so it is
revoked only with --revoke. Revoking is best effort: when the Control API cannot be reached or does not revoke, the
credentials are still removed here and the report says what is left to do. control_url stays saved, so that
\`blue-agent login\` signs in there again. Nothing saved is not an error (exit 0).

Examples:
  blue-agent logout
  blue-agent logout --revoke --json`,
  run: async (ctx, opts: { revoke?: boolean; json?: boolean }) =>
    (await import('../logout.js')).logoutCommand(ctx, opts),
};

import type { CommandDeclaration } from '../declaration.js';

export const login: CommandDeclaration = {
  usage: 'login',
  summary:
    'sign this machine in to a Control API: approve a code in a browser (device flow), or save a token from stdin',
  options: [
    {
      flags: '--control-url <url>',
      description:
        'the Control API base URL (http or https, may carry a path prefix); default: where this machine signed in ' +
        'before',
    },
    { flags: '--no-browser', description: 'print where to approve the code without opening a browser' },
    {
      flags: '--token-stdin',
      description:
        'instead of the device flow, read a token an administrator made from stdin (never from argv: every user ' +
        'sees argv)',
    },
    {
      flags: '--offline',
      description:
        'with --token-stdin: when the Control API cannot be reached, save the token unchecked instead of failing',
    },
    { flags: '--json', description: 'print the result as JSON' },
  ],
  help: `
Without --token-stdin: prints a code and a URL (and opens the browser there when this machine has a desktop); once
the code is approved in the browser, saves credentials whose short-lived access token refreshes itself. The
Control API names where to sign in (GET <url>/.well-known/metaharness). Ctrl-C stops waiting (exit 130).

With --token-stdin: the token is checked against the Control API first: a refused token, a wrong URL or an
unreachable Control API saves nothing; with --offline an unreachable one saves the token unchecked, with a warning.

Either way, control_url is saved in the agent config (only that key changes; comments are kept) and the token or
credentials in the token file (<state dir>/token, or token_file from the config), mode 0600. Without --control-url,
login signs in again where BLUE_AGENT_CONTROL_URL or the saved control_url points, and says which.
BLUE_AGENT_CONTROL_URL and BLUE_AGENT_TOKEN still override what is saved. \`blue-agent logout\` signs out.

Examples:
  blue-agent login --control-url https://control.example.com
  blue-agent login
  blue-agent login --control-url https://control.example.com --token-stdin < token.txt
  printf %s "$TOKEN" | blue-agent login --control-url https://example.com/blue --token-stdin --json`,
  run: async (
    ctx,
    opts: { controlUrl?: string; tokenStdin?: boolean; offline?: boolean; browser?: boolean; json?: boolean },
  ) => (await import('../login.js')).loginCommand(ctx, opts),
};

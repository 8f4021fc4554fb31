import type { CommandDeclaration } from '../declaration.js';
import type { DemoCommandOptions } from '../demo.js';

/** What the help says of the harnesses: the demo's own, and the variables no child process gets. */
interface Played {
  variables: string;
  name: string;
  binary: string;
  hookFile: string;
}

const help = (played: Played): string =>
  `
Shows capture, upload and restore end to end without a model API and without touching this machine's own setup.
Everything happens in a temporary directory: machine A and machine B are two throwaway HOMEs, and every child process
gets an environment built from scratch (your HOME, XDG_* directories, ${played.variables}
BLUE_AGENT_* and proxy variables are never passed on or read).

Real: the reference Control API (in this process, on 127.0.0.1, its data in the temporary directory), and, as child
processes of this blue-agent: \`login\` on A and B, \`reconcile\` on A (the managed SessionEnd hook in A's ` +
  `${played.name}
${played.hookFile}), the hook command exactly as reconcile wrote it (run with sh -c, the SessionEnd payload on stdin),
the capture worker and \`drain\` (presign, upload, complete), \`sessions list\`, and \`resume ID --dest DIR --yes
--no-launch\` on B, which restores the session and prints the native resume command.
Recorded: the ${played.name} session (recorded offline from the real CLI, shipped with blue-agent), ` +
  `and \`${played.binary}\` on
PATH, a stand-in that only answers --version with the version the session was recorded with.

Each step prints one numbered line (what it did, where, how long) and is bounded in time. A failed step is reported
as DEMO_STEP_FAILED naming the step and the code of its cause; Ctrl-C stops the running step and cleans up (exit 130).
The temporary directory is removed at the end unless --keep.

Examples:
  blue-agent demo
  blue-agent demo --keep --json`;

export const demo: CommandDeclaration = {
  usage: 'demo',
  summary:
    'run the whole loop on this machine, in throwaway HOMEs: Control API, login, reconcile, capture, drain, list, ' +
    'restore',
  options: [
    { flags: '--json', description: 'print one JSON document at the end instead of a line per step' },
    {
      flags: '--keep',
      description: 'keep the temporary directories (both HOMEs, the Control API data) for inspection',
    },
    {
      flags: '--port <port>',
      description: 'the loopback port of the demo Control API (default: a free one)',
      parse: (value: string) => {
        const port = /^\d{1,5}$/.test(value) ? Number(value) : Number.NaN;
        if (!(port >= 1 && port <= 65535)) throw new Error(`"${value}" is not a port (1 to 65535).`);
        return port;
      },
    },
  ],
  help: help({ variables: '', name: '', binary: '', hookFile: '' }),
  // The harness registry is loaded only for the demo's help: every other command starts without adapters.
  loadHelp: async () => {
    const { ADAPTERS, demoHarness } = await import('../../harnesses/index.js');
    const played = demoHarness();
    const variables = Object.values(ADAPTERS).flatMap((a) => a.environment);
    return help({
      variables: variables
        .map((v) => `${v}, `)
        .join('')
        .trimEnd(),
      name: played.displayName,
      binary: played.demo.binary,
      hookFile: played.demo.hookFile,
    });
  },
  run: async (ctx, opts: DemoCommandOptions) => (await import('../demo.js')).demoCommand(ctx, opts),
};

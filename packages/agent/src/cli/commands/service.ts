import type { CommandDeclaration } from '../declaration.js';

type Action = 'install' | 'uninstall' | 'status';
type ServiceOptions = { dryRun?: boolean; json?: boolean; removeHooks?: boolean };

const runService =
  (action: Action): CommandDeclaration['run'] =>
  async (ctx, opts: ServiceOptions) =>
    (await import('../service.js')).serviceCommand(ctx, action, opts);

export const service: CommandDeclaration = {
  usage: 'service',
  summary: 'install, remove or inspect the user service that runs `blue-agent run`',
  subcommands: [
    {
      usage: 'install',
      summary: 'write the systemd user unit (Linux) or LaunchAgent (macOS) and start it',
      options: [
        { flags: '--dry-run', description: 'print the unit and the commands, change nothing' },
        { flags: '--json', description: 'print as JSON' },
      ],
      run: runService('install'),
    },
    {
      usage: 'uninstall',
      summary: 'stop the service and remove its unit',
      options: [
        { flags: '--dry-run', description: 'show what would be stopped and removed, change nothing' },
        { flags: '--json', description: 'print as JSON' },
        {
          flags: '--remove-hooks',
          description: 'also stop a running agent and remove the managed hooks from every harness config',
        },
      ],
      run: runService('uninstall'),
    },
    {
      usage: 'status',
      summary: 'show whether the service is installed and running',
      options: [{ flags: '--json', description: 'print as JSON' }],
      run: runService('status'),
    },
  ],
};

import { HARNESSES } from '../../harnesses/names.js';
import type { BundleCreateOptions } from '../bundle-create.js';
import type { CommandDeclaration } from '../declaration.js';

const create: CommandDeclaration = {
  usage: 'create',
  summary: 'build a bundle from a session on this machine (for debugging captures)',
  options: [
    { flags: '--harness <name>', description: `the harness (${HARNESSES.join(', ')})`, required: true },
    { flags: '--session <id>', description: 'the native session id', required: true },
    { flags: '--out <file>', description: 'where to write the bundle', required: true },
    {
      flags: '--profile <profile>',
      description: 'the compatibility profile (default: the one for the installed version)',
    },
    { flags: '--cwd <dir>', description: "the session's working directory (some harnesses find sessions by it)" },
    { flags: '--transcript <file>', description: 'the transcript path, as a hook payload would give it' },
    { flags: '--json', description: 'print the manifest, size and SHA-256 as JSON' },
  ],
  help:
    `
--harness, --session and --out are required. The bundle is built exactly as the capture worker builds it.

Example:
  blue-agent bundle create --harness ${HARNESSES[0]} ` +
    '--session 3d394c86-0c1e-4a57-9d43-0f0a3bb1e2c1 --out session.bundle',
  run: async (ctx, opts: BundleCreateOptions) => (await import('../bundle-create.js')).bundleCreateCommand(ctx, opts),
};

export const bundle: CommandDeclaration = {
  usage: 'bundle',
  summary: 'work with blue-session-bundle-v1 files',
  subcommands: [
    {
      usage: 'verify <file>',
      summary: 'check everything a restore relies on; exits 1 naming the first violation',
      options: [{ flags: '--json', description: 'print the result as JSON' }],
      run: async (ctx, file: string, opts: { json?: boolean }) =>
        (await import('../bundle.js')).bundleVerifyCommand(ctx, file, opts),
    },
    {
      usage: 'inspect <file>',
      summary: 'print the manifest of a bundle',
      options: [{ flags: '--json', description: 'print the manifest as JSON' }],
      run: async (ctx, file: string, opts: { json?: boolean }) =>
        (await import('../bundle.js')).bundleInspectCommand(ctx, file, opts),
    },
    {
      usage: 'extract <file> <dir>',
      summary: 'verify a bundle, then extract manifest.json and its files into an empty or new directory',
      options: [{ flags: '--json', description: 'print what was extracted as JSON' }],
      run: async (ctx, file: string, dir: string, opts: { json?: boolean }) =>
        (await import('../bundle.js')).bundleExtractCommand(ctx, file, dir, opts),
    },
    create,
  ],
};

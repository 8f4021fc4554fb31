import type { CommandDeclaration } from '../declaration.js';
import { harnessOption, repeatable } from './harness-option.js';

const list: CommandDeclaration = {
  usage: 'list',
  summary:
    'your sessions, newest first (with --all: every session the Control API lets you see), with how many there are',
  options: [
    {
      flags: '--q <text>',
      description: 'search what sessions say, their titles, summaries, tags, folders and ids (every word must match)',
    },
    harnessOption,
    {
      flags: '--provider <name>',
      description:
        'only sessions from this provider (a harness, or where a stored or imported record came from: ' +
        'chatgpt_export); repeatable',
      parse: repeatable,
    },
    { flags: '--tag <tag>', description: 'only sessions carrying this tag' },
    { flags: '--limit <n>', description: 'at most this many rows, 1 to 200 (default 20)' },
    { flags: '--offset <n>', description: 'skip this many rows first (default 0)' },
    { flags: '--all', description: 'every session you may see, not only your own' },
    { flags: '--json', description: 'print as JSON: {all, total, offset, limit, truncated, sessions}' },
  ],
  run: async (
    ctx,
    opts: {
      q?: string;
      harness?: string[];
      provider?: string[];
      tag?: string;
      limit?: string;
      offset?: string;
      all?: boolean;
      json?: boolean;
    },
  ) => (await import('../sessions.js')).sessionsListCommand(ctx, opts),
};

const store: CommandDeclaration = {
  usage: 'store',
  summary: 'store a session from stdin on the Control API: a transcript, notes, a conversation (never resumable)',
  options: [
    { flags: '--title <title>', description: 'its title (required, not blank, at most 256 characters)' },
    {
      flags: '--provider <name>',
      description: 'where it came from (required): a harness name or any other, lower-case letters, digits, _, . and -',
    },
    {
      flags: '--tag <tag>',
      description: 'a word to find and filter it by (sessions list --tag); repeatable, at most 32',
      parse: repeatable,
    },
    {
      flags: '--provider-session-id <id>',
      description: "the provider's own id of the session: storing it again updates the same session",
    },
    { flags: '--json', description: 'print the result as JSON' },
  ],
  help: `
The content is read from stdin (UTF-8 text, not empty, at most 16 MiB). Every flag is checked first, and a problem
names the flag. Without --provider-session-id the session is named by what it says, so storing the same content
again stores nothing new. Stored sessions are found by search and by their tags, shown in the dashboard, shared,
exported and deleted like any other; they cannot be resumed.

Example:
  blue-agent sessions store --title "Incident review" --provider notes --tag incident --tag q3 < review.md`,
  run: async (
    ctx,
    opts: { title?: string; provider?: string; tag?: string[]; providerSessionId?: string; json?: boolean },
  ) => (await import('../sessions.js')).sessionsStoreCommand(ctx, opts),
};

const show: CommandDeclaration = {
  usage: 'show <id>',
  summary: 'one session: metadata, uploads, sharing, retention (an id or a prefix of 8 or more characters)',
  options: [{ flags: '--json', description: 'print as JSON' }],
  run: async (ctx, id: string, opts: { json?: boolean }) =>
    (await import('../sessions.js')).sessionsShowCommand(ctx, id, opts),
};

const share: CommandDeclaration = {
  usage: 'share <id>',
  summary: 'set who may view, download and resume one of your sessions',
  options: [
    { flags: '--mode <mode>', description: 'private, workspace or selected', required: true },
    {
      flags: '--user <email>',
      description:
        'a recipient (e-mail address or user id), only with --mode selected (which needs at least one); repeatable',
      parse: repeatable,
    },
    { flags: '--json', description: 'print as JSON' },
  ],
  help: `
Only the session's owner may change its sharing. --user is accepted only with --mode selected; the flags are checked
before anything is sent. Prints the resulting sharing.

Example:
  blue-agent sessions share 3d394c86 --mode selected --user ada@example.com`,
  run: async (ctx, id: string, opts: { mode: string; user?: string[]; json?: boolean }) =>
    (await import('../sessions.js')).sessionsShareCommand(ctx, id, opts),
};

const remove: CommandDeclaration = {
  usage: 'delete <id>',
  summary: 'delete one of your sessions from the Control API for good: every revision and its stored bundles',
  options: [
    { flags: '--yes', description: 'delete it (without this flag, only say what would be deleted)' },
    { flags: '--json', description: 'print as JSON' },
  ],
  help: `
The owner deletes their own sessions; an administrator any. Without --yes nothing is deleted: the command names the
session it would delete and exits 2. The deletion is recorded in the Control API's audit log.

Example:
  blue-agent sessions delete 3d394c86 --yes`,
  run: async (ctx, id: string, opts: { yes?: boolean; json?: boolean }) =>
    (await import('../sessions.js')).sessionsDeleteCommand(ctx, id, opts),
};

const exportSession: CommandDeclaration = {
  usage: 'export <id-or-file>',
  summary: 'render a session as markdown (readable conversation) or json (manifest and metadata)',
  options: [
    { flags: '--format <format>', description: 'markdown or json', default: 'markdown' },
    { flags: '--out <file>', description: 'write to this file (mode 0600) instead of stdout' },
  ],
  help: `
The argument is a session on the Control API (an id or a prefix of 8 or more characters; its bundle is downloaded and
verified) or, when it names an existing file, a local bundle, verified the same way. --out creates the file with mode
0600 (a file that already exists is overwritten and keeps its mode).

Examples:
  blue-agent sessions export 3d394c86 --out session.md
  blue-agent sessions export ./session.bundle --format json`,
  run: async (ctx, idOrFile: string, opts: { format: string; out?: string }) =>
    (await import('../sessions.js')).sessionsExportCommand(ctx, idOrFile, opts),
};

export const sessions: CommandDeclaration = {
  usage: 'sessions',
  summary: 'list, show, share, delete and export the captured sessions on the Control API',
  subcommands: [list, store, show, share, remove, exportSession],
};

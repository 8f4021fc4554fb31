import type { BlobOptions, DataOptions, ServeOptions } from '../control-plane.js';
import type { CommandDeclaration, OptionDeclaration } from '../declaration.js';

/** Where the server's data is: what every command that opens it takes. */
const DATA: readonly OptionDeclaration[] = [
  {
    flags: '--data <dir>',
    description: 'the server data directory (default: BLUE_CONTROL_DATA, else $XDG_DATA_HOME/blue-agent/control)',
  },
  {
    flags: '--database-url <url>',
    description:
      'PostgreSQL instead of SQLite in the data directory, e.g. postgres://blue@db:5432/blue (default: ' +
      'BLUE_CONTROL_DATABASE_URL)',
  },
];
const JSON_OUTPUT: OptionDeclaration = { flags: '--json', description: 'print as JSON' };
/** Where the bundles are: what every command that reads or deletes them takes. */
const BLOBS: readonly OptionDeclaration[] = [
  { flags: '--blob-store <kind>', description: 'where bundles are kept', choices: ['local', 's3'], default: 'local' },
  { flags: '--blob-dir <dir>', description: 'local store directory (default: <data>/blobs)' },
  {
    flags: '--s3-endpoint <url>',
    description:
      'S3-compatible endpoint (default: AWS, from the region); credentials from the AWS SDK chain: environment, ' +
      'profiles, web identity, container or instance role',
  },
  { flags: '--s3-bucket <name>', description: 'S3 bucket' },
  {
    flags: '--s3-region <region>',
    description: 'S3 region (default: AWS_REGION, AWS_DEFAULT_REGION, else the AWS profile)',
  },
  { flags: '--s3-path-style', description: 'path-style bucket URLs, as most S3-compatible servers need' },
];

const serve: CommandDeclaration = {
  usage: 'serve',
  summary: 'serve the Control API (governance config, client status, session uploads, sharing) until stopped',
  options: [
    { flags: '--listen <host:port>', description: 'address to listen on', default: '127.0.0.1:8080' },
    ...DATA,
    {
      flags: '--public-url <url>',
      description: 'the origin clients reach this server at, when it differs from --listen',
    },
    {
      flags: '--retention-days <n>',
      description: 'keep uploaded bundles this many days after completion (default 90)',
    },
    { flags: '--upload-url-ttl <seconds>', description: 'how long an upload URL stays valid (default 900)' },
    {
      flags: '--gc-interval <minutes>',
      description:
        "delete expired and deleted sessions' bundles in the background this often (default 60; 0: never, run " +
        'control-plane gc instead)',
    },
    {
      flags: '--log-format <format>',
      description:
        'one line per request on stderr, as text or as JSON objects (default: BLUE_CONTROL_LOG_FORMAT, else text)',
      choices: ['text', 'json'],
    },
    {
      flags: '--oidc-issuer <url>',
      description: "sign people's browsers in with this OpenID Connect provider (https; BLUE_CONTROL_OIDC_ISSUER)",
    },
    {
      flags: '--oidc-client-id <id>',
      description:
        'the client id registered there, redirect URI <public url>/auth/oidc/callback (BLUE_CONTROL_OIDC_CLIENT_ID)',
    },
    {
      flags: '--oidc-client-secret-file <file>',
      description: 'a 0600 file holding the client secret (or BLUE_CONTROL_OIDC_CLIENT_SECRET)',
    },
    {
      flags: '--oidc-admin-group <name>',
      description:
        "members of this group (the provider's groups claim) are administrators (BLUE_CONTROL_OIDC_ADMIN_GROUP)",
    },
    {
      flags: '--oidc-scope <scopes>',
      description: 'scopes asked for (default "openid email profile"; add groups where the provider needs it)',
    },
    { flags: '--oidc-name <name>', description: 'the provider as the sign-in button names it (default: its host)' },
    {
      flags: '--oidc-allow-unverified-email',
      description:
        'take an e-mail the provider does not mark verified for a first sign-in (some providers never say; only ' +
        "where nobody can set another's address)",
    },
    ...BLOBS,
  ],
  help:
    `
Metadata lives in <data>/control.db (SQLite), or in PostgreSQL with --database-url: then any number of serve
processes may share the database and the blob store (S3), each stateless. Add users and publish policies with the
other control-plane commands, also while servers run. On a database without users, serve creates the administrator
admin@localhost (its token in <data>/admin-token, 0600, never printed) and prints how to log in, and a one-time link
that signs a browser in to the dashboard; without a policy, it publishes a default one whose presign_url is this
server's own (--public-url, else the --listen address).

People sign in with \`blue-agent login\` (a code approved at <public url>/device) and in browsers with one-time
links (\`control-plane users link EMAIL\`), or through the organisation's OpenID provider with --oidc-*: users are
made on first sign-in by their verified e-mail; --oidc-admin-group makes that group's members administrators.
Agents that run \`blue-agent run\` hear of a new policy at once (GET /governance-config/events).

Each request is logged on stderr (BLUE_AGENT_LOG_LEVEL=error: unexpected errors only), as JSON with --log-format json.
GET /metrics answers Prometheus' text format (requests, latencies, upload bytes, database pool, gc, the process).

Examples:
  blue-agent control-plane serve --listen 0.0.0.0:8080 --data /var/lib/blue-control ` +
    `--public-url https://control.example.com
  BLUE_CONTROL_DATABASE_URL=postgres://blue:…@db:5432/blue blue-agent control-plane serve --listen 0.0.0.0:8080 \\
    --public-url https://control.example.com --blob-store s3 --s3-bucket blue-sessions --log-format json`,
  run: async (ctx, opts: ServeOptions) => (await import('../control-plane.js')).serveCommand(ctx, opts),
};

const users: CommandDeclaration = {
  usage: 'users',
  summary: 'manage the users (and their bearer tokens) of a Control API',
  subcommands: [
    {
      usage: 'add <email>',
      summary: 'add a user and print their bearer token once (only its hash is stored)',
      options: [{ flags: '--admin', description: 'an administrator: sees every session upload' }, ...DATA, JSON_OUTPUT],
      run: async (ctx, email: string, opts: DataOptions & { admin?: boolean }) =>
        (await import('../control-plane.js')).usersAddCommand(ctx, email, opts),
    },
    {
      usage: 'link <email>',
      summary:
        "print a one-time link that signs a user's browser in to the dashboard (15 minutes; without an identity " +
        'provider)',
      options: [...DATA, JSON_OUTPUT],
      run: async (ctx, email: string, opts: DataOptions) =>
        (await import('../control-plane.js')).usersLinkCommand(ctx, email, opts),
    },
    {
      usage: 'list',
      summary: 'list the users',
      options: [...DATA, JSON_OUTPUT],
      run: async (ctx, opts: DataOptions) => (await import('../control-plane.js')).usersListCommand(ctx, opts),
    },
  ],
};

const tokens: CommandDeclaration = {
  usage: 'tokens',
  summary: "list, add and revoke users' tokens: personal tokens and device sign-ins (`blue-agent login`)",
  subcommands: [
    {
      usage: 'list [email]',
      summary:
        "list every user's tokens, or one user's: id, user, kind (personal or device), active, revoked or lapsed, " +
        'last use',
      options: [...DATA, JSON_OUTPUT],
      run: async (ctx, email: string | undefined, opts: DataOptions) =>
        (await import('../control-plane.js')).tokensListCommand(ctx, email, opts),
    },
    {
      usage: 'add <email>',
      summary: 'make a new personal token for a user (for automation) and print it once',
      options: [
        { flags: '--label <text>', description: 'what the token is for, shown in the list' },
        ...DATA,
        JSON_OUTPUT,
      ],
      run: async (ctx, email: string, opts: DataOptions & { label?: string }) =>
        (await import('../control-plane.js')).tokensAddCommand(ctx, email, opts),
    },
    {
      usage: 'revoke <id>',
      summary: 'revoke a token (its id from `tokens list`): it fails at the next request, on every replica',
      options: [...DATA, JSON_OUTPUT],
      run: async (ctx, id: string, opts: DataOptions) =>
        (await import('../control-plane.js')).tokensRevokeCommand(ctx, id, opts),
    },
  ],
};

const policy: CommandDeclaration = {
  usage: 'policy',
  summary: 'manage governance policy revisions',
  subcommands: [
    {
      usage: 'publish <file>',
      summary: 'validate a policy (YAML or JSON) and make it the next revision; the server sets `revision`',
      options: [
        { flags: '--confirm', description: 'publish even though the revision stops session capture on every machine' },
        ...DATA,
        JSON_OUTPUT,
      ],
      help: `
A key the policy schema does not name is refused, with the nearest known one ("did you mean session_upload?");
Blue's fields blue-agent does not act on (packages, gateway, telemetry, a harness's managed_config, mcp,
package_overrides) are accepted. A revision that stops session capture on every machine (it drops session_upload
while the current revision has it, or allows no harness) is refused with POLICY_CONFIRMATION_REQUIRED unless
--confirm: every machine would remove its capture hooks at its next reconcile.`,
      run: async (ctx, file: string, opts: DataOptions & { confirm?: boolean }) =>
        (await import('../control-plane.js')).policyPublishCommand(ctx, file, opts),
    },
    {
      usage: 'show',
      summary: 'print the current policy revision (or --revision ID) exactly as it was published',
      options: [
        { flags: '--revision <id>', description: 'the revision to show (its id, as `policy publish` printed it)' },
        ...DATA,
        {
          flags: '--json',
          description:
            'print {revision, published_at, etag, text, document} as JSON: the text as published and the document ' +
            'served',
        },
      ],
      run: async (ctx, opts: DataOptions & { revision?: string }) =>
        (await import('../control-plane.js')).policyShowCommand(ctx, opts),
    },
  ],
};

const gc: CommandDeclaration = {
  usage: 'gc',
  summary: 'delete stored bundles past their retention deadline, and those of deleted sessions still stored',
  options: [...DATA, JSON_OUTPUT, ...BLOBS],
  run: async (ctx, opts: DataOptions & BlobOptions) => (await import('../control-plane.js')).gcCommand(ctx, opts),
};

const reindex: CommandDeclaration = {
  usage: 'reindex',
  summary: 'rebuild the full-text search index from the stored bundles (resumable)',
  options: [
    ...DATA,
    { flags: '--restart', description: 'start from the first session, not where an interrupted run stopped' },
    JSON_OUTPUT,
    ...BLOBS,
  ],
  help: `
Reads each session's current upload from the blob store, one at a time, and indexes what it says with its title and
summary, as completing an upload does. Needed after an upgrade that indexes more than the release before it, or to
rebuild an index. Progress goes to stderr. The position is saved after each session: a run that is stopped goes on
from there when run again (--restart starts over). It may run while servers run.`,
  run: async (ctx, opts: DataOptions & BlobOptions & { restart?: boolean }) =>
    (await import('../control-plane.js')).reindexCommand(ctx, opts),
};

export const controlPlane: CommandDeclaration = {
  usage: 'control-plane',
  summary: 'run and administer the reference Control API server',
  subcommands: [serve, users, tokens, policy, gc, reindex],
};

/**
 * The command line. Each command lives in its own module, loaded only when it runs, so the hot paths start fast.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { createContext, type Context } from '../context.js';
import { BlueError, EXIT_FAILURE, EXIT_USAGE, toBlueError, usageError } from '../errors.js';
import { HARNESS_DISPLAY_NAMES, HARNESSES } from '../harnesses/names.js';
import { reportError } from './output.js';

export { reportError } from './output.js';

export interface RunState {
  exitCode: number;
}

/**
 * What the help of `doctor` and `demo` says about the harnesses (the checks they add, the demo's harness), loaded
 * only when one of those commands is named: every other command, the capture hook first, starts without adapters.
 */
let doctorHarnessChecks: readonly string[] = [];
let demoHelp = { variables: '', name: '', binary: '', hookFile: '' };

async function loadHelpFacts(argv: readonly string[]): Promise<void> {
  if (argv.includes('doctor')) ({ HARNESS_CHECK_IDS: doctorHarnessChecks } = await import('../doctor/checks.js'));
  if (argv.includes('demo')) {
    const { ADAPTERS, demoHarness } = await import('../harnesses/index.js');
    const played = demoHarness();
    const variables = Object.values(ADAPTERS).flatMap((a) => a.environment);
    demoHelp = { variables: variables.map((v) => `${v}, `).join('').trimEnd(), name: played.displayName, binary: played.demo.binary, hookFile: played.demo.hookFile };
  }
}

export function buildProgram(ctx: Context, state: RunState): Command {
  const program = new Command('blue-agent')
    .description(
      `Keeps coding-agent harnesses (${HARNESSES.map((h) => HARNESS_DISPLAY_NAMES[h]).join(', ')}) wired to the organisation's session-capture policy.`,
    )
    .version(ctx.self.version, '-V, --version', 'print the blue-agent version')
    .configureOutput({
      writeOut: (s) => ctx.stdout.write(s),
      writeErr: (s) => ctx.stderr.write(s),
      // Parse errors are reported by main() in the standard form (and as JSON with --json), never in commander's own.
      outputError: () => undefined,
    })
    .exitOverride();
  program.addHelpText(
    'after',
    `
Exit codes: 0 success, 1 failure (details on stderr, or in the --json document), 2 usage error,
3 \`run\`: another agent is already running for this user (LOCK_TIMEOUT; any other LOCK_TIMEOUT exits 1).
\`resume\` exits with the launched harness's own status; \`resume\`, \`demo\` and \`login\` exit 130 or 143 when
interrupted by SIGINT (Ctrl-C) or SIGTERM.
Environment: BLUE_AGENT_HOME (state), BLUE_AGENT_CONFIG (config file), BLUE_AGENT_CONTROL_URL, BLUE_AGENT_TOKEN.`,
  );

  const harnessOption = new Option('--harness <name>', `only this harness, repeatable (${HARNESSES.join(', ')})`).argParser(
    (value: string, previous: string[] | undefined) => {
      if (!(HARNESSES as readonly string[]).includes(value)) {
        throw new InvalidArgumentError(`unknown harness "${value}"; use one of ${HARNESSES.join(', ')}.`);
      }
      return [...(previous ?? []), value];
    },
  );
  program
    .command('reconcile')
    .description('bring the managed session_upload hooks in every harness\'s native config in line with the policy')
    .option('--dry-run', 'compute the same plan and show it, writing nothing at all (not even caches)')
    .option('--json', 'print the report as JSON')
    .option('--policy <file>', 'use this policy file (YAML or JSON) instead of the Control API')
    .addOption(harnessOption)
    .addHelpText(
      'after',
      `
For every harness: is it installed, which version and profile, and should it carry the managed capture hook?
Files that change are shown as unified diffs. Only entries that run \`blue-agent capture\` are ever added, updated
or removed; everything else in the file keeps its bytes.

Examples:
  blue-agent reconcile --dry-run --policy policy.yaml
  blue-agent reconcile --json ${HARNESSES.slice(0, 2).map((h) => `--harness ${h}`).join(' ')}`,
    )
    .action(async (opts: { dryRun?: boolean; json?: boolean; policy?: string; harness?: string[] }) => {
      const { reconcileCommand } = await import('./reconcile.js');
      state.exitCode = await reconcileCommand(ctx, opts);
    });

  const profiles = program.command('profiles').description('inspect the compatibility profiles');
  profiles
    .command('list')
    .description('list every harness version interval with its profile, operations and certification ceiling')
    .option('--json', 'print as JSON')
    .action(async (opts: { json?: boolean }) => {
      const { profilesListCommand } = await import('./profiles.js');
      state.exitCode = await profilesListCommand(ctx, opts);
    });
  profiles
    .command('check')
    .description('check the profiles for overlapping intervals, bad bounds, missing ceilings and unknown operations')
    .option('--json', 'print as JSON')
    .action(async (opts: { json?: boolean }) => {
      const { profilesCheckCommand } = await import('./profiles.js');
      state.exitCode = await profilesCheckCommand(ctx, opts);
    });

  program
    .command('capture')
    .description('the session-end hook: spool the ended session for upload (called by the harness, not by people)')
    .requiredOption('--harness <name>', `the harness calling (${HARNESSES.join(', ')})`)
    .requiredOption('--profile <profile>', 'the compatibility profile the hook was installed for')
    .addHelpText(
      'after',
      `
Reads the harness's lifecycle payload (JSON, at most 1 MiB) from stdin, writes a small intake record into the spool
and starts a detached worker that builds the bundle, then exits at once: the harness is never kept waiting.
A refused or failed capture is logged in the state directory's capture.log.`,
    )
    .action(async (opts: { harness: string; profile: string }) => {
      const { captureCommand } = await import('./capture.js');
      state.exitCode = await captureCommand(ctx, opts);
    });

  program
    .command('drain')
    .description('process the spool now: build bundles for waiting captures, then upload the built ones')
    .option('--once', 'one pass over what is waiting now, even if more captures arrive meanwhile')
    .option('--json', 'print what was done as JSON')
    .option('--quiet', 'print nothing (for the detached worker)')
    .option('--discard', 'when the governance policy disables session upload, delete the built bundles instead of keeping them')
    .option('--linger', 'wait up to 30 s for harnesses whose captures wait for them to exit, then build those (what the capture hook starts)')
    .addHelpText(
      'after',
      `
Builds a bundle for every waiting capture, then uploads every built bundle that is due to the Control API
(control_url or BLUE_AGENT_CONTROL_URL, with the token from blue-agent login or BLUE_AGENT_TOKEN). An uploaded
bundle is removed from the spool once the Control API has verified it; a failed upload is retried by a later
drain (see \`blue-agent spool list\` for attempts and the last error).

Before uploading, the current governance policy is checked. When it has no session_upload block, session
upload is disabled: nothing is uploaded and the built bundles are KEPT in the spool, so they can still be
uploaded if upload is enabled again. With --discard they are deleted instead (they cannot be recovered).
With no Control API configured, nothing is uploaded and the bundles stay in the spool.

Without --once, a drain makes another pass when captures arrived while it ran (at most 5 passes), so the
last capture of a burst does not wait for the next drain. Records waiting for a later retry are left for a later
drain either way: a drain never sleeps through a back-off. A capture whose harness fires its hook after every turn
(its profile says wait_for_exit) is built once that harness process has exited; until then it is listed as deferred,
which is not a failure. A record another drain is building or uploading is listed as held, with that drain's pid.

Exit codes: 0 everything went through; 1 a record failed, is to be retried or left waiting, or the drain stopped
early; 75 nothing failed, but another drain held records: run it again later to learn their outcome.`,
    )
    .action(async (opts: { once?: boolean; json?: boolean; quiet?: boolean; discard?: boolean; linger?: boolean }) => {
      const { drainCommand } = await import('./drain.js');
      state.exitCode = await drainCommand(ctx, opts);
    });

  program
    .command('import <source> <file>')
    .description('import conversations from another tool as sessions on the Control API (source: chatgpt-export)')
    .option('--json', 'print the report as JSON')
    .addHelpText(
      'after',
      `
chatgpt-export: the conversations.json of a ChatGPT data export (Settings, Data controls, Export data; at most
256 MiB, read as a stream). Each conversation becomes a session (provider chatgpt_export, not resumable) with its
title and the messages of the thread ChatGPT shows, found by search. Importing again stores nothing new for a
conversation that did not change, and a new revision of the same session for one that did.

Example:
  blue-agent import chatgpt-export ~/Downloads/chatgpt/conversations.json`,
    )
    .action(async (source: string, file: string, opts: { json?: boolean }) => {
      const { importCommand } = await import('./import.js');
      state.exitCode = await importCommand(ctx, source, file, opts);
    });

  program
    .command('backfill')
    .description('capture every local session that was never uploaded, oldest first (history from before blue-agent)')
    .addOption(harnessOption)
    .option('--since <date>', 'only sessions changed since then: a date (2026-11-01), a time with its offset, or days back (30d)')
    .option('--dry-run', 'list what would be captured; capture nothing')
    .option('--rate <n>', `at most this many sessions per minute (default ${120})`)
    .option('--policy <file>', 'use this policy file (YAML or JSON) instead of the Control API')
    .option('--json', 'print the report as JSON')
    .addHelpText(
      'after',
      `
Finds every session of every harness whose sessions are captured here (installed, allowed by the policy, a
supported version) and captures those never uploaded: not captured by this machine since they last changed, and not
on the Control API with a capture newer than their last change. Oldest first, in batches of 10, each built and
uploaded before the next (progress on stderr), at most --rate sessions a minute. A session written by a harness
version older than its capture profile is uploaded as not resumable. Running it again captures only what changed.

The running agent does the same once after it is installed when the policy says session_upload.backfill: true.

Examples:
  blue-agent backfill --dry-run
  blue-agent backfill --since 30d --json`,
    )
    .action(async (opts: { harness?: string[]; since?: string; dryRun?: boolean; json?: boolean; policy?: string; rate?: string }) => {
      const { backfillCommand } = await import('./backfill.js');
      state.exitCode = await backfillCommand(ctx, opts);
    });

  program
    .command('login')
    .description('sign this machine in to a Control API: approve a code in a browser (device flow), or save a token from stdin')
    .option('--control-url <url>', 'the Control API base URL (http or https, may carry a path prefix); default: where this machine signed in before')
    .option('--no-browser', 'print where to approve the code without opening a browser')
    .option('--token-stdin', 'instead of the device flow, read a token an administrator made from stdin (never from argv: every user sees argv)')
    .option('--offline', 'with --token-stdin: when the Control API cannot be reached, save the token unchecked instead of failing')
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      `
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
    )
    .action(async (opts: { controlUrl?: string; tokenStdin?: boolean; offline?: boolean; browser?: boolean; json?: boolean }) => {
      const { loginCommand } = await import('./login.js');
      state.exitCode = await loginCommand(ctx, opts);
    });

  program
    .command('logout')
    .description('sign this machine out: remove the saved token or credentials, and end a device sign-in on the Control API')
    .option('--revoke', 'also revoke a token that came from --token-stdin (by default it is only removed here: it may be in use elsewhere)')
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      `
Removes the token file (<state dir>/token, or token_file from the config). A device sign-in (\`blue-agent login\`
without --token-stdin) belongs to this machine alone: it is revoked on the Control API first, so its tokens stop
working everywhere. A token an administrator made (\`login --token-stdin\`) may be in use elsewhere, so it is
revoked only with --revoke. Revoking is best effort: when the Control API cannot be reached or does not revoke, the
credentials are still removed here and the report says what is left to do. control_url stays saved, so that
\`blue-agent login\` signs in there again. Nothing saved is not an error (exit 0).

Examples:
  blue-agent logout
  blue-agent logout --revoke --json`,
    )
    .action(async (opts: { revoke?: boolean; json?: boolean }) => {
      const { logoutCommand } = await import('./logout.js');
      state.exitCode = await logoutCommand(ctx, opts);
    });

  const sessions = program.command('sessions').description('list, show, share, delete and export the captured sessions on the Control API');
  sessions
    .command('list')
    .description('your sessions, newest first (with --all: every session the Control API lets you see), with how many there are')
    .option('--q <text>', 'search what sessions say, their titles, summaries, tags, folders and ids (every word must match)')
    .addOption(harnessOption)
    .option('--provider <name>', 'only sessions from this provider (a harness, or where a stored or imported record came from: chatgpt_export); repeatable', (value: string, previous: string[] | undefined) => [...(previous ?? []), value])
    .option('--tag <tag>', 'only sessions carrying this tag')
    .option('--limit <n>', 'at most this many rows, 1 to 200 (default 20)')
    .option('--offset <n>', 'skip this many rows first (default 0)')
    .option('--all', 'every session you may see, not only your own')
    .option('--json', 'print as JSON: {all, total, offset, limit, truncated, sessions}')
    .action(async (opts: { q?: string; harness?: string[]; provider?: string[]; tag?: string; limit?: string; offset?: string; all?: boolean; json?: boolean }) => {
      const { sessionsListCommand } = await import('./sessions.js');
      state.exitCode = await sessionsListCommand(ctx, opts);
    });
  sessions
    .command('store')
    .description('store a session from stdin on the Control API: a transcript, notes, a conversation (never resumable)')
    .option('--title <title>', 'its title (required, not blank, at most 256 characters)')
    .option('--provider <name>', 'where it came from (required): a harness name or any other, lower-case letters, digits, _, . and -')
    .option('--tag <tag>', 'a word to find and filter it by (sessions list --tag); repeatable, at most 32', (value: string, previous: string[] | undefined) => [...(previous ?? []), value])
    .option('--provider-session-id <id>', "the provider's own id of the session: storing it again updates the same session")
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      `
The content is read from stdin (UTF-8 text, not empty, at most 16 MiB). Every flag is checked first, and a problem
names the flag. Without --provider-session-id the session is named by what it says, so storing the same content
again stores nothing new. Stored sessions are found by search and by their tags, shown in the dashboard, shared,
exported and deleted like any other; they cannot be resumed.

Example:
  blue-agent sessions store --title "Incident review" --provider notes --tag incident --tag q3 < review.md`,
    )
    .action(async (opts: { title?: string; provider?: string; tag?: string[]; providerSessionId?: string; json?: boolean }) => {
      const { sessionsStoreCommand } = await import('./sessions.js');
      state.exitCode = await sessionsStoreCommand(ctx, opts);
    });
  sessions
    .command('show <id>')
    .description('one session: metadata, uploads, sharing, retention (an id or a prefix of 8 or more characters)')
    .option('--json', 'print as JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const { sessionsShowCommand } = await import('./sessions.js');
      state.exitCode = await sessionsShowCommand(ctx, id, opts);
    });
  sessions
    .command('share <id>')
    .description('set who may view, download and resume one of your sessions')
    .requiredOption('--mode <mode>', 'private, workspace or selected')
    .option('--user <email>', 'a recipient (e-mail address or user id), only with --mode selected (which needs at least one); repeatable', (value: string, previous: string[] | undefined) => [...(previous ?? []), value])
    .option('--json', 'print as JSON')
    .addHelpText(
      'after',
      `
Only the session's owner may change its sharing. --user is accepted only with --mode selected; the flags are checked
before anything is sent. Prints the resulting sharing.

Example:
  blue-agent sessions share 3d394c86 --mode selected --user ada@example.com`,
    )
    .action(async (id: string, opts: { mode: string; user?: string[]; json?: boolean }) => {
      const { sessionsShareCommand } = await import('./sessions.js');
      state.exitCode = await sessionsShareCommand(ctx, id, opts);
    });
  sessions
    .command('delete <id>')
    .description('delete one of your sessions from the Control API for good: every revision and its stored bundles')
    .option('--yes', 'delete it (without this flag, only say what would be deleted)')
    .option('--json', 'print as JSON')
    .addHelpText(
      'after',
      `
The owner deletes their own sessions; an administrator any. Without --yes nothing is deleted: the command names the
session it would delete and exits 2. The deletion is recorded in the Control API's audit log.

Example:
  blue-agent sessions delete 3d394c86 --yes`,
    )
    .action(async (id: string, opts: { yes?: boolean; json?: boolean }) => {
      const { sessionsDeleteCommand } = await import('./sessions.js');
      state.exitCode = await sessionsDeleteCommand(ctx, id, opts);
    });
  sessions
    .command('export <id-or-file>')
    .description('render a session as markdown (readable conversation) or json (manifest and metadata)')
    .option('--format <format>', 'markdown or json', 'markdown')
    .option('--out <file>', 'write to this file (mode 0600) instead of stdout')
    .addHelpText(
      'after',
      `
The argument is a session on the Control API (an id or a prefix of 8 or more characters; its bundle is downloaded and
verified) or, when it names an existing file, a local bundle, verified the same way. --out creates the file with mode
0600 (a file that already exists is overwritten and keeps its mode).

Examples:
  blue-agent sessions export 3d394c86 --out session.md
  blue-agent sessions export ./session.bundle --format json`,
    )
    .action(async (idOrFile: string, opts: { format: string; out?: string }) => {
      const { sessionsExportCommand } = await import('./sessions.js');
      state.exitCode = await sessionsExportCommand(ctx, idOrFile, opts);
    });

  program
    .command('resume [id]')
    .description('pick one of your (or shared) sessions, restore it into this machine\'s native layout and resume it')
    .option('--dest <dir>', 'restore for this existing directory instead of asking')
    .option('--yes', 'answer yes to the final prompt (for scripts); a repository mismatch is never accepted by --yes: confirm it at a terminal')
    .option('--no-launch', 'restore, then print the resume command instead of running it')
    .option('--json', 'print the result as JSON; needs an id, never asks; without --yes only the plan, nothing written')
    .addHelpText(
      'after',
      `
Steps: pick the session (or name it by its id or an 8+ character prefix), choose the directory to resume in,
download it through a fresh short-lived URL, verify it, check that this machine can resume it (the harness is
installed, its version is allowed for the session's profile, the directory is the same repository, no different
local copy of the session), ask before writing (default No), restore every file at once or none, and run the
harness's own resume there. Cancelling at any question, or any failure before the restore, changes nothing.

Examples:
  blue-agent resume                                   # pick from a list, on a terminal
  blue-agent resume 3f2a91c0 --dest ~/src/shop        # by id prefix, into that directory
  blue-agent resume 3f2a91c0 --dest . --yes --no-launch   # scripts: restore, print the command`,
    )
    .action(async (id: string | undefined, opts: { dest?: string; yes?: boolean; launch?: boolean; json?: boolean }) => {
      const { resumeCommand } = await import('./resume.js');
      state.exitCode = await resumeCommand(ctx, id, opts);
    });

  program
    .command('run')
    .description('run as the workstation agent: keep the hooks in line with the policy, repair drift, drain on a schedule')
    .addHelpText(
      'after',
      `
Normally started by the service manager (\`blue-agent service install\`). One instance per user; SIGTERM or SIGINT
stop it after the write in progress, SIGHUP reloads the agent config. Logs are JSON lines on stdout under a service
manager, otherwise written to run.log in the state directory.`,
    )
    .action(async () => {
      const { runCommand } = await import('./run.js');
      state.exitCode = await runCommand(ctx);
    });

  const service = program.command('service').description('install, remove or inspect the user service that runs `blue-agent run`');
  for (const action of ['install', 'uninstall', 'status'] as const) {
    const command = service
      .command(action)
      .description(
        action === 'install'
          ? 'write the systemd user unit (Linux) or LaunchAgent (macOS) and start it'
          : action === 'uninstall'
            ? 'stop the service and remove its unit'
            : 'show whether the service is installed and running',
      );
    if (action === 'install') command.option('--dry-run', 'print the unit and the commands, change nothing');
    if (action === 'uninstall') command.option('--dry-run', 'show what would be stopped and removed, change nothing');
    command.option('--json', 'print as JSON');
    if (action === 'uninstall') command.option('--remove-hooks', 'also stop a running agent and remove the managed hooks from every harness config');
    command.action(async (opts: { dryRun?: boolean; json?: boolean; removeHooks?: boolean }) => {
      const { serviceCommand } = await import('./service.js');
      state.exitCode = await serviceCommand(ctx, action, opts);
    });
  }

  program
    .command('status')
    .description('policy revision and age, per-harness state, spool, last drain, service state')
    .option('--json', 'print as JSON')
    .addHelpText(
      'after',
      `
Read-only: never contacts the network or writes; always exits 0; see \`doctor\` for checks that fail.

Example:
  blue-agent status --json`,
    )
    .action(async (opts: { json?: boolean }) => {
      const { statusCommand } = await import('./status.js');
      state.exitCode = await statusCommand(ctx, opts);
    });

  program
    .command('doctor')
    .description('check this machine\'s set-up and print the fix for each problem found')
    .option('--json', 'print as JSON')
    .addHelpText(
      'after',
      // The checks harnesses add are known once the doctor module is loaded (loadHelpFacts).
      () => `
Exits 1 when any check fails, else 0. Checks: node, config, control-api, token, policy, spool,
harness:NAME (one per harness; \`harnesses\` when they cannot be examined), ${[...doctorHarnessChecks, 'service'].join(', ')}.
Writes nothing, not even the policy cache.

Example:
  blue-agent doctor --json`,
    )
    .action(async (opts: { json?: boolean }) => {
      const { doctorCommand } = await import('./doctor.js');
      state.exitCode = await doctorCommand(ctx, opts);
    });

  const spool = program.command('spool').description('inspect the local spool of captured sessions');
  spool
    .command('list')
    .description('every spool record with its state, session, size, attempts and last error')
    .option('--json', 'print as JSON')
    .action(async (opts: { json?: boolean }) => {
      const { spoolListCommand } = await import('./spool.js');
      state.exitCode = await spoolListCommand(ctx, opts);
    });

  const bundle = program.command('bundle').description('work with blue-session-bundle-v1 files');
  bundle
    .command('verify <file>')
    .description('check everything a restore relies on; exits 1 naming the first violation')
    .option('--json', 'print the result as JSON')
    .action(async (file: string, opts: { json?: boolean }) => {
      const { bundleVerifyCommand } = await import('./bundle.js');
      state.exitCode = await bundleVerifyCommand(ctx, file, opts);
    });
  bundle
    .command('inspect <file>')
    .description('print the manifest of a bundle')
    .option('--json', 'print the manifest as JSON')
    .action(async (file: string, opts: { json?: boolean }) => {
      const { bundleInspectCommand } = await import('./bundle.js');
      state.exitCode = await bundleInspectCommand(ctx, file, opts);
    });
  bundle
    .command('extract <file> <dir>')
    .description('verify a bundle, then extract manifest.json and its files into an empty or new directory')
    .option('--json', 'print what was extracted as JSON')
    .action(async (file: string, dir: string, opts: { json?: boolean }) => {
      const { bundleExtractCommand } = await import('./bundle.js');
      state.exitCode = await bundleExtractCommand(ctx, file, dir, opts);
    });
  bundle
    .command('create')
    .description('build a bundle from a session on this machine (for debugging captures)')
    .requiredOption('--harness <name>', `the harness (${HARNESSES.join(', ')})`)
    .requiredOption('--session <id>', 'the native session id')
    .requiredOption('--out <file>', 'where to write the bundle')
    .option('--profile <profile>', 'the compatibility profile (default: the one for the installed version)')
    .option('--cwd <dir>', "the session's working directory (some harnesses find sessions by it)")
    .option('--transcript <file>', 'the transcript path, as a hook payload would give it')
    .option('--json', 'print the manifest, size and SHA-256 as JSON')
    .addHelpText(
      'after',
      `
--harness, --session and --out are required. The bundle is built exactly as the capture worker builds it.

Example:
  blue-agent bundle create --harness ${HARNESSES[0]} --session 3d394c86-0c1e-4a57-9d43-0f0a3bb1e2c1 --out session.bundle`,
    )
    .action(async (opts: { harness: string; session: string; out: string; profile?: string; cwd?: string; transcript?: string; json?: boolean }) => {
      const { bundleCreateCommand } = await import('./bundle-create.js');
      state.exitCode = await bundleCreateCommand(ctx, opts);
    });

  program
    .command('demo')
    .description('run the whole loop on this machine, in throwaway HOMEs: Control API, login, reconcile, capture, drain, list, restore')
    .option('--json', 'print one JSON document at the end instead of a line per step')
    .option('--keep', 'keep the temporary directories (both HOMEs, the Control API data) for inspection')
    .option('--port <port>', 'the loopback port of the demo Control API (default: a free one)', (value: string) => {
      const port = /^\d{1,5}$/.test(value) ? Number(value) : Number.NaN;
      if (!(port >= 1 && port <= 65535)) throw new InvalidArgumentError(`"${value}" is not a port (1 to 65535).`);
      return port;
    })
    .addHelpText(
      'after',
      () => `
Shows capture, upload and restore end to end without a model API and without touching this machine's own setup.
Everything happens in a temporary directory: machine A and machine B are two throwaway HOMEs, and every child process
gets an environment built from scratch (your HOME, XDG_* directories, ${demoHelp.variables}
BLUE_AGENT_* and proxy variables are never passed on or read).

Real: the reference Control API (in this process, on 127.0.0.1, its data in the temporary directory), and, as child
processes of this blue-agent: \`login\` on A and B, \`reconcile\` on A (the managed SessionEnd hook in A's ${demoHelp.name}
${demoHelp.hookFile}), the hook command exactly as reconcile wrote it (run with sh -c, the SessionEnd payload on stdin),
the capture worker and \`drain\` (presign, upload, complete), \`sessions list\`, and \`resume ID --dest DIR --yes
--no-launch\` on B, which restores the session and prints the native resume command.
Recorded: the ${demoHelp.name} session (recorded offline from the real CLI, shipped with blue-agent), and \`${demoHelp.binary}\` on
PATH, a stand-in that only answers --version with the version the session was recorded with.

Each step prints one numbered line (what it did, where, how long) and is bounded in time. A failed step is reported
as DEMO_STEP_FAILED naming the step and the code of its cause; Ctrl-C stops the running step and cleans up (exit 130).
The temporary directory is removed at the end unless --keep.

Examples:
  blue-agent demo
  blue-agent demo --keep --json`,
    )
    .action(async (opts: { json?: boolean; keep?: boolean; port?: number }) => {
      const { demoCommand } = await import('./demo.js');
      state.exitCode = await demoCommand(ctx, opts);
    });

  const controlPlane = program.command('control-plane').description('run and administer the reference Control API server');
  const dataOption = (): Option => new Option('--data <dir>', 'the server data directory (default: BLUE_CONTROL_DATA, else $XDG_DATA_HOME/blue-agent/control)');
  const databaseOption = (): Option =>
    new Option('--database-url <url>', 'PostgreSQL instead of SQLite in the data directory, e.g. postgres://blue@db:5432/blue (default: BLUE_CONTROL_DATABASE_URL)');
  const blobOptions = (command: Command): Command =>
    command
      .addOption(new Option('--blob-store <kind>', 'where bundles are kept').choices(['local', 's3']).default('local'))
      .option('--blob-dir <dir>', 'local store directory (default: <data>/blobs)')
      .option('--s3-endpoint <url>', 'S3-compatible endpoint (default: AWS, from the region); credentials from the AWS SDK chain: environment, profiles, web identity, container or instance role')
      .option('--s3-bucket <name>', 'S3 bucket')
      .option('--s3-region <region>', 'S3 region (default: AWS_REGION, AWS_DEFAULT_REGION, else the AWS profile)')
      .option('--s3-path-style', 'path-style bucket URLs, as most S3-compatible servers need');
  blobOptions(
    controlPlane
      .command('serve')
      .description('serve the Control API (governance config, client status, session uploads, sharing) until stopped')
      .option('--listen <host:port>', 'address to listen on', '127.0.0.1:8080')
      .addOption(dataOption())
      .addOption(databaseOption())
      .option('--public-url <url>', 'the origin clients reach this server at, when it differs from --listen')
      .option('--retention-days <n>', 'keep uploaded bundles this many days after completion (default 90)')
      .option('--upload-url-ttl <seconds>', 'how long an upload URL stays valid (default 900)')
      .option('--gc-interval <minutes>', 'delete expired and deleted sessions\' bundles in the background this often (default 60; 0: never, run control-plane gc instead)')
      .addOption(new Option('--log-format <format>', 'one line per request on stderr, as text or as JSON objects (default: BLUE_CONTROL_LOG_FORMAT, else text)').choices(['text', 'json']))
      .option('--oidc-issuer <url>', "sign people's browsers in with this OpenID Connect provider (https; BLUE_CONTROL_OIDC_ISSUER)")
      .option('--oidc-client-id <id>', 'the client id registered there, redirect URI <public url>/auth/oidc/callback (BLUE_CONTROL_OIDC_CLIENT_ID)')
      .option('--oidc-client-secret-file <file>', 'a 0600 file holding the client secret (or BLUE_CONTROL_OIDC_CLIENT_SECRET)')
      .option('--oidc-admin-group <name>', "members of this group (the provider's groups claim) are administrators (BLUE_CONTROL_OIDC_ADMIN_GROUP)")
      .option('--oidc-scope <scopes>', 'scopes asked for (default "openid email profile"; add groups where the provider needs it)')
      .option('--oidc-name <name>', 'the provider as the sign-in button names it (default: its host)')
      .option('--oidc-allow-unverified-email', "take an e-mail the provider does not mark verified for a first sign-in (some providers never say; only where nobody can set another's address)"),
  )
    .addHelpText(
      'after',
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
  blue-agent control-plane serve --listen 0.0.0.0:8080 --data /var/lib/blue-control --public-url https://control.example.com
  BLUE_CONTROL_DATABASE_URL=postgres://blue:…@db:5432/blue blue-agent control-plane serve --listen 0.0.0.0:8080 \\
    --public-url https://control.example.com --blob-store s3 --s3-bucket blue-sessions --log-format json`,
    )
    .action(async (opts: Record<string, string | boolean | undefined>) => {
      const { serveCommand } = await import('./control-plane.js');
      state.exitCode = await serveCommand(ctx, opts);
    });
  const users = controlPlane.command('users').description('manage the users (and their bearer tokens) of a Control API');
  users
    .command('add <email>')
    .description('add a user and print their bearer token once (only its hash is stored)')
    .option('--admin', 'an administrator: sees every session upload')
    .addOption(dataOption())
      .addOption(databaseOption())
    .option('--json', 'print as JSON')
    .action(async (email: string, opts: { admin?: boolean; data?: string; databaseUrl?: string; json?: boolean }) => {
      const { usersAddCommand } = await import('./control-plane.js');
      state.exitCode = await usersAddCommand(ctx, email, opts);
    });
  users
    .command('link <email>')
    .description("print a one-time link that signs a user's browser in to the dashboard (15 minutes; without an identity provider)")
    .addOption(dataOption())
    .addOption(databaseOption())
    .option('--json', 'print as JSON')
    .action(async (email: string, opts: { data?: string; databaseUrl?: string; json?: boolean }) => {
      const { usersLinkCommand } = await import('./control-plane.js');
      state.exitCode = await usersLinkCommand(ctx, email, opts);
    });
  users
    .command('list')
    .description('list the users')
    .addOption(dataOption())
      .addOption(databaseOption())
    .option('--json', 'print as JSON')
    .action(async (opts: { data?: string; databaseUrl?: string; json?: boolean }) => {
      const { usersListCommand } = await import('./control-plane.js');
      state.exitCode = await usersListCommand(ctx, opts);
    });
  const tokens = controlPlane
    .command('tokens')
    .description("list, add and revoke users' tokens: personal tokens and device sign-ins (`blue-agent login`)");
  tokens
    .command('list [email]')
    .description("list every user's tokens, or one user's: id, user, kind (personal or device), active, revoked or lapsed, last use")
    .addOption(dataOption())
    .addOption(databaseOption())
    .option('--json', 'print as JSON')
    .action(async (email: string | undefined, opts: { data?: string; databaseUrl?: string; json?: boolean }) => {
      const { tokensListCommand } = await import('./control-plane.js');
      state.exitCode = await tokensListCommand(ctx, email, opts);
    });
  tokens
    .command('add <email>')
    .description('make a new personal token for a user (for automation) and print it once')
    .option('--label <text>', 'what the token is for, shown in the list')
    .addOption(dataOption())
    .addOption(databaseOption())
    .option('--json', 'print as JSON')
    .action(async (email: string, opts: { label?: string; data?: string; databaseUrl?: string; json?: boolean }) => {
      const { tokensAddCommand } = await import('./control-plane.js');
      state.exitCode = await tokensAddCommand(ctx, email, opts);
    });
  tokens
    .command('revoke <id>')
    .description('revoke a token (its id from `tokens list`): it fails at the next request, on every replica')
    .addOption(dataOption())
    .addOption(databaseOption())
    .option('--json', 'print as JSON')
    .action(async (id: string, opts: { data?: string; databaseUrl?: string; json?: boolean }) => {
      const { tokensRevokeCommand } = await import('./control-plane.js');
      state.exitCode = await tokensRevokeCommand(ctx, id, opts);
    });
  const policy = controlPlane.command('policy').description('manage governance policy revisions');
  policy
    .command('publish <file>')
    .description('validate a policy (YAML or JSON) and make it the next revision; the server sets `revision`')
    .option('--confirm', 'publish even though the revision stops session capture on every machine')
    .addOption(dataOption())
    .addOption(databaseOption())
    .option('--json', 'print as JSON')
    .addHelpText(
      'after',
      `
A key the policy schema does not name is refused, with the nearest known one ("did you mean session_upload?");
Blue's fields blue-agent does not act on (packages, gateway, telemetry, a harness's managed_config, mcp,
package_overrides) are accepted. A revision that stops session capture on every machine (it drops session_upload
while the current revision has it, or allows no harness) is refused with POLICY_CONFIRMATION_REQUIRED unless
--confirm: every machine would remove its capture hooks at its next reconcile.`,
    )
    .action(async (file: string, opts: { data?: string; databaseUrl?: string; json?: boolean; confirm?: boolean }) => {
      const { policyPublishCommand } = await import('./control-plane.js');
      state.exitCode = await policyPublishCommand(ctx, file, opts);
    });
  policy
    .command('show')
    .description('print the current policy revision (or --revision ID) exactly as it was published')
    .option('--revision <id>', 'the revision to show (its id, as `policy publish` printed it)')
    .addOption(dataOption())
    .addOption(databaseOption())
    .option('--json', 'print {revision, published_at, etag, text, document} as JSON: the text as published and the document served')
    .action(async (opts: { data?: string; databaseUrl?: string; json?: boolean; revision?: string }) => {
      const { policyShowCommand } = await import('./control-plane.js');
      state.exitCode = await policyShowCommand(ctx, opts);
    });
  blobOptions(
    controlPlane
      .command('gc')
      .description('delete stored bundles past their retention deadline, and those of deleted sessions still stored')
      .addOption(dataOption())
      .addOption(databaseOption())
      .option('--json', 'print as JSON'),
  ).action(async (opts: Record<string, string | boolean | undefined>) => {
    const { gcCommand } = await import('./control-plane.js');
    state.exitCode = await gcCommand(ctx, opts);
  });
  blobOptions(
    controlPlane
      .command('reindex')
      .description('rebuild the full-text search index from the stored bundles (resumable)')
      .addOption(dataOption())
      .addOption(databaseOption())
      .option('--restart', 'start from the first session, not where an interrupted run stopped')
      .option('--json', 'print as JSON'),
  )
    .addHelpText(
      'after',
      `
Reads each session's current upload from the blob store, one at a time, and indexes what it says with its title and
summary, as completing an upload does. Needed after an upgrade that indexes more than the release before it, or to
rebuild an index. Progress goes to stderr. The position is saved after each session: a run that is stopped goes on
from there when run again (--restart starts over). It may run while servers run.`,
    )
    .action(async (opts: Record<string, string | boolean | undefined>) => {
      const { reindexCommand } = await import('./control-plane.js');
      state.exitCode = await reindexCommand(ctx, opts);
    });
  return program;
}

/** Runs the CLI and returns the process exit code. */
export async function main(argv: readonly string[], ctx: Context = createContext()): Promise<number> {
  const state: RunState = { exitCode: 0 };
  const program = buildProgram(ctx, state);
  const wantsJson = argv.includes('--json');
  try {
    await loadHelpFacts(argv);
    await program.parseAsync([...argv], { from: 'user' });
    return state.exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help') return 0;
      if (error.exitCode === 0) return 0;
      reportError(ctx, parseError(error, program, argv), wantsJson);
      return EXIT_USAGE;
    }
    reportError(ctx, toBlueError(error), wantsJson);
    return error instanceof BlueError ? error.exitCode : EXIT_FAILURE;
  }
}

/** A commander parse error (unknown flag, missing argument, bad value) as a USAGE error naming the command's help. */
function parseError(error: CommanderError, program: Command, argv: readonly string[]): BlueError {
  // Commander puts its suggestion for a typo on a line of its own: it belongs in the hint, the message stays one line.
  const [first = '', ...rest] = error.message.replace(/^error:\s*/, '').trim().split('\n');
  const suggested = /^\(Did you mean (?<name>.+)\?\)$/.exec(rest.join(' ').trim())?.groups?.name;
  const names = commandPath(program, argv);
  const help = `run \`${['blue-agent', ...names].join(' ')} --help\``;
  const isCommand = suggested !== undefined && !suggested.startsWith('-');
  const guess = suggested === undefined ? undefined : isCommand ? `blue-agent ${[...names, suggested].join(' ')}` : suggested;
  return usageError(first.trim(), guess === undefined ? help : `did you mean \`${guess}\`? Else ${help}`);
}

/** The (sub)command names that argv selects, as far as they are known: `['control-plane', 'users', 'add']`. */
function commandPath(program: Command, argv: readonly string[]): string[] {
  const names: string[] = [];
  let command = program;
  for (const arg of argv) {
    if (arg === '--') break;
    if (arg.startsWith('-')) continue;
    const sub = command.commands.find((c) => c.name() === arg || c.aliases().includes(arg));
    if (sub === undefined) break;
    names.push(sub.name());
    command = sub;
    if (command.commands.length === 0) break;
  }
  return names;
}

import type { CommandDeclaration } from '../declaration.js';
import { harnessOption } from './harness-option.js';

export const backfill: CommandDeclaration = {
  usage: 'backfill',
  summary: 'capture every local session that was never uploaded, oldest first (history from before blue-agent)',
  options: [
    harnessOption,
    {
      flags: '--since <date>',
      description: 'only sessions changed since then: a date (2026-11-01), a time with its offset, or days back (30d)',
    },
    { flags: '--dry-run', description: 'list what would be captured; capture nothing' },
    { flags: '--rate <n>', description: `at most this many sessions per minute (default ${120})` },
    { flags: '--policy <file>', description: 'use this policy file (YAML or JSON) instead of the Control API' },
    { flags: '--json', description: 'print the report as JSON' },
  ],
  help: `
Finds every session of every harness whose sessions are captured here (installed, allowed by the policy, a
supported version) and captures those never uploaded: not captured by this machine since they last changed, and not
on the Control API with a capture newer than their last change. Oldest first, in batches of 10, each built and
uploaded before the next (progress on stderr), at most --rate sessions a minute. A session written by a harness
version older than its capture profile is uploaded as not resumable. Running it again captures only what changed.

The running agent does the same once after it is installed when the policy says session_upload.backfill: true.

Examples:
  blue-agent backfill --dry-run
  blue-agent backfill --since 30d --json`,
  run: async (
    ctx,
    opts: { harness?: string[]; since?: string; dryRun?: boolean; json?: boolean; policy?: string; rate?: string },
  ) => (await import('../backfill.js')).backfillCommand(ctx, opts),
};

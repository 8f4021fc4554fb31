/**
 * `blue-agent backfill [--harness NAME]... [--since DATE] [--dry-run] [--json]`: captures every local session the
 * active profiles can read that was never uploaded, oldest first, in batches at a bounded rate, each batch drained
 * (built and uploaded) before the next; progress on stderr.
 */
import { loadAgentConfig } from '../config.js';
import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { resolvePolicy } from '../policy/index.js';
import { backfill, DEFAULT_PER_MINUTE, type BackfillReport } from '../sweep/backfill.js';

export interface BackfillFlags {
  harness?: string[];
  since?: string;
  dryRun?: boolean;
  json?: boolean;
  policy?: string;
  rate?: string;
}

/** `--since`: a date (2026-11-01, midnight UTC), a date and time with its offset, or a number of days (30d). */
export function parseSince(text: string, now: number): number {
  const days = /^(\d{1,5})d$/.exec(text);
  if (days !== null) return now - Number(days[1]) * 86_400_000;
  const date = /^\d{4}-\d{2}-\d{2}$/.test(text)
    ? Date.parse(`${text}T00:00:00Z`)
    : /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(text)
      ? Date.parse(text)
      : NaN;
  if (Number.isNaN(date)) {
    throw new BlueError('USAGE', `--since "${text.slice(0, 64)}" is not a date`, {
      hint: 'Use a date (2026-11-01), a date and time with its offset (2026-11-01T09:00:00+01:00), or days back (30d).',
    });
  }
  return date;
}

export function parseRate(text: string | undefined): number {
  if (text === undefined) return DEFAULT_PER_MINUTE;
  const n = Number(text);
  if (!/^\d{1,6}$/.test(text) || n < 1)
    throw new BlueError(
      'USAGE',
      `--rate "${text.slice(0, 32)}" is not a whole number of sessions per minute (1 or more)`,
      { hint: `The default is ${DEFAULT_PER_MINUTE}.` },
    );
  return n;
}

export async function backfillCommand(ctx: Context, flags: BackfillFlags): Promise<number> {
  const since = flags.since === undefined ? undefined : parseSince(flags.since, ctx.clock.now());
  const perMinute = parseRate(flags.rate);
  const { config } = await loadAgentConfig(ctx);
  const resolved = await resolvePolicy(ctx, {
    dryRun: flags.dryRun === true,
    config,
    ...(flags.policy === undefined ? {} : { policyFile: flags.policy }),
  });
  if (resolved.policy.session_upload === undefined) {
    throw new BlueError(
      'CAPTURE_REFUSED',
      `policy revision ${resolved.revision} disables session capture (it has no session_upload block)`,
      {
        hint:
          'Nothing is captured while capture is off; ask the administrators of the Control API, or pass ' +
          '--policy FILE.',
      },
    );
  }
  const progress = flags.json !== true && ctx.stderr.isTTY === true;
  const report = await backfill(ctx, resolved.policy, {
    dryRun: flags.dryRun === true,
    perMinute,
    ...(flags.harness === undefined ? {} : { harnesses: flags.harness }),
    ...(since === undefined ? {} : { sinceUnixMs: since }),
    onProgress: (done, total, last) => {
      if (flags.json === true) return;
      const line = `backfill: ${done}/${total} sessions captured (last: ${last.harness} ${last.session_id})`;
      ctx.stderr.write(progress ? `\r${line}\u001b[K${done === total ? '\n' : ''}` : `${line}\n`);
    },
  });
  const ok = report.failed.length === 0;
  if (flags.json === true) ctx.stdout.write(`${JSON.stringify({ ok, ...report }, null, 2)}\n`);
  else ctx.stdout.write(renderBackfill(report));
  return ok ? 0 : 1;
}

export function renderBackfill(r: BackfillReport): string {
  const lines: string[] = [];
  for (const h of r.harnesses)
    lines.push(
      `${h.harness} (${h.profile}): ${h.sessions} session(s) on disk` +
        `${h.truncated ? ' (listing cut at its bound)' : ''}`,
    );
  for (const h of r.unlisted) lines.push(`${h}: its sessions cannot be listed; they are captured by its hook alone`);
  if (r.harnesses.length === 0 && r.unlisted.length === 0)
    lines.push('no harness captures sessions here (none installed, allowed and supported)');
  const skipped = r.skipped;
  lines.push(
    `${r.dry_run ? 'would capture' : 'captured'} ${r.candidates.length} session(s); skipped ${skipped.captured} ` +
      `captured before, ${skipped.on_server} already on the Control API, ${skipped.queued} already in the spool, ` +
      `${skipped.before_since} older than --since`,
  );
  if (r.dry_run) {
    for (const c of r.candidates)
      lines.push(
        `  ${new Date(c.mtime_ms).toISOString()}  ${c.harness}  ${c.session_id}` +
          `${c.resumable ? '' : `  (written by ${c.version}, older than ${c.profile}: not resumable)`}`,
      );
  } else {
    lines.push(`built ${r.built}, uploaded ${r.uploaded}, unchanged ${r.unchanged}, failed ${r.failed.length}`);
    for (const f of r.failed) lines.push(`  failed ${f.session_id}: ${f.code} ${f.reason}`);
  }
  for (const note of r.notes) lines.push(`note: ${note}`);
  return `${lines.join('\n')}\n`;
}

/**
 * `blue-agent drain [--once] [--json] [--quiet] [--discard]`: process the spool now (build, then upload). The capture
 * hook starts it detached with --quiet; people and schedulers run it to retry what is waiting.
 */
import { appendCaptureLog } from '../capture/log.js';
import { writeLastDrain } from '../daemon/state.js';
import { drain, LINGER_MS, type DrainOptions, type DrainReport } from '../drain/index.js';
import type { Context } from '../context.js';
import { EXIT_FAILURE, EXIT_OK, EXIT_TEMPFAIL, toBlueError } from '@blue-agent/contract/errors.js';

export async function drainCommand(
  ctx: Context,
  opts: { once?: boolean; json?: boolean; quiet?: boolean; discard?: boolean; linger?: boolean },
  options: DrainOptions = {},
): Promise<number> {
  let report: DrainReport;
  try {
    report = await drain(ctx, {
      ...options,
      ...(opts.discard === true ? { discard: true } : {}),
      ...(opts.once === true ? { once: true } : {}),
      ...(opts.linger === true && options.lingerMs === undefined ? { lingerMs: LINGER_MS } : {}),
    });
  } catch (error) {
    // The detached drain process has no terminal: what stopped it must be findable in capture.log.
    const blue = toBlueError(error);
    await appendCaptureLog(ctx.paths.captureLogFile, {
      event: 'failed',
      code: blue.code,
      reason: `drain stopped: ${blue.message}`,
    });
    throw error;
  }
  // A record left waiting after an earlier failure is not ok either: this drain did not get it through. Nor is one
  // another drain holds: nothing failed here, but whether it gets through is not known yet.
  const failed =
    report.failed.length > 0 || report.retried.length > 0 || report.waiting.length > 0 || report.stopped !== undefined;
  const ok = !failed && report.held.length === 0;
  // For `status`: the outcome of the latest drain, whoever ran it. Never a reason to fail the drain itself.
  await writeLastDrain(ctx, {
    finished_at_unix_ms: ctx.clock.now(),
    ok,
    built: report.built.length,
    uploaded: report.uploaded.length,
    failed: report.failed.length,
    retried: report.retried.length,
    left: report.left,
    left_ready: report.left_ready,
    waiting: report.waiting.length,
    ...(report.held.length === 0
      ? {}
      : { held: report.held.slice(0, MAX_HELD_KEPT).map(({ id, state, pid }) => ({ id, state, pid })) }),
    ...(report.stopped === undefined ? {} : { stopped: report.stopped }),
    notes: report.notes,
  }).catch(() => undefined);
  if (opts.json === true) ctx.stdout.write(`${JSON.stringify({ ok, ...report }, null, 2)}\n`);
  else if (opts.quiet !== true) ctx.stdout.write(renderDrain(report));
  // Held elsewhere only: not a failure, and not done either; a script runs `drain` again later to learn the outcome.
  return failed ? EXIT_FAILURE : ok ? EXIT_OK : EXIT_TEMPFAIL;
}

/** last-drain.json names at most this many records held by another drain (and counts none beyond). */
const MAX_HELD_KEPT = 20;

/** Records waiting after an earlier failure shown one per line at most; the rest are counted. */
export const MAX_WAITING_LINES = 20;

export function renderDrain(report: DrainReport): string {
  const lines: string[] = [];
  const { released, completed, failed, temps_removed } = report.recovered;
  if (released.length + completed.length + failed.length + temps_removed > 0) {
    lines.push(
      `recovered after a crash: ${released.length} released, ${completed.length} completed, ${failed.length} ` +
        `failed, ${temps_removed} temp files removed`,
    );
  }
  for (const b of report.built)
    lines.push(`built   ${b.id}  ${b.harness} ${b.session_id}  ${b.size} bytes  sha256 ${b.sha256}`);
  for (const s of report.superseded)
    lines.push(
      `superseded ${s.id}  ${s.harness} ${s.session_id}  the later capture ${s.by} of the same run holds its last ` +
        `state`,
    );
  for (const u of report.unchanged)
    lines.push(`unchanged ${u.id}  ${u.harness} ${u.session_id}  holds what ${u.same_as} captured: nothing to upload`);
  for (const u of report.uploaded) {
    const session = u.captured_session_id === undefined ? '' : `, session ${u.captured_session_id}`;
    lines.push(
      `uploaded ${u.id}  ${u.harness} ${u.session_id}  upload ${u.upload_id}${session}` +
        `${u.already ? ' (already on the server)' : ''}`,
    );
  }
  for (const id of report.discarded) lines.push(`discarded ${id}`);
  for (const f of report.failed) lines.push(`failed  ${f.id}  ${f.harness} ${f.session_id}  [${f.code}] ${f.reason}`);
  for (const r of report.retried) {
    const next =
      r.next_attempt_at_unix_ms === undefined
        ? ''
        : ` (next try after ${new Date(r.next_attempt_at_unix_ms).toISOString()})`;
    lines.push(`retry   ${r.id}  ${r.harness} ${r.session_id}  [${r.code}] ${r.reason}${next}`);
  }
  for (const w of report.waiting.slice(0, MAX_WAITING_LINES)) {
    const next =
      w.next_attempt_at_unix_ms === null
        ? ' (next try: the next drain)'
        : ` (next try after ${new Date(w.next_attempt_at_unix_ms).toISOString()})`;
    lines.push(
      `waiting ${w.id}  ${w.harness} ${w.session_id}  ${w.state === 'ready' ? 'upload' : 'build'} [${w.code}] ` +
        `${w.reason}${next}`,
    );
  }
  if (report.waiting.length > MAX_WAITING_LINES) {
    lines.push(
      `waiting … and ${report.waiting.length - MAX_WAITING_LINES} more after an earlier failure (\`blue-agent ` +
        `spool list\` shows them all)`,
    );
  }
  for (const d of report.deferred)
    lines.push(`deferred ${d.id}  ${d.harness} ${d.session_id}  built once the harness (pid ${d.pid}) has exited`);
  for (const h of report.held) {
    lines.push(
      `held    ${h.id}  ${h.harness} ${h.session_id}  being ${h.state === 'uploading' ? 'uploaded' : 'built'} by ` +
        `another drain (pid ${h.pid}): its outcome is that drain's`,
    );
  }
  for (const note of report.notes) lines.push(`note: ${note}`);
  if (report.stopped !== undefined) lines.push(`stopped early: ${report.stopped.reason}`);
  lines.push(
    `${report.built.length} built, ${report.unchanged.length > 0 ? `${report.unchanged.length} unchanged, ` : ''}` +
      `${report.uploaded.length} uploaded, ${report.failed.length} failed, ${report.retried.length} to retry, ` +
      (`${report.left} waiting to be built, ${report.left_ready} waiting to be uploaded` +
        `${report.held.length > 0 ? `, ${report.held.length} held by another drain` : ''}`),
  );
  return `${lines.join('\n')}\n`;
}

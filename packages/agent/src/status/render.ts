/**
 * Pure presentation of a status report: short aligned text for people, or the JSON document for scripts.
 */
import path from 'node:path';
import { formatAge } from '../reconcile/render.js';
import { AT_RISK_DAYS } from '../sweep/status.js';
import { serviceStateJson, type ServiceState } from '../service/index.js';
import type { AgentStatus, HarnessStatus, PolicyStatus, StatusReport } from './collect.js';
import type { ErrorInfo } from './policy.js';
import type { SpoolStatus } from './spool.js';

export interface RenderOptions {
  color: boolean;
  home: string;
}

const LABEL = 12;

export function renderStatus(report: StatusReport, options: RenderOptions): string {
  const c = palette(options.color);
  const now = report.now_unix_ms;
  const out: string[] = [];
  const section = (label: string, first: string, rest: string[] = []) => {
    out.push(`${c.bold(label.padEnd(LABEL))}${first}`);
    for (const line of rest) out.push(`${' '.repeat(LABEL)}${line}`);
  };
  if (report.config_error !== undefined)
    section('Config', c.red(`error: ${report.config_error.message}`), hintLines(report.config_error, c));

  const policy = renderPolicy(report.policy, now, options.home, c);
  section('Policy', policy[0]!, policy.slice(1));

  if (report.harnesses_error !== undefined) {
    section('Harnesses', c.red(`error: ${report.harnesses_error.message}`), hintLines(report.harnesses_error, c));
  } else if (report.harnesses.length === 0) {
    section('Harnesses', c.dim('none'));
  } else {
    out.push(c.bold('Harnesses'));
    for (const h of report.harnesses) out.push(...renderHarness(h, c));
  }

  const spool = renderSpool(report.spool, now, options.home, c);
  section('Spool', spool[0]!, spool.slice(1));

  const sessions = renderSessions(report.sessions, now, c);
  if (sessions.length > 0) section('Sessions', sessions[0]!, sessions.slice(1));

  const d = report.last_drain;
  if (d === null) section('Last drain', c.dim('none recorded'));
  else {
    const counts = `built ${d.built}, uploaded ${d.uploaded}, failed ${d.failed}, retried ${d.retried}, left ${d.left}`;
    const held = Array.isArray(d.held) ? d.held.filter((h) => typeof h?.pid === 'number') : [];
    const heldText =
      held.length === 0
        ? ''
        : `${held.length} record${held.length === 1 ? '' : 's'} held by another drain (pid ` +
          `${[...new Set(held.map((h) => h.pid))].join(', ')}), whose outcome that drain reports`;
    const clean = d.failed === 0 && d.retried === 0 && (d.waiting ?? 0) === 0 && d.stopped === undefined;
    const result = d.ok
      ? c.green('ok')
      : d.stopped?.code === 'INTERRUPTED'
        ? c.yellow(`interrupted: ${d.stopped.reason} (the spool is intact; the next drain goes on)`)
        : clean && held.length > 0
          ? c.yellow(`not finished: ${heldText}`)
          : c.yellow(
              `${d.stopped === undefined ? 'not clean' : `stopped: ${d.stopped.reason}`}` +
                `${heldText === '' ? '' : `; ${heldText}`}`,
            );
    section(
      'Last drain',
      `${ago(d.finished_at_unix_ms, now)}: ${result} (${counts})`,
      d.notes.slice(0, 3).map((n) => c.dim(n)),
    );
  }

  const agent = renderAgent(report.agent, now, c);
  section('Agent', agent[0]!, agent.slice(1));

  const service = renderService(report.service, options.home, c);
  section('Service', service[0]!, service.slice(1));
  return `${out.join('\n')}\n`;
}

/** Per harness: sessions on disk and captured, what the sweep and backfill captured, sessions at risk of cleanup. */
export function renderSessions(s: StatusReport['sessions'], now: number, c: Palette): string[] {
  if ('error' in s) return [c.yellow(`error: ${s.error.message}`)];
  const lines: string[] = [];
  for (const h of s.harnesses) {
    lines.push(
      `${h.harness}: ${h.on_disk} on disk, ${h.captured} captured; ${h.idle_captures} captured idle (no end hook), ` +
        `${h.backfill_captures} by backfill` +
        (h.watching_since_unix_ms === null ? c.dim(' (not followed yet: the agent follows them once it runs)') : ''),
    );
    if (h.at_risk !== null && h.at_risk.count > 0) {
      lines.push(
        c.yellow(
          `warning: ${h.at_risk.count} ${h.harness} session(s) never uploaded will be deleted by ${h.harness} ` +
            `itself within ${AT_RISK_DAYS} days (${h.at_risk.setting}: ${h.at_risk.days} days); run \`blue-agent ` +
            `backfill --harness ${h.harness}\``,
        ),
      );
    }
  }
  if (lines.length > 0)
    lines.push(
      c.dim(
        s.backfill_finished_at_unix_ms === null
          ? 'backfill: never run to the end here'
          : `backfill: last went through every session ${ago(s.backfill_finished_at_unix_ms, now)}`,
      ),
    );
  return lines;
}

function renderPolicy(p: PolicyStatus, now: number, home: string, c: Palette): string[] {
  if (p.revision === null) {
    const e = p.error;
    return [c.yellow(e?.message ?? 'no policy'), ...(e === undefined ? [] : hintLines(e, c))];
  }
  const where = p.source === 'file' ? tildify(p.location ?? '', home) : (p.location ?? '');
  const when = p.fetched_at_unix_ms === null ? '' : `, fetched ${ago(p.fetched_at_unix_ms, now)}`;
  const head = `revision ${p.revision} (${p.source}: ${where}${when})${p.stale ? ` ${c.yellow('stale')}` : ''}`;
  return [
    head,
    c.dim(p.capture_enabled === true ? 'capture on (session_upload)' : 'capture off (no session_upload)'),
    ...p.warnings.map((w) => c.yellow(`warning: ${w}`)),
  ];
}

/** What `blue-agent reconcile` would do to a harness's managed hook, as one line for people (status and doctor). */
export function pendingNote(pending: NonNullable<HarnessStatus['pending']>): string {
  switch (pending) {
    case 'create':
      return 'the managed hook is missing: `blue-agent reconcile` adds it';
    case 'update':
      return 'the managed hook is out of date: `blue-agent reconcile` updates it';
    case 'remove':
      return 'a managed hook is installed but no longer wanted: `blue-agent reconcile` removes it';
  }
}

/** The marker after a harness's state when its managed hook is not as reconcile wants it. */
export const PENDING_MARKER: Record<NonNullable<HarnessStatus['pending']>, string> = {
  create: 'missing hook',
  update: 'outdated hook',
  remove: 'unwanted hook',
};

/**
 * The state as shown to people: the JSON state, plus a marker when the managed hook is missing, out of date or
 * unwanted — an `active` harness whose hook is missing captures nothing until reconcile runs.
 */
export function displayState(h: Pick<HarnessStatus, 'state' | 'pending'>): string {
  return h.pending === null ? h.state : `${h.state} (${PENDING_MARKER[h.pending]})`;
}

function renderHarness(h: HarnessStatus, c: Palette): string[] {
  const color =
    h.state === 'error'
      ? c.red
      : h.pending !== null ||
          h.state === 'awaiting_trust' ||
          h.state === 'hooks_disabled' ||
          h.state === 'unverified_version'
        ? c.yellow
        : h.state === 'active'
          ? c.green
          : c.dim;
  const version = h.version === null ? '-' : `${h.version}${h.verified === false ? ' (unverified)' : ''}`;
  const state = displayState(h);
  const lines = [
    `  ${h.harness.padEnd(LABEL - 2)}${color(state.padEnd(Math.max(20, state.length + 2)))}` +
      `${(h.profile ?? '-').padEnd(18)}${version}`,
  ];
  const indent = ' '.repeat(LABEL);
  // The pending change first: it says whether the state above is in force yet.
  if (h.pending !== null) lines.push(`${indent}${c.yellow(pendingNote(h.pending))}`);
  lines.push(`${indent}${c.dim(h.code === undefined ? h.reason : `[${h.code}] ${h.reason}`)}`);
  return lines;
}

function renderSpool(s: SpoolStatus, now: number, home: string, c: Palette): string[] {
  const lines: string[] = [];
  if (s.error !== undefined) return [c.red(`error: ${s.error.message}`), ...hintLines(s.error, c)];
  const parts = [
    ...(s.handed_over > 0 ? [`handed over ${s.handed_over}`] : []),
    ...(['intake', 'building', 'ready', 'uploading'] as const)
      .filter((k) => s.counts[k] > 0)
      .map((k) => `${k} ${s.counts[k]}`),
  ];
  const failed = s.counts.failed > 0 ? c.yellow(`, ${s.counts.failed} failed`) : '';
  lines.push(
    s.waiting === 0 && s.counts.failed === 0
      ? `empty${s.exists ? '' : c.dim(' (not created yet)')}`
      : `${s.waiting} waiting${parts.length > 0 ? ` (${parts.join(', ')})` : ''}${failed}`,
  );
  const o = s.oldest_waiting;
  if (o !== null) {
    const age = o.created_at_unix_ms === null ? '' : `, captured ${ago(o.created_at_unix_ms, now)}`;
    const bits = [`oldest waiting: ${o.id} (${o.state}${o.harness === null ? '' : `, ${o.harness}`}${age}`];
    if (o.attempts > 0) bits.push(`${o.attempts} failed attempt${o.attempts === 1 ? '' : 's'}`);
    if (o.next_attempt_at_unix_ms !== null && o.next_attempt_at_unix_ms > now)
      bits.push(`next try in ${formatAge((o.next_attempt_at_unix_ms - now) / 1000)}`);
    lines.push(`${bits.join(', ')})`);
    if (o.last_error !== null) lines.push(c.dim(`last error: ${o.last_error.replace(/\s+/g, ' ')}`));
  }
  if (s.unsafe !== undefined) lines.push(c.red(`unsafe: ${s.unsafe.message}`), ...hintLines(s.unsafe, c));
  lines.push(c.dim(tildify(s.root, home)));
  return lines;
}

function renderAgent(a: AgentStatus, now: number, c: Palette): string[] {
  if (a.state === 'absent') return [c.dim('not running')];
  if (a.state === 'stopped') {
    return [c.yellow(`not running (last seen ${ago(a.updated_at_unix_ms ?? 0, now)}; ${a.detail ?? ''})`)];
  }
  const lines = [
    `${c.green('running')} (pid ${a.pid}` +
      `${a.started_at_unix_ms === null ? '' : `, started ${ago(a.started_at_unix_ms, now)}`}, last report ` +
      `${ago(a.updated_at_unix_ms ?? now, now)})`,
  ];
  const r = a.last_reconcile;
  if (r !== null && r !== undefined) {
    const what = r.ok
      ? r.corrected.length > 0
        ? `corrected ${r.corrected.join(', ')}`
        : 'no drift'
      : `failed: ${r.error?.message ?? 'error'}`;
    lines.push(`last reconcile ${ago(r.at_unix_ms, now)}: ${r.ok ? what : c.red(what)}`);
  }
  const due = (at: number) => (at <= now ? 'due now' : `in ${formatAge((at - now) / 1000)}`);
  if (a.next_policy_check_at_unix_ms !== null)
    lines.push(c.dim(`next policy check ${due(a.next_policy_check_at_unix_ms)}`));
  if (a.next_drain_at_unix_ms !== null) lines.push(c.dim(`next drain ${due(a.next_drain_at_unix_ms)}`));
  if (a.policy_error !== null) lines.push(c.yellow(`last policy check failed: ${a.policy_error.message}`));
  return lines;
}

function renderService(s: ServiceState | { error: ErrorInfo }, home: string, c: Palette): string[] {
  if ('error' in s) return [c.red(`error: ${s.error.message}`), ...hintLines(s.error, c)];
  if (s.manager === 'none') return [c.dim(`no service manager${s.detail === '' ? '' : ` (${s.detail})`}`)];
  if (!s.installed) {
    // Where the manager cannot run the service in this session, `service install` would only fail.
    const here = s.availability === undefined || s.availability === 'available' || s.availability === 'unknown';
    return [
      `${s.manager}: ${c.yellow('not installed')}`,
      c.dim(
        here
          ? 'install it: blue-agent service install'
          : `${s.detail}; \`blue-agent doctor\` says what runs the agent here`,
      ),
    ];
  }
  const flags = [
    s.ours ? undefined : c.yellow('not ours'),
    s.current ? undefined : c.yellow('out of date'),
    s.enabled === undefined ? undefined : s.enabled ? 'enabled' : c.yellow('disabled'),
    s.active === undefined ? undefined : s.active ? c.green('active') : c.yellow('inactive'),
  ].filter((f): f is string => f !== undefined);
  const lines = [`${s.manager}: installed${flags.length > 0 ? `, ${flags.join(', ')}` : ''}`];
  if (s.unitFile !== undefined) lines.push(c.dim(tildify(s.unitFile, home)));
  if (s.detail !== '') lines.push(c.dim(s.detail));
  return lines;
}

function hintLines(e: ErrorInfo, c: Palette): string[] {
  return e.hint === undefined ? [] : [c.dim(`hint: ${e.hint}`)];
}

export function ago(at: number, now: number): string {
  const seconds = (now - at) / 1000;
  if (seconds < -5) return `in ${formatAge(-seconds)}`;
  return `${formatAge(Math.max(0, seconds))} ago`;
}

export function tildify(file: string, home: string): string {
  return file === home || file.startsWith(home + path.sep) ? `~${file.slice(home.length)}` : file;
}

/** The JSON form: every field present (null when unknown), snake_case like the rest of the agent's JSON. */
export function statusJson(report: StatusReport): Record<string, unknown> {
  const { now_unix_ms: now, service, ...rest } = report;
  return {
    ok: true,
    generated_at: new Date(now).toISOString(),
    ...rest,
    service: serviceJson(service),
  };
}

export function serviceJson(service: ServiceState | { error: ErrorInfo }): Record<string, unknown> {
  return 'error' in service ? { error: service.error } : serviceStateJson(service);
}

export type Paint = (s: string) => string;
export interface Palette {
  bold: Paint;
  dim: Paint;
  red: Paint;
  green: Paint;
  yellow: Paint;
}

export function palette(enabled: boolean): Palette {
  const wrap = (open: number, close: number): Paint =>
    enabled ? (s) => `\u001b[${open}m${s}\u001b[${close}m` : (s) => s;
  return { bold: wrap(1, 22), dim: wrap(2, 22), red: wrap(31, 39), green: wrap(32, 39), yellow: wrap(33, 39) };
}

/**
 * Presenting a reconcile report: a table-like summary per harness with a unified diff for every file that changes,
 * or the JSON document scripts consume.
 */
import { createTwoFilesPatch } from 'diff';
import path from 'node:path';
import type { FileReport, HarnessReport, ReconcileReport } from './index.js';

export interface RenderOptions {
  color: boolean;
  home: string;
}

export function renderHuman(report: ReconcileReport, options: RenderOptions): string {
  const c = palette(options.color);
  const out: string[] = [];
  const p = report.policy;
  const age = p.age_seconds === null ? '' : `, ${formatAge(p.age_seconds)} old`;
  out.push(`Policy revision ${p.revision} (${p.source}: ${tildify(p.location, options.home)}${age})`);
  for (const warning of p.warnings) out.push(c.yellow(`  warning: ${warning}`));
  out.push('');
  for (const h of report.harnesses) out.push(...renderHarness(h, options, c));
  const changed = report.harnesses.flatMap((h) => h.files).filter((f) => f.action !== 'unchanged' && f.action !== 'error');
  const errors = report.harnesses.filter((h) => h.state === 'error').length;
  const verb = report.dry_run ? 'would change' : 'changed';
  let summary = changed.length === 0 ? 'No file changes.' : `${changed.length} file${changed.length === 1 ? '' : 's'} ${verb}.`;
  if (report.dry_run) summary += ' Dry run: nothing was written.';
  if (errors > 0) summary += ` ${errors} harness${errors === 1 ? '' : 'es'} in error.`;
  out.push(errors > 0 ? c.red(summary) : summary);
  return `${out.join('\n')}\n`;
}

function renderHarness(h: HarnessReport, options: RenderOptions, c: Palette): string[] {
  const stateColor = h.state === 'active' ? c.green : h.state === 'error' ? c.red : h.state === 'awaiting_trust' || h.state === 'unverified_version' ? c.yellow : c.dim;
  const version = h.version ?? '-';
  const head = `${c.bold(h.harness.padEnd(9))} ${stateColor(h.state.padEnd(19))} ${(h.profile ?? '-').padEnd(16)} ${version.padEnd(10)} ${h.action}`;
  const lines = [head, c.dim(`  ${h.reason}`)];
  if (h.path !== null) lines.push(c.dim(`  binary: ${tildify(h.path, options.home)}${h.raw_version ? ` (${h.raw_version})` : ''}`));
  for (const file of h.files) lines.push(...renderFile(file, options, c));
  lines.push('');
  return lines;
}

function renderFile(file: FileReport, options: RenderOptions, c: Palette): string[] {
  const name = tildify(file.path, options.home);
  if (file.action === 'error') {
    const e = file.error;
    return [c.red(`  ${name}: ${e?.message ?? 'error'}`), ...(e?.hint ? [c.dim(`    hint: ${e.hint}`)] : [])];
  }
  if (file.action === 'unchanged') return [c.dim(`  ${name}: unchanged`)];
  const lines = [`  ${name}: ${file.action}${file.backup ? c.dim(` (previous version kept in ${tildify(file.backup, options.home)})`) : ''}`];
  lines.push(...unifiedDiff(file.path, file.before ?? null, file.after ?? null).map((l) => `    ${colorDiffLine(l, c)}`));
  return lines;
}

/** A unified diff of one file; `/dev/null` stands for a missing side. */
export function unifiedDiff(file: string, before: string | null, after: string | null): string[] {
  const patch = createTwoFilesPatch(
    before === null ? '/dev/null' : `a${file}`,
    after === null ? '/dev/null' : `b${file}`,
    before ?? '',
    after ?? '',
    undefined,
    undefined,
    { context: 3 },
  );
  // Drop the "====" banner line; keep ---/+++ and hunks.
  return patch
    .split('\n')
    .filter((line, i) => !(i === 0 && line.startsWith('=')))
    .filter((line, i, all) => !(i === all.length - 1 && line === ''));
}

function colorDiffLine(line: string, c: Palette): string {
  if (line.startsWith('+++') || line.startsWith('---')) return c.bold(line);
  if (line.startsWith('+')) return c.green(line);
  if (line.startsWith('-')) return c.red(line);
  if (line.startsWith('@@')) return c.cyan(line);
  return line;
}

/** The JSON form: no file contents, only what scripts need. */
export function toJson(report: ReconcileReport): unknown {
  return {
    ...report,
    harnesses: report.harnesses.map((h) => ({
      ...h,
      files: h.files.map(({ before: _before, after: _after, ...rest }) => rest),
    })),
  };
}

export function formatAge(seconds: number): string {
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)} min`;
  if (seconds < 36 * 3600) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86400)} d`;
}

function tildify(file: string, home: string): string {
  return file === home || file.startsWith(home + path.sep) ? `~${file.slice(home.length)}` : file;
}

type Paint = (s: string) => string;
interface Palette {
  bold: Paint;
  dim: Paint;
  red: Paint;
  green: Paint;
  yellow: Paint;
  cyan: Paint;
}

function palette(enabled: boolean): Palette {
  const wrap = (open: number, close: number): Paint => (enabled ? (s) => `\u001b[${open}m${s}\u001b[${close}m` : (s) => s);
  return { bold: wrap(1, 22), dim: wrap(2, 22), red: wrap(31, 39), green: wrap(32, 39), yellow: wrap(33, 39), cyan: wrap(36, 39) };
}

/**
 * Presenting a reconcile report: a table-like summary per harness with a unified diff for every file that changes,
 * or the JSON document scripts consume.
 */
import { formatPatch, structuredPatch, type StructuredPatch } from 'diff';
import path from 'node:path';
import { showEscapes } from '@blue-agent/contract/util/lossless.js';
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
  const changed = report.harnesses
    .flatMap((h) => h.files)
    .filter((f) => f.action !== 'unchanged' && f.action !== 'error');
  const errors = report.harnesses.filter((h) => h.state === 'error').length;
  const verb = report.dry_run ? 'would change' : 'changed';
  let summary =
    changed.length === 0 ? 'No file changes.' : `${changed.length} file${changed.length === 1 ? '' : 's'} ${verb}.`;
  if (report.dry_run) summary += ' Dry run: nothing was written.';
  if (errors > 0) summary += ` ${errors} harness${errors === 1 ? '' : 'es'} in error.`;
  out.push(errors > 0 ? c.red(summary) : summary);
  return `${out.join('\n')}\n`;
}

function renderHarness(h: HarnessReport, options: RenderOptions, c: Palette): string[] {
  const stateColor =
    h.state === 'active'
      ? c.green
      : h.state === 'error'
        ? c.red
        : h.state === 'awaiting_trust' || h.state === 'hooks_disabled' || h.state === 'unverified_version'
          ? c.yellow
          : c.dim;
  const version = h.version ?? '-';
  const head =
    `${c.bold(h.harness.padEnd(9))} ${stateColor(h.state.padEnd(19))} ${(h.profile ?? '-').padEnd(16)} ` +
    `${version.padEnd(10)} ${h.action}`;
  const lines = [head, c.dim(`  ${h.reason}`)];
  if (h.path !== null)
    lines.push(c.dim(`  binary: ${tildify(h.path, options.home)}${h.raw_version ? ` (${h.raw_version})` : ''}`));
  for (const file of h.files) lines.push(...renderFile(file, options, c));
  lines.push('');
  return lines;
}

function renderFile(file: FileReport, options: RenderOptions, c: Palette): string[] {
  const name = tildify(file.path, options.home);
  if (file.action === 'error') {
    const e = file.error;
    // Most messages already lead with the file: the line names it once.
    const message = String(e?.message ?? 'error');
    const shown = message.startsWith(`${file.path}: `) ? message.slice(file.path.length + 2) : message;
    return [c.red(`  ${name}: ${shown}`), ...(e?.hint ? [c.dim(`    hint: ${e.hint}`)] : [])];
  }
  if (file.action === 'unchanged') return [c.dim(`  ${name}: unchanged`)];
  const lines = [
    `  ${name}: ${file.action}` +
      `${file.backup ? c.dim(` (previous version kept in ${tildify(file.backup, options.home)})`) : ''}`,
  ];
  lines.push(
    ...unifiedDiff(file.path, file.before ?? null, file.after ?? null).map((l) => `    ${colorDiffLine(l, c)}`),
  );
  return lines;
}

/** Diff output limits: a line longer than this is shortened, and a file's diff stops after this many lines. */
export const DIFF_LINE_CHARS = 240;
export const DIFF_MAX_LINES = 400;
/** Beyond this many changed lines, the changed region is shown as removed then added, without a line diff. */
const DIFF_MAX_EDIT = 1000;
const CONTEXT = 3;

/**
 * A unified diff of one file; `/dev/null` stands for a missing side. Only the region between the longest common
 * leading and trailing lines is diffed (the planners splice, so it is small however large the file), and the output
 * is bounded: long lines are shortened with a note and the diff ends with the number of lines left out.
 */
export function unifiedDiff(file: string, before: string | null, after: string | null): string[] {
  const a = before ?? '';
  const b = after ?? '';
  const header = formatPatch({
    oldFileName: before === null ? '/dev/null' : `a${file}`,
    newFileName: after === null ? '/dev/null' : `b${file}`,
    hunks: [],
  } as unknown as StructuredPatch)
    .split('\n')
    .filter((line) => line.startsWith('---') || line.startsWith('+++'));
  const { start, endA, endB } = changedRegion(a, b);
  const lineOffset = countLines(a, start);
  const sliceA = a.slice(start, endA);
  const sliceB = b.slice(start, endB);
  const patch = structuredPatch('a', 'b', sliceA, sliceB, undefined, undefined, {
    context: CONTEXT,
    maxEditLength: DIFF_MAX_EDIT,
  });
  const hunks: StructuredPatch['hunks'] = patch?.hunks ?? [wholeHunk(sliceA, sliceB)];
  const out = [...header];
  let left = 0;
  for (const hunk of hunks) {
    const oldStart = lineOffset + (hunk.oldLines === 0 ? hunk.oldStart - 1 : hunk.oldStart);
    const newStart = lineOffset + (hunk.newLines === 0 ? hunk.newStart - 1 : hunk.newStart);
    const lines = [`@@ -${oldStart},${hunk.oldLines} +${newStart},${hunk.newLines} @@`, ...hunk.lines];
    for (const line of lines) {
      if (out.length >= DIFF_MAX_LINES) left++;
      else out.push(shorten(line));
    }
  }
  if (left > 0) out.push(`… ${left} more line${left === 1 ? '' : 's'} of this diff not shown`);
  return out;
}

/**
 * Where two texts differ, widened to whole lines and `CONTEXT` lines either side: `a.slice(start, endA)` and
 * `b.slice(start, endB)`; what lies outside is the same in both.
 */
function changedRegion(a: string, b: string): { start: number; endA: number; endB: number } {
  const n = Math.min(a.length, b.length);
  let p = 0;
  while (p < n && a.charCodeAt(p) === b.charCodeAt(p)) p++;
  let start = p === 0 ? 0 : a.lastIndexOf('\n', p - 1) + 1;
  let q = 0;
  while (
    q < a.length - start &&
    q < b.length - start &&
    a.charCodeAt(a.length - 1 - q) === b.charCodeAt(b.length - 1 - q)
  )
    q++;
  // The common tail starts at a line start in `a` (then also in `b`, the text being the same from there).
  let endA = a.length - q;
  if (endA > start && endA < a.length && a[endA - 1] !== '\n') {
    const next = a.indexOf('\n', endA);
    endA = next < 0 ? a.length : next + 1;
  }
  let endB = b.length - (a.length - endA);
  for (let i = 0; i < CONTEXT && start > 0; i++) start = start === 1 ? 0 : a.lastIndexOf('\n', start - 2) + 1;
  for (let i = 0; i < CONTEXT && endA < a.length; i++) {
    const next = a.indexOf('\n', endA);
    const end = next < 0 ? a.length : next + 1;
    endB += end - endA;
    endA = end;
  }
  return { start, endA, endB };
}

function countLines(text: string, end: number): number {
  let count = 0;
  for (let i = text.indexOf('\n'); i >= 0 && i < end; i = text.indexOf('\n', i + 1)) count++;
  return count;
}

/** A region too changed to diff line by line: every old line removed, every new line added. */
function wholeHunk(a: string, b: string): StructuredPatch['hunks'][number] {
  const split = (text: string): string[] => (text === '' ? [] : text.replace(/\n$/, '').split('\n'));
  const old = split(a);
  const next = split(b);
  return {
    oldStart: 1,
    oldLines: old.length,
    newStart: 1,
    newLines: next.length,
    lines: [...old.map((l) => `-${l}`), ...next.map((l) => `+${l}`)],
  };
}

/** A line as shown: escaped bytes as `\xNN`, and no longer than DIFF_LINE_CHARS plus a note of what was cut. */
function shorten(line: string): string {
  if (line.length <= DIFF_LINE_CHARS) return showEscapes(line);
  let cut = DIFF_LINE_CHARS;
  const code = line.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut--;
  return `${showEscapes(line.slice(0, cut))}… (${line.length - cut} more characters)`;
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
  const wrap = (open: number, close: number): Paint =>
    enabled ? (s) => `\u001b[${open}m${s}\u001b[${close}m` : (s) => s;
  return {
    bold: wrap(1, 22),
    dim: wrap(2, 22),
    red: wrap(31, 39),
    green: wrap(32, 39),
    yellow: wrap(33, 39),
    cyan: wrap(36, 39),
  };
}

/**
 * Pure presentation of the doctor's checks: one line per check, the fix under every warn and fail, a summary
 * (skipped checks are counted but are not failures).
 */
import { palette } from '../status/render.js';
import type { Check } from './checks.js';

export function summarise(checks: readonly Check[]): { ok: number; warn: number; fail: number; skip: number } {
  return {
    ok: checks.filter((c) => c.status === 'ok').length,
    warn: checks.filter((c) => c.status === 'warn').length,
    fail: checks.filter((c) => c.status === 'fail').length,
    skip: checks.filter((c) => c.status === 'skip').length,
  };
}

export function renderDoctor(checks: readonly Check[], options: { color: boolean }): string {
  const c = palette(options.color);
  const width = Math.max(...checks.map((k) => k.id.length), 8) + 2;
  const out: string[] = [];
  for (const check of checks) {
    const mark =
      check.status === 'ok'
        ? c.green('ok  ')
        : check.status === 'warn'
          ? c.yellow('warn')
          : check.status === 'skip'
            ? c.dim('skip')
            : c.red('fail');
    out.push(`${mark}  ${check.id.padEnd(width)}${check.status === 'skip' ? c.dim(check.message) : check.message}`);
    if (check.status === 'warn' || check.status === 'fail')
      out.push(`      ${' '.repeat(width)}${c.dim(`fix: ${check.fix}`)}`);
  }
  const s = summarise(checks);
  const line =
    `${s.ok} ok, ${s.warn} warning${s.warn === 1 ? '' : 's'}, ${s.fail} failure` +
    `${s.fail === 1 ? '' : 's'}${s.skip > 0 ? `, ${s.skip} skipped` : ''}`;
  out.push('', s.fail > 0 ? c.red(line) : s.warn > 0 || s.skip > 0 ? c.yellow(line) : c.green(line));
  return `${out.join('\n')}\n`;
}

export function doctorJson(checks: readonly Check[]): Record<string, unknown> {
  const s = summarise(checks);
  return { ok: s.fail === 0, summary: s, checks };
}

import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { checkProfiles, loadProfiles } from '@blue-agent/contract/profiles/index.js';

export async function profilesListCommand(ctx: Context, opts: { json?: boolean }): Promise<number> {
  const set = await loadProfiles(ctx.paths.profilesDir);
  const rows = [...set.values()].flatMap((loaded) =>
    loaded.doc.intervals.map((i) => ({
      harness: loaded.harness,
      profile: i.profile,
      introduced: i.introduced,
      before: i.before ?? null,
      verified_before: i.verified_before,
      verified_by: i.verified_by ?? null,
      lifecycle: i.lifecycle,
      operations: i.operations,
      event: i.capture?.event ?? null,
      hook_file: i.capture?.hook.file ?? null,
      hook_format: i.capture?.hook.format ?? null,
      timeout_seconds: i.capture?.hook.timeout_seconds ?? null,
    })),
  );
  if (opts.json === true) {
    ctx.stdout.write(`${JSON.stringify({ ok: true, profiles: rows }, null, 2)}\n`);
    return 0;
  }
  const table = [
    ['HARNESS', 'PROFILE', 'VERSIONS', 'VERIFIED BELOW', 'LIFECYCLE', 'OPERATIONS', 'HOOK'],
    ...rows.map((r) => [
      r.harness,
      r.profile,
      `[${r.introduced}, ${r.before ?? '∞'})`,
      r.verified_before === r.introduced
        ? 'none certified'
        : `${r.verified_before}${r.verified_by ? ` (${r.verified_by})` : ''}`,
      r.lifecycle,
      r.operations.join(',') || '-',
      r.event === null ? '-' : `${r.event} → ${r.hook_file}`,
    ]),
  ];
  const widths = table[0]!.map((_, col) => Math.max(...table.map((row) => row[col]!.length)));
  for (const row of table)
    ctx.stdout.write(
      `${row
        .map((cell, col) => cell.padEnd(widths[col]!))
        .join('  ')
        .trimEnd()}\n`,
    );
  return 0;
}

export async function profilesCheckCommand(ctx: Context, opts: { json?: boolean }): Promise<number> {
  const set = await loadProfiles(ctx.paths.profilesDir);
  const problems = checkProfiles(set);
  if (opts.json === true) {
    ctx.stdout.write(`${JSON.stringify({ ok: problems.length === 0, problems }, null, 2)}\n`);
    return problems.length === 0 ? 0 : 1;
  }
  if (problems.length === 0) {
    const count = [...set.values()].reduce((n, l) => n + l.doc.intervals.length, 0);
    ctx.stdout.write(`${set.size} profile files, ${count} intervals: consistent.\n`);
    return 0;
  }
  for (const p of problems) ctx.stderr.write(`${p.file}${p.profile ? ` (${p.profile})` : ''}: ${p.message}\n`);
  throw new BlueError(
    'PROFILE_INVALID',
    `${problems.length} problem${problems.length === 1 ? '' : 's'} in the compatibility profiles`,
    {
      hint: 'Fix the intervals listed above.',
    },
  );
}

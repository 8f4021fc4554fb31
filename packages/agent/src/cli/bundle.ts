import path from 'node:path';
import {
  extractBundle,
  formatBytes,
  readManifest,
  verifyBundle,
  type BundleManifest,
} from '@blue-agent/contract/bundle/index.js';
import type { Context } from '../context.js';
import { loadProfiles } from '@blue-agent/contract/profiles/index.js';
import { escapeControls } from '@blue-agent/contract/util/terminal-text.js';

export async function bundleVerifyCommand(ctx: Context, file: string, opts: { json?: boolean }): Promise<number> {
  const profiles = await loadProfiles(ctx.paths.profilesDir);
  const result = await verifyBundle(path.resolve(ctx.cwd, file), { profiles });
  const m = result.manifest;
  if (opts.json === true) {
    ctx.stdout.write(
      `${JSON.stringify({ ok: true, file, size: result.size, sha256: result.sha256, manifest: m }, null, 2)}\n`,
    );
  } else {
    ctx.stdout.write(
      `${escapeControls(file)}: valid ${m.artifact_format}, ${m.harness} ${m.compatibility_profile} session ` +
        `${m.native_session_id}, ` +
        `${count(m.files.length, 'file')}, ${formatBytes(result.size)}, sha256 ${result.sha256}\n`,
    );
  }
  return 0;
}

export async function bundleInspectCommand(ctx: Context, file: string, opts: { json?: boolean }): Promise<number> {
  const manifest = await readManifest(path.resolve(ctx.cwd, file));
  if (opts.json === true) ctx.stdout.write(`${JSON.stringify({ ok: true, file, manifest }, null, 2)}\n`);
  else ctx.stdout.write(renderManifest(file, manifest));
  return 0;
}

export async function bundleExtractCommand(
  ctx: Context,
  file: string,
  dir: string,
  opts: { json?: boolean },
): Promise<number> {
  const profiles = await loadProfiles(ctx.paths.profilesDir);
  const target = path.resolve(ctx.cwd, dir);
  const result = await extractBundle(path.resolve(ctx.cwd, file), target, { profiles });
  if (opts.json === true) {
    ctx.stdout.write(
      `${JSON.stringify(
        {
          ok: true,
          file,
          dir: target,
          size: result.size,
          sha256: result.sha256,
          manifest: result.manifest,
          files: result.files,
        },
        null,
        2,
      )}\n`,
    );
    return 0;
  }
  const m = result.manifest;
  ctx.stdout.write(
    `${escapeControls(file)}: verified and extracted manifest.json and ${count(m.files.length, 'file')} into ` +
      `${escapeControls(target)}\n`,
  );
  const rows = m.files.map((f, i) => [path.relative(target, result.files[i]!), f.role, formatBytes(f.size)]);
  ctx.stdout.write(table(rows, '  '));
  return 0;
}

function renderManifest(file: string, m: BundleManifest): string {
  const fields: [string, string | undefined][] = [
    ['bundle', file],
    ['format', `${m.artifact_format} (schema ${m.schema_version})`],
    ['harness', m.harness],
    ['profile', m.compatibility_profile],
    ['session', m.native_session_id],
    ['captured', `${new Date(m.captured_at_unix_ms).toISOString()} (${m.captured_at_unix_ms})`],
    ['cwd', m.cwd],
    [
      'repository',
      m.repository === undefined
        ? undefined
        : `${m.repository.root}${m.repository.remote === undefined ? '' : ` (${m.repository.remote})`}`,
    ],
    ['title', m.title],
    ['summary', m.summary],
  ];
  const width = Math.max(...fields.map(([k]) => k.length));
  let out = '';
  for (const [key, value] of fields) if (value !== undefined) out += `${key.padEnd(width)}  ${escapeControls(value)}\n`;
  out += `\n${table([
    ['ROLE', 'PATH', 'NATIVE PATH', 'SIZE', 'SHA256'],
    ...m.files.map((f) => [f.role, f.path, f.native_path ?? '-', String(f.size), f.sha256]),
  ])}`;
  out +=
    `\n${count(m.files.length, 'file')}, ${formatBytes(m.files.reduce((n, f) => n + f.size, 0))}. This is ` +
    `what the bundle claims; \`blue-agent bundle verify\` checks it.\n`;
  return out;
}

function table(rows: string[][], indent = ''): string {
  const cells = rows.map((row) => row.map(escapeControls));
  const widths = cells[0]?.map((_, col) => Math.max(...cells.map((row) => row[col]!.length))) ?? [];
  return cells
    .map(
      (row) =>
        `${indent}${row
          .map((cell, col) => cell.padEnd(widths[col]!))
          .join('  ')
          .trimEnd()}\n`,
    )
    .join('');
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

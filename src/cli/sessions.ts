/**
 * `blue-agent sessions list|show|share|export`: the captured sessions on the Control API. This module does the I/O;
 * the Control API calls are in src/control-api/sessions.ts and the export rendering in src/sessions/export.ts.
 */
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { extractBundle, formatBytes } from '../bundle/index.js';
import type { Context } from '../context.js';
import { BlueError, toBlueError, usageError } from '../errors.js';
import { loadProfiles } from '../profiles/index.js';
import { printable, sessionLabel, SessionsApi, type SessionUpload, type Sharing } from '../control-api/sessions.js';

export { sessionLabel };
import { EXPORT_FORMATS, readTranscript, renderJson, renderMarkdown, wantedFiles, type ExportFormat, type ExportInput } from '../sessions/export.js';
import type { TranscriptSource } from '../harness-kit/transcript.js';

const SHARING_MODES = ['private', 'workspace', 'selected'] as const;
/** Sessions listed at most. */
const LIST_MAX = 1000;
const MAX_RECIPIENTS = 100;

async function withApi<T>(ctx: Context, work: (api: SessionsApi) => Promise<T>): Promise<T> {
  const api = await SessionsApi.fromContext(ctx);
  try {
    return await work(api);
  } finally {
    await api.close();
  }
}

function writeJson(ctx: Context, doc: Record<string, unknown>): void {
  ctx.stdout.write(`${JSON.stringify({ ok: true, ...doc }, null, 2)}\n`);
}


function ownerLabel(s: SessionUpload): string {
  if (s.owned) return 'you';
  const who = s.owner_email ?? s.user_id;
  return s.sharing === 'shared' ? `shared by ${who}` : who;
}

/** `2026-01-01 09:30` (UTC) from an ISO time; the text itself when it is not one. */
function shortTime(iso: string): string {
  return /^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(iso) ? `${iso.slice(0, 10)} ${iso.slice(11, 16)}` : iso;
}

// ---------------------------------------------------------------------------------------------------------------
// list

const LIST_STATUSES = ['complete', 'pending', 'failed', 'superseded', 'any'] as const;

/**
 * `status`: which revisions to list. By default `complete`, the current revision of each session (an upload again makes
 * a new revision and supersedes the old one); `pending`, `failed` or `superseded` list those instead, `any` all of them.
 */
export async function sessionsListCommand(ctx: Context, opts: { q?: string; harness?: string[]; all?: boolean; json?: boolean; status?: string }): Promise<number> {
  const status = (opts.status ?? 'complete') as (typeof LIST_STATUSES)[number];
  if (!(LIST_STATUSES as readonly string[]).includes(status)) {
    throw usageError(`--status must be one of ${LIST_STATUSES.join(', ')}, not "${printable(status).slice(0, 40)}"`, 'complete: the current revision of each session (the default); any: every revision.');
  }
  const harnesses = [...new Set(opts.harness ?? [])];
  const q = opts.q?.trim();
  const { items, truncated } = await withApi(ctx, (api) =>
    api.list(
      {
        ...(q === undefined || q === '' ? {} : { q }),
        ...(harnesses.length === 1 ? { harness: harnesses[0] } : {}),
        ...(status === 'any' ? {} : { status }),
      },
      { max: LIST_MAX },
    ),
  );
  // The Control API answers administrators with everything: "your sessions" are the ones you own.
  const sessions = items.filter((s) => (opts.all === true || s.owned) && (harnesses.length === 0 || harnesses.includes(s.harness)));
  if (opts.json === true) {
    writeJson(ctx, { all: opts.all === true, truncated, sessions });
    return 0;
  }
  if (sessions.length === 0) {
    ctx.stdout.write(
      opts.all === true
        ? 'No sessions.\n'
        : `No sessions of yours${q === undefined || q === '' ? '' : ' match'}.${items.length > 0 ? ' Others are visible to you: add --all to see them.' : ''}\n`,
    );
    return 0;
  }
  const columns = terminalColumns(ctx);
  ctx.stdout.write(sessionTable(sessions, columns));
  const footer = `${sessions.length} session${sessions.length === 1 ? '' : 's'}${truncated ? ` (the first ${LIST_MAX}; narrow it with --q or --harness)` : ''}.`;
  ctx.stdout.write(`${footer}\n`);
  return 0;
}

function terminalColumns(ctx: Context): number | undefined {
  if (!ctx.stdout.isTTY) return undefined;
  const columns = (ctx.stdout as { columns?: unknown }).columns;
  return typeof columns === 'number' && columns > 0 ? columns : 80;
}

const MIN_TITLE = 12;
const MIN_OWNER = 10;

/** The table `sessions list` prints; on a terminal narrower than it, ids are shortened to 8 characters, then titles cut. */
export function sessionTable(sessions: readonly SessionUpload[], columns?: number): string {
  const header = ['TITLE', 'HARNESS', 'OWNER', 'STATUS', 'UPDATED', 'ID'];
  let rows = sessions.map((s) => [sessionLabel(s), s.harness, printable(ownerLabel(s)), s.status, shortTime(printable(s.updated_at)), s.upload_id]);
  const width = (all: string[][]) => {
    const widths = header.map((h, col) => Math.max(h.length, ...all.map((r) => r[col]!.length)));
    return { widths, total: widths.reduce((a, b) => a + b, 0) + 2 * (widths.length - 1) };
  };
  let { widths, total } = width(rows);
  if (columns !== undefined && total > columns) {
    rows = rows.map((r) => [...r.slice(0, 5), r[5]!.slice(0, 8)]);
    ({ widths, total } = width(rows));
  }
  // Then the title, then the owner, each down to a floor.
  for (const [col, floor] of [[0, MIN_TITLE], [2, MIN_OWNER]] as const) {
    if (columns === undefined || total <= columns) break;
    const room = Math.max(floor, widths[col]! - (total - columns));
    rows = rows.map((r) => r.map((cell, i) => (i === col && cell.length > room ? `${cell.slice(0, room - 1)}…` : cell)));
    ({ widths, total } = width(rows));
  }
  return [header, ...rows].map((r) => `${r.map((cell, col) => cell.padEnd(widths[col]!)).join('  ').trimEnd()}\n`).join('');
}

// ---------------------------------------------------------------------------------------------------------------
// show

export async function sessionsShowCommand(ctx: Context, id: string, opts: { json?: boolean }): Promise<number> {
  const { session, sharing } = await withApi(ctx, async (api) => {
    const session = await api.resolve(id);
    // Only the owner (or an administrator) may read the recipients; others see "shared with you".
    const sharing = session.owned ? await api.sharing(session.upload_id) : undefined;
    return { session, sharing };
  });
  if (opts.json === true) {
    writeJson(ctx, { session, ...(sharing === undefined ? {} : { sharing }) });
    return 0;
  }
  ctx.stdout.write(renderSession(session, sharing));
  return 0;
}

function sharingText(session: SessionUpload, sharing: Sharing | undefined): string {
  if (sharing !== undefined) {
    if (sharing.mode === 'selected') return `selected: ${sharing.recipients.map((r) => r.email || r.user_id).join(', ') || '(nobody)'}`;
    return sharing.mode === 'workspace' ? 'workspace (everyone on this Control API)' : 'private (only you)';
  }
  return session.sharing === 'shared' ? 'shared with you' : session.sharing;
}

function renderSession(s: SessionUpload, sharing: Sharing | undefined): string {
  const fields: [string, string | null | undefined][] = [
    ['id', s.upload_id],
    ['harness', s.harness],
    ['profile', s.compatibility_profile],
    ['native id', s.session_id],
    ['owner', s.owned ? `you (${s.owner_email ?? s.user_id})` : s.owner_email ?? s.user_id],
    ['status', `${s.status}, revision ${s.revision}${s.resumable ? ', resumable' : ''}`],
    ['size', `${formatBytes(s.size_bytes)}, sha256 ${s.sha256}`],
    ['cwd', s.cwd],
    ['repository', s.repository_root === null ? null : `${s.repository_root}${s.repository_remote === null ? '' : ` (${s.repository_remote})`}`],
    ['captured', s.captured_at_unix_ms === null ? null : new Date(s.captured_at_unix_ms).toISOString()],
    ['created', s.created_at],
    ['updated', s.updated_at],
    ['completed', s.completed_at],
    ['retention', `${s.expired ? 'expired' : 'kept until'} ${s.retention_deadline}`],
    ['sharing', sharingText(s, sharing)],
    ['summary', s.summary],
  ];
  const width = Math.max(...fields.map(([k]) => k.length));
  let out = `${sessionLabel(s)}\n`;
  for (const [key, value] of fields) if (value !== null && value !== undefined && value !== '') out += `  ${key.padEnd(width)}  ${printable(value)}\n`;
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// share

export async function sessionsShareCommand(ctx: Context, id: string, opts: { mode: string; user?: string[]; json?: boolean }): Promise<number> {
  // Everything about the flags is checked before the Control API is asked anything.
  const mode = opts.mode as Sharing['mode'];
  if (!(SHARING_MODES as readonly string[]).includes(mode)) {
    throw usageError(`--mode must be private, workspace or selected, not "${printable(opts.mode).slice(0, 40)}"`, 'private: only you; workspace: everyone on the Control API; selected: the people named with --user.');
  }
  const users = [...new Set((opts.user ?? []).map((u) => u.trim()))];
  if (mode !== 'selected' && users.length > 0) {
    throw usageError(`--user names recipients only with --mode selected, not with --mode ${mode}`, 'Use --mode selected --user EMAIL (repeatable), or drop --user.');
  }
  if (mode === 'selected' && users.length === 0) {
    throw usageError('--mode selected needs at least one --user EMAIL', 'Name each recipient with --user (repeatable).');
  }
  for (const user of users) {
    if (user === '' || user.length > 320 || /[\s\u0000-\u001f\u007f]/.test(user)) {
      throw usageError(`--user "${printable(user).slice(0, 60)}" is not an e-mail address or user id`, 'Give the e-mail address the person uses on the Control API.');
    }
  }
  if (users.length > MAX_RECIPIENTS) throw usageError(`--user is given ${users.length} times; at most ${MAX_RECIPIENTS} recipients are allowed`, 'Share with fewer people, or with the whole workspace: --mode workspace.');

  const { session, sharing } = await withApi(ctx, async (api) => {
    const session = await api.resolve(id);
    if (!session.owned) {
      throw new BlueError('SESSION_NOT_OWNED', `session ${session.upload_id} (${sessionLabel(session)}) belongs to ${session.owner_email ?? session.user_id}; only its owner may change its sharing`, {
        hint: 'Ask the owner to share it.',
      });
    }
    const sharing = await api.setSharing(session.upload_id, { mode, ...(mode === 'selected' ? { user_ids: users } : {}) });
    return { session, sharing };
  });
  if (opts.json === true) {
    writeJson(ctx, { upload_id: session.upload_id, sharing });
    return 0;
  }
  ctx.stdout.write(`${printable(sessionLabel(session))} (${session.upload_id}): sharing is now ${printable(sharingText(session, sharing))}\n`);
  return 0;
}

// ---------------------------------------------------------------------------------------------------------------
// export

export async function sessionsExportCommand(ctx: Context, idOrFile: string, opts: { format: string; out?: string }): Promise<number> {
  const format = opts.format as ExportFormat;
  if (!(EXPORT_FORMATS as readonly string[]).includes(format)) {
    throw usageError(`--format must be markdown or json, not "${printable(opts.format).slice(0, 40)}"`, 'markdown: the conversation, readable; json: the manifest and the Control API\'s metadata.');
  }
  const local = path.resolve(ctx.cwd, idOrFile);
  const isFile = await stat(local).then(
    (s) => s.isFile(),
    () => false,
  );
  const profiles = await loadProfiles(ctx.paths.profilesDir);
  const temp = await mkdtemp(path.join(tmpdir(), 'blue-agent-export-'));
  let input: ExportInput;
  try {
    if (isFile) {
      input = await readBundle(local, path.join(temp, 'bundle'), profiles, format);
    } else {
      input = await withApi(ctx, async (api) => {
        const session = await api.resolve(idOrFile);
        const file = path.join(temp, 'bundle.tar.gz');
        await api.download(session, file);
        return { ...(await readBundle(file, path.join(temp, 'bundle'), profiles, format)), session };
      });
    }
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
  const text = format === 'json' ? renderJson(input) : renderMarkdown(input);
  if (opts.out === undefined) {
    ctx.stdout.write(text);
    return 0;
  }
  const out = path.resolve(ctx.cwd, opts.out);
  await writeFile(out, text, { mode: 0o600 }).catch((error: unknown) => {
    throw toBlueError(error, { action: 'write the export to', file: out });
  });
  ctx.stdout.write(`Wrote the ${format} export of ${printable(input.session?.upload_id ?? idOrFile)} to ${printable(out)}\n`);
  return 0;
}

/** Verifies and extracts the bundle (nothing in it is trusted before that), then reads the files the harness needs. */
async function readBundle(file: string, dir: string, profiles: Awaited<ReturnType<typeof loadProfiles>>, format: ExportFormat): Promise<ExportInput> {
  const result = await extractBundle(file, dir, { profiles });
  const manifest = result.manifest;
  const bundle = { size: result.size, sha256: result.sha256 };
  if (format === 'json') return { manifest, bundle };
  const sources: TranscriptSource[] = [];
  for (const i of wantedFiles(manifest)) {
    const f = manifest.files[i]!;
    sources.push({ role: f.role, path: f.path, ...(f.native_path === undefined ? {} : { native_path: f.native_path }), bytes: await readFile(result.files[i]!) });
  }
  return { manifest, bundle, transcript: readTranscript(manifest, sources) };
}

/**
 * `blue-agent sessions list|show|share|export`: the captured sessions on the Control API. This module does the I/O;
 * the Control API calls are in src/control-api/sessions.ts and the export rendering in src/sessions/export.ts.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { extractBundle, formatBytes } from '@blue-agent/contract/bundle/index.js';
import type { Context } from '../context.js';
import { BlueError, toBlueError, usageError } from '@blue-agent/contract/errors.js';
import { loadProfiles } from '@blue-agent/contract/profiles/index.js';
import {
  printable,
  sessionLabel,
  SessionsApi,
  type CapturedSession,
  type SessionDetail,
  type Sharing,
  type SharingMode,
} from '../control-api/sessions.js';

export { sessionLabel };
import {
  EXPORT_FORMATS,
  renderJson,
  renderMarkdown,
  renderRecordJson,
  renderRecordMarkdown,
  type ExportFormat,
  type ExportInput,
  type RecordExportInput,
} from '../sessions/export.js';
import { parseRecord, RECORD_FORMAT } from '@blue-agent/contract/bundle/record.js';
import type { TranscriptSource } from '@blue-agent/contract/harnesses/types.js';
import { readTranscript, wantedFiles } from '@blue-agent/contract/harnesses/index.js';
import { MAX_STORE_BYTES, recordRedaction, storeRecord, uploadRecord, type StoreFlags } from '../sessions/store.js';

const SHARING_MODES = ['private', 'workspace', 'selected'] as const;
const MAX_RECIPIENTS = 100;
/** Recipients named at most by `show`. */
const SHOWN_RECIPIENTS = 20;

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

/**
 * A session as `--json` prints it: the Control API's CapturedSession, plus what the agent derives — `owned` (its
 * `user_id` is the caller's, from GET /auth/me) and `expired` (its `retention_expires_at` has passed).
 */
function sessionJson(
  api: SessionsApi,
  s: CapturedSession,
  owned: boolean,
): CapturedSession & { owned: boolean; expired: boolean } {
  return { ...s, owned, expired: api.expired(s) };
}

/** `you`, `shared by EMAIL` (shared with the workspace or named people), or the owner's address (an administrator's
 * view). */
function ownerLabel(s: CapturedSession, owned: boolean): string {
  if (owned) return 'you';
  return s.sharing_mode === 'private' ? s.user_email : `shared by ${s.user_email}`;
}

/** `2026-01-01 09:30` (UTC) from an ISO time; the text itself when it is not one. */
function shortTime(iso: string): string {
  return /^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(iso) ? `${iso.slice(0, 10)} ${iso.slice(11, 16)}` : iso;
}

// ---------------------------------------------------------------------------------------------------------------
// list

/** `sessions list --limit`: how many rows at most, and by default. */
export const LIST_LIMIT_MAX = 200;
export const LIST_LIMIT_DEFAULT = 20;
const PROVIDER = /^[a-z0-9][a-z0-9_.-]{0,63}$/;

export interface ListFlags {
  q?: string;
  harness?: string[];
  provider?: string[];
  tag?: string;
  all?: boolean;
  json?: boolean;
  limit?: string;
  offset?: string;
}

/** A whole number flag in [min, max]; a usage error naming the flag otherwise. */
function wholeFlag(name: string, value: string | undefined, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d{1,9}$/.test(value.trim()) || n < min || n > max)
    throw usageError(
      `--${name} must be a whole number from ${min} to ${max}, not "${printable(value).slice(0, 20)}"`,
      `For example: --${name} ${fallback === 0 ? 20 : fallback}.`,
    );
  return n;
}

/**
 * One row per session with a completed upload (the Control API lists no other), newest first (best match first with
 * --q), `--limit` rows from `--offset`, and how many there are in all. Without --all only the caller's own
 * (the Control API filters by owner, so the total counts them alone).
 */
export async function sessionsListCommand(ctx: Context, opts: ListFlags): Promise<number> {
  const limit = wholeFlag('limit', opts.limit, 1, LIST_LIMIT_MAX, LIST_LIMIT_DEFAULT);
  const offset = wholeFlag('offset', opts.offset, 0, 1_000_000_000, 0);
  const harnesses = [...new Set([...(opts.harness ?? []), ...(opts.provider ?? [])])];
  for (const h of harnesses) {
    if (!PROVIDER.test(h))
      throw usageError(
        `--provider "${printable(h).slice(0, 64)}" is not a harness or provider name`,
        'Lower-case letters, digits, "_", "." and "-": --provider chatgpt_export.',
      );
  }
  const tag = opts.tag;
  if (tag !== undefined && (tag.trim() === '' || /[\s,\u0000-\u001f\u007f]/.test(tag) || tag.length > 64))
    throw usageError('--tag must be one word of 1 to 64 characters', 'For example: --tag design.');
  const q = opts.q?.trim();
  const query = {
    ...(q === undefined || q === '' ? {} : { q }),
    ...(harnesses.length === 0 ? {} : { harnesses }),
    ...(tag === undefined ? {} : { tag }),
  };
  const { rows, total, others } = await withApi(ctx, async (api) => {
    const me = await api.me();
    const { items, total } = await api.window(
      { ...query, ...(opts.all === true ? {} : { owner: me.id }) },
      offset,
      limit,
    );
    const rows = items.map((s) => ({
      session: s,
      owned: s.user_id === me.id,
      json: sessionJson(api, s, s.user_id === me.id),
    }));
    // Nothing of yours: say whether others are visible (one more question, only then).
    const others = opts.all !== true && total === 0 ? (await api.window(query, 0, 1)).total : 0;
    return { rows, total, others };
  });
  const truncated = offset + rows.length < total;
  if (opts.json === true) {
    writeJson(ctx, { all: opts.all === true, total, offset, limit, truncated, sessions: rows.map((r) => r.json) });
    return 0;
  }
  if (rows.length === 0) {
    const none =
      total > 0
        ? `No sessions from --offset ${offset}: there ${total === 1 ? 'is' : 'are'} ${total}.`
        : opts.all === true
          ? 'No sessions.'
          : `No sessions of yours${q === undefined || q === '' ? '' : ' match'}.` +
            `${others > 0 ? ' Others are visible to you: add --all to see them.' : ''}`;
    ctx.stdout.write(`${none}\n`);
    return 0;
  }
  ctx.stdout.write(sessionTable(rows, terminalColumns(ctx)));
  const shown =
    offset === 0 && !truncated
      ? `${total} session${total === 1 ? '' : 's'}.`
      : `${offset + 1}-${offset + rows.length} of ${total} sessions` +
        `${truncated ? ` (next: --offset ${offset + rows.length})` : ''}.`;
  ctx.stdout.write(`${shown}\n`);
  return 0;
}

function terminalColumns(ctx: Context): number | undefined {
  if (!ctx.stdout.isTTY) return undefined;
  const columns = (ctx.stdout as { columns?: unknown }).columns;
  return typeof columns === 'number' && columns > 0 ? columns : 80;
}

const MIN_TITLE = 12;
const MIN_OWNER = 10;

/** The table `sessions list` prints; on a terminal narrower than it, ids are shortened to 8 characters, then titles
 * cut. */
export function sessionTable(rows: readonly { session: CapturedSession; owned: boolean }[], columns?: number): string {
  const header = ['TITLE', 'HARNESS', 'OWNER', 'STATUS', 'UPDATED', 'ID'];
  let cells = rows.map(({ session: s, owned }) => [
    `${sessionLabel(s)}${s.tags.length === 0 ? '' : ` #${s.tags.join(' #')}`}`,
    s.harness,
    printable(ownerLabel(s, owned)),
    s.status ?? '-',
    shortTime(printable(s.updated_at)),
    s.id,
  ]);
  const width = (all: string[][]) => {
    const widths = header.map((h, col) => Math.max(h.length, ...all.map((r) => r[col]!.length)));
    return { widths, total: widths.reduce((a, b) => a + b, 0) + 2 * (widths.length - 1) };
  };
  let { widths, total } = width(cells);
  if (columns !== undefined && total > columns) {
    cells = cells.map((r) => [...r.slice(0, 5), r[5]!.slice(0, 8)]);
    ({ widths, total } = width(cells));
  }
  // Then the title, then the owner, each down to a floor.
  for (const [col, floor] of [
    [0, MIN_TITLE],
    [2, MIN_OWNER],
  ] as const) {
    if (columns === undefined || total <= columns) break;
    const room = Math.max(floor, widths[col]! - (total - columns));
    cells = cells.map((r) =>
      r.map((cell, i) => (i === col && cell.length > room ? `${cell.slice(0, room - 1)}…` : cell)),
    );
    ({ widths, total } = width(cells));
  }
  // A search's snippet goes under its row, indented, cut to the terminal.
  const snippet = (i: number): string => {
    const text = rows[i]!.session.snippet;
    if (text === undefined) return '';
    const room = columns === undefined ? text.length : Math.max(10, columns - 4);
    return `    ${text.length > room ? `${text.slice(0, room - 1)}…` : text}\n`;
  };
  const line = (r: string[]) =>
    `${r
      .map((cell, col) => cell.padEnd(widths[col]!))
      .join('  ')
      .trimEnd()}\n`;
  return line(header) + cells.map((r, i) => line(r) + snippet(i)).join('');
}

// ---------------------------------------------------------------------------------------------------------------
// store

/** At most this much is read from stdin for a stored session. */
async function readContent(ctx: Context): Promise<string> {
  if (ctx.stdin.isTTY)
    throw usageError(
      'sessions store reads the session from stdin, and stdin is a terminal',
      'Pipe it in: blue-agent sessions store --title T --provider P < notes.md',
    );
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.stdin.stream() as AsyncIterable<Buffer | string>) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += buffer.length;
    if (size > MAX_STORE_BYTES)
      throw usageError(
        `the content on stdin is larger than ${formatBytes(MAX_STORE_BYTES)}`,
        'Store a smaller session, or split it.',
      );
    chunks.push(buffer);
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw usageError('the content on stdin is not UTF-8 text', 'Store text: a transcript, notes, a conversation.');
  }
}

/** `sessions store`: a session record from stdin, with its title, provider and tags; never resumable. */
export async function sessionsStoreCommand(ctx: Context, opts: StoreFlags & { json?: boolean }): Promise<number> {
  // Every flag is checked before stdin is read, and all of it before the Control API is asked anything.
  storeRecord(opts, 'x');
  const record = storeRecord(opts, await readContent(ctx));
  const redact = await recordRedaction(ctx);
  const stored = await withApi(ctx, (api) => uploadRecord(api.client, record, redact));
  const sent = stored.record;
  if (opts.json === true) {
    writeJson(ctx, {
      id: stored.id ?? null,
      already: stored.already,
      provider: sent.provider,
      native_session_id: stored.native_session_id,
      title: sent.title,
      tags: sent.tags,
    });
    return 0;
  }
  ctx.stdout.write(
    `${stored.already ? 'Already stored' : 'Stored'} "${printable(sent.title)}" (${sent.provider})` +
      `${stored.id === undefined ? '' : ` as ${stored.id}`}.\n`,
  );
  return 0;
}

// ---------------------------------------------------------------------------------------------------------------
// show

export async function sessionsShowCommand(ctx: Context, id: string, opts: { json?: boolean }): Promise<number> {
  const shown = await withApi(ctx, async (api) => {
    const detail = await api.resolveDetail(id);
    // Anyone who may see a session may read its sharing; `can_edit` says whether the caller owns it. Only the owner
    // is shown the recipients; others see "shared with you".
    const sharing = await api.sharing(detail.session.id);
    return {
      detail,
      sharing,
      expired: api.expired(detail.session),
      json: sessionJson(api, detail.session, sharing.can_edit),
    };
  });
  const { detail, sharing } = shown;
  if (opts.json === true) {
    writeJson(ctx, { session: shown.json, artifacts: detail.artifacts, ...(sharing.can_edit ? { sharing } : {}) });
    return 0;
  }
  ctx.stdout.write(renderSession(detail, sharing, shown.expired));
  return 0;
}

function sharingText(mode: SharingMode, recipients: readonly string[] | undefined, owned: boolean): string {
  if (!owned) return mode === 'private' ? 'private' : 'shared with you';
  if (mode === 'selected') {
    const names = recipients ?? [];
    const more = names.length > SHOWN_RECIPIENTS ? ` and ${names.length - SHOWN_RECIPIENTS} more` : '';
    return `selected: ${names.slice(0, SHOWN_RECIPIENTS).join(', ') || '(nobody)'}${more}`;
  }
  return mode === 'workspace' ? 'workspace (everyone on this Control API)' : 'private (only you)';
}

function renderSession(detail: SessionDetail, sharing: Sharing, expired: boolean): string {
  const s = detail.session;
  const owned = sharing.can_edit;
  const uploads = detail.artifacts;
  const statuses = [...new Set(uploads.map((a) => a.status))]
    .map((st) => `${uploads.filter((a) => a.status === st).length} ${st}`)
    .join(', ');
  const fields: [string, string | null | undefined][] = [
    ['id', s.id],
    ['harness', s.harness],
    ['profile', s.compatibility_profile],
    ['native id', s.native_session_id],
    ['owner', owned ? `you (${s.user_email})` : s.user_email],
    ['status', `${s.status ?? 'no completed upload'}${s.resumable ? ', resumable' : ''}`],
    [
      'size',
      s.size_bytes === null ? null : `${formatBytes(s.size_bytes)}${s.sha256 === null ? '' : `, sha256 ${s.sha256}`}`,
    ],
    ['uploads', uploads.length === 0 ? null : `${uploads.length} (${statuses})`],
    ['cwd', s.cwd],
    [
      'repository',
      s.repository.root === null
        ? null
        : `${s.repository.root}${s.repository.remote === null ? '' : ` (${s.repository.remote})`}`,
    ],
    ['captured', s.source_captured_at],
    ['updated', s.updated_at],
    [
      'retention',
      s.retention_expires_at === null ? null : `${expired ? 'expired' : 'kept until'} ${s.retention_expires_at}`,
    ],
    [
      'sharing',
      sharingText(
        s.sharing_mode,
        sharing.recipients.map((r) => r.email || r.id),
        owned,
      ),
    ],
    ['summary', s.summary],
  ];
  const width = Math.max(...fields.map(([k]) => k.length));
  let out = `${sessionLabel(s)}\n`;
  for (const [key, value] of fields)
    if (value !== null && value !== undefined && value !== '') out += `  ${key.padEnd(width)}  ${printable(value)}\n`;
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// delete

/**
 * Deletes a captured session from the Control API: every revision, its sharing and its stored bundles. Without
 * `--yes` it only says what would go (exit 2): nothing can bring a deleted session back.
 */
export async function sessionsDeleteCommand(
  ctx: Context,
  id: string,
  opts: { yes?: boolean; json?: boolean },
): Promise<number> {
  const session = await withApi(ctx, async (api) => {
    const session = await api.resolve(id);
    const me = await api.me();
    if (session.user_id !== me.id && me.role !== 'admin') {
      throw new BlueError(
        'SESSION_NOT_OWNED',
        `session ${session.id} (${sessionLabel(session)}) belongs to ${session.user_email}; only its owner or an ` +
          `administrator may delete it`,
        {
          hint: 'Ask the owner to delete it.',
        },
      );
    }
    if (opts.yes !== true) {
      throw usageError(
        `sessions delete removes ${sessionLabel(session)} (${session.id}, ` +
          `${ownerLabel(session, session.user_id === me.id)}) and every revision of it from the Control API for ` +
          `good; nothing is deleted without --yes`,
        `Run again with --yes: blue-agent sessions delete ${session.id} --yes`,
      );
    }
    await api.delete(session.id);
    return session;
  });
  if (opts.json === true) {
    writeJson(ctx, { id: session.id, deleted: true });
    return 0;
  }
  ctx.stdout.write(`Deleted ${printable(sessionLabel(session))} (${session.id}) and every revision of it.\n`);
  return 0;
}

// ---------------------------------------------------------------------------------------------------------------
// share

export async function sessionsShareCommand(
  ctx: Context,
  id: string,
  opts: { mode: string; user?: string[]; json?: boolean },
): Promise<number> {
  // Everything about the flags is checked before the Control API is asked anything.
  const mode = opts.mode as SharingMode;
  if (!(SHARING_MODES as readonly string[]).includes(mode)) {
    throw usageError(
      `--mode must be private, workspace or selected, not "${printable(opts.mode).slice(0, 40)}"`,
      'private: only you; workspace: everyone on the Control API; selected: the people named with --user.',
    );
  }
  const users = [...new Set((opts.user ?? []).map((u) => u.trim()))];
  if (mode !== 'selected' && users.length > 0) {
    throw usageError(
      `--user names recipients only with --mode selected, not with --mode ${mode}`,
      'Use --mode selected --user EMAIL (repeatable), or drop --user.',
    );
  }
  if (mode === 'selected' && users.length === 0) {
    throw usageError(
      '--mode selected needs at least one --user EMAIL',
      'Name each recipient with --user (repeatable).',
    );
  }
  for (const user of users) {
    if (user === '' || user.length > 320 || /[\s\u0000-\u001f\u007f]/.test(user)) {
      throw usageError(
        `--user "${printable(user).slice(0, 60)}" is not an e-mail address or user id`,
        'Give the e-mail address the person uses on the Control API.',
      );
    }
  }
  if (users.length > MAX_RECIPIENTS)
    throw usageError(
      `--user is given ${users.length} times; at most ${MAX_RECIPIENTS} recipients are allowed`,
      'Share with fewer people, or with the whole workspace: --mode workspace.',
    );

  const { session, update, names } = await withApi(ctx, async (api) => {
    const session = await api.resolve(id);
    const me = await api.me();
    if (session.user_id !== me.id) {
      throw new BlueError(
        'SESSION_NOT_OWNED',
        `session ${session.id} (${sessionLabel(session)}) belongs to ${session.user_email}; only its owner may ` +
          `change its sharing`,
        {
          hint: 'Ask the owner to share it.',
        },
      );
    }
    // The Control API takes user ids: addresses are looked up among the members (never yourself: you always see it).
    const own = (u: string) => u.toLowerCase() === me.email.toLowerCase() || u === me.id;
    const others = users.filter((u) => !own(u));
    if (mode === 'selected' && others.length === 0) {
      throw usageError(
        '--user names only you; the owner always sees their session',
        'Name someone else with --user, or use --mode private.',
      );
    }
    const byEmail = await api.memberIds(others.filter((u) => u.includes('@')));
    const names = new Map([...byEmail].map(([email, uid]) => [uid, email]));
    const ids = [...new Set([...byEmail.values(), ...others.filter((u) => !u.includes('@'))])];
    const update = await api.setSharing(session.id, mode, ids);
    return { session, update, names };
  });
  if (opts.json === true) {
    writeJson(ctx, { id: session.id, sharing: { mode: update.mode, user_ids: update.user_ids } });
    return 0;
  }
  const recipients = update.user_ids.map((uid) => names.get(uid) ?? uid);
  ctx.stdout.write(
    `${printable(sessionLabel(session))} (${session.id}): sharing is now ` +
      `${printable(sharingText(update.mode, recipients, true))}\n`,
  );
  return 0;
}

// ---------------------------------------------------------------------------------------------------------------
// export

export async function sessionsExportCommand(
  ctx: Context,
  idOrFile: string,
  opts: { format: string; out?: string },
): Promise<number> {
  const format = opts.format as ExportFormat;
  if (!(EXPORT_FORMATS as readonly string[]).includes(format)) {
    throw usageError(
      `--format must be markdown or json, not "${printable(opts.format).slice(0, 40)}"`,
      "markdown: the conversation, readable; json: the manifest and the Control API's metadata.",
    );
  }
  const local = path.resolve(ctx.cwd, idOrFile);
  const isFile = await stat(local).then(
    (s) => s.isFile(),
    () => false,
  );
  const profiles = await loadProfiles(ctx.paths.profilesDir);
  const temp = await mkdtemp(path.join(tmpdir(), 'blue-agent-export-'));
  let input: ExportInput | RecordExportInput;
  try {
    if (isFile) {
      input = await readBundle(local, path.join(temp, 'bundle'), profiles, format);
    } else {
      input = await withApi(ctx, async (api) => {
        const session = await api.resolve(idOrFile);
        const file = path.join(temp, 'bundle.tar.gz');
        await api.download(session, file);
        if (session.artifact_format === RECORD_FORMAT) {
          const bytes = await readFile(file);
          return {
            record: parseRecord(bytes, `session ${session.id}`),
            session,
            object: { size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') },
          };
        }
        return { ...(await readBundle(file, path.join(temp, 'bundle'), profiles, format)), session };
      });
    }
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
  const text =
    'record' in input
      ? format === 'json'
        ? renderRecordJson(input)
        : renderRecordMarkdown(input)
      : format === 'json'
        ? renderJson(input)
        : renderMarkdown(input);
  if (opts.out === undefined) {
    ctx.stdout.write(text);
    return 0;
  }
  const out = path.resolve(ctx.cwd, opts.out);
  await writeFile(out, text, { mode: 0o600 }).catch((error: unknown) => {
    throw toBlueError(error, { action: 'write the export to', file: out });
  });
  ctx.stdout.write(`Wrote the ${format} export of ${printable(input.session?.id ?? idOrFile)} to ${printable(out)}\n`);
  return 0;
}

/** Verifies and extracts the bundle (nothing in it is trusted before that), then reads the files the harness needs. */
async function readBundle(
  file: string,
  dir: string,
  profiles: Awaited<ReturnType<typeof loadProfiles>>,
  format: ExportFormat,
): Promise<ExportInput> {
  const result = await extractBundle(file, dir, { profiles });
  const manifest = result.manifest;
  const bundle = { size: result.size, sha256: result.sha256 };
  if (format === 'json') return { manifest, bundle };
  const sources: TranscriptSource[] = [];
  for (const i of wantedFiles(manifest)) {
    const f = manifest.files[i]!;
    sources.push({
      role: f.role,
      path: f.path,
      ...(f.native_path === undefined ? {} : { native_path: f.native_path }),
      bytes: await readFile(result.files[i]!),
    });
  }
  return { manifest, bundle, transcript: readTranscript(manifest, sources) };
}

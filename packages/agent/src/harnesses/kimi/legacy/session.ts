/**
 * kimi-cli's session files (the Python CLI Kimi Code succeeds; profile kimi-v1_28_0), from its source
 * (MoonshotAI/kimi-cli, 1.4x):
 *   - `metadata.py`: a work directory's sessions live in `<share>/sessions/<md5(work dir path)>/`, the path being the
 *     UTF-8 text of the work dir as `KaosPath.canonical()` gives it (absolute, `.`/`..` folded, links not resolved);
 *   - `session.py`: one folder per session, `<session id>/`, with `context.jsonl` (required to resume),
 *     `wire.jsonl` (the wire log; `Session.refresh` takes the title from its first `TurnBegin`) and `state.json`;
 *   - `subagents/store.py`: `subagents/<agent id>/{context.jsonl, wire.jsonl, meta.json, prompt.txt, output}`;
 *   - `background/manager.py`: `tasks/<task id>/` holds background-process state (worker and child pids and process
 *     groups, kill requests, output logs). It is left out: on another machine those pids name unrelated processes,
 *     and Kimi's `recover()` would act on them;
 *   - `session_state.py`: `state.json` (see `sanitizeKimiState`);
 *   - `tools/plan/heroes.py` + `soul/kimisoul.py`: the session's plan is `<share>/plans/<state.plan_slug>.md`.
 *
 * Roles: `wire.jsonl` -> agent_wire_history; the sanitised `state.json` -> kimi_state (bytes made here); everything
 * else, the plan file included -> session_state. The session root is the share dir itself.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Context } from '../../../context.js';
import { firstUserTurn, HEAD_MAX_BYTES, parseTranscript, titleAndSummary } from '../../../harness-kit/title.js';
import { isRecord } from '@blue-agent/contract/util/record.js';
import type { CollectedSession, CollectInput, SessionFile } from '../../types.js';
import {
  artifactInvalid,
  assertSessionId,
  checkRoleCounts,
  entryName,
  fileOf,
  MAX_SESSION_FILES,
  readHead,
  sessionRootOf,
  SessionRoot,
} from '../../../harness-kit/session-files.js';
import { kimiUserTurn } from '@blue-agent/contract/harnesses/kimi/legacy/transcript.js';

const STATE_FILE = 'state.json';
/** state.json is a few kilobytes; anything far larger is not Kimi's. */
const MAX_STATE_BYTES = 4 * 1024 * 1024;
/** Plan slugs are hero names joined by `-`, with the session id's first 8 characters when they collide. */
const PLAN_SLUG = /^[a-z0-9]+(?:-[A-Za-z0-9]+)*$/;
const MAX_WORK_DIR_FOLDERS = 10_000;

/** posixpath.normpath of an absolute path: what `KaosPath.canonical()` gives for a local work dir. */
export function kimiCanonicalPath(cwd: string): string {
  // POSIX (and Python) keep exactly two leading slashes; three or more become one.
  const prefix = cwd.startsWith('//') && !cwd.startsWith('///') ? '//' : '/';
  const parts: string[] = [];
  for (const part of cwd.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') parts.pop();
    else parts.push(part);
  }
  return prefix + parts.join('/');
}

export function kimiWorkDirHash(cwd: string): string {
  // node:crypto on first use: a reconcile loads this module and never asks.
  return process.getBuiltinModule('node:crypto').createHash('md5').update(kimiCanonicalPath(cwd), 'utf8').digest('hex');
}

/** The keys of state.json kept for resume; every other key is dropped. */
const KEPT_STATE_KEYS = [
  'version',
  'custom_title',
  'title_generated',
  'title_generate_attempts',
  'plan_mode',
  'plan_session_id',
  'plan_slug',
  'todos',
] as const;

/**
 * state.json without what must not leave the machine. Kept: what resume needs to continue the conversation as it was
 * (custom title and title bookkeeping, plan mode with its plan session id and slug, the todo list). Dropped:
 * `approval` (yolo / afk switches and `auto_approve_actions`: grants the user gave on this machine),
 * `additional_dirs` (extra folders the user allowed the agent to reach here), `worktree_path` / `parent_repo_path`
 * (this machine's paths), `wire_mtime` / `archived*` / `auto_archive_exempt` (local bookkeeping) and any key a later
 * Kimi adds (it might hold credentials or tokens). Kimi fills every missing key with its default.
 */
export function sanitizeKimiState(state: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!isRecord(state)) return out;
  const is = {
    int: (v: unknown) => Number.isSafeInteger(v),
    bool: (v: unknown) => typeof v === 'boolean',
    strOrNull: (v: unknown) => v === null || typeof v === 'string',
  };
  const check: Record<(typeof KEPT_STATE_KEYS)[number], (v: unknown) => boolean> = {
    version: is.int,
    custom_title: is.strOrNull,
    title_generated: is.bool,
    title_generate_attempts: is.int,
    plan_mode: is.bool,
    plan_session_id: is.strOrNull,
    plan_slug: (v) => v === null || (typeof v === 'string' && PLAN_SLUG.test(v)),
    todos: Array.isArray,
  };
  for (const key of KEPT_STATE_KEYS) {
    if (Object.hasOwn(state, key) && check[key](state[key]))
      out[key] = key === 'todos' ? sanitizeTodos(state[key]) : state[key];
  }
  return out;
}

function sanitizeTodos(value: unknown): unknown[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((item) => {
    if (!isRecord(item) || typeof item.title !== 'string' || typeof item.status !== 'string') return [];
    return [
      {
        title: item.title,
        status: item.status,
        ...(typeof item.notes === 'string' ? { notes: item.notes } : {}),
        ...(Array.isArray(item.children) ? { children: sanitizeTodos(item.children) } : {}),
      },
    ];
  });
}

export async function collectKimiSession(
  ctx: Context,
  input: CollectInput,
  shareDir: string,
): Promise<CollectedSession> {
  const { payload, interval } = input;
  const id = payload.session_id;
  assertSessionId(id, shareDir);
  const root = await SessionRoot.open(sessionRootOf(shareDir, interval));
  if (payload.cwd === undefined || !path.isAbsolute(payload.cwd)) {
    throw artifactInvalid(
      root.abs('sessions'),
      'the hook payload has no absolute cwd, which names the session folder',
      'Kimi CLI sends cwd with every hook; check what calls `blue-agent capture`.',
    );
  }
  const sessionRel = await findSessionFolder(root, id, payload.cwd);

  const found = await root.walk(sessionRel, {
    limit: MAX_SESSION_FILES,
    skip: (inside) => inside === 'tasks' || inside === STATE_FILE,
  });
  const wire = found.find((f) => f.rel === `${sessionRel}/wire.jsonl`);
  const context = found.find((f) => f.rel === `${sessionRel}/context.jsonl`);
  if (wire === undefined)
    throw artifactInvalid(
      root.abs(`${sessionRel}/wire.jsonl`),
      'does not exist',
      'Kimi CLI writes the wire log as the session runs; a session without one cannot be captured.',
    );
  if (context === undefined)
    throw artifactInvalid(
      root.abs(`${sessionRel}/context.jsonl`),
      'does not exist',
      'Kimi CLI needs context.jsonl to resume a session; this one cannot be captured.',
    );

  // state.json: read, sanitised, carried as bytes at its native place.
  const stateRel = `${sessionRel}/${STATE_FILE}`;
  let rawState: unknown = {};
  if ((await root.lstat(stateRel)) !== undefined) {
    const checked = await root.file(stateRel);
    if (checked.size > MAX_STATE_BYTES)
      throw artifactInvalid(
        checked.abs,
        `is ${checked.size} bytes; Kimi CLI's state.json is a few kilobytes`,
        "This is not Kimi CLI's session state; leave this session uncaptured.",
      );
    try {
      rawState = JSON.parse((await readHead(checked, MAX_STATE_BYTES)).toString('utf8'));
    } catch {
      // Kimi loads a corrupt state.json as defaults; so does the sanitised copy.
      rawState = {};
    }
  }
  if (
    isRecord(rawState) &&
    rawState.plan_slug !== undefined &&
    rawState.plan_slug !== null &&
    !(typeof rawState.plan_slug === 'string' && PLAN_SLUG.test(rawState.plan_slug))
  ) {
    throw artifactInvalid(
      root.abs(stateRel),
      'plan_slug is not a plan file name',
      'Kimi CLI writes hero-name slugs here; this state.json was changed by something else.',
    );
  }
  const state = sanitizeKimiState(rawState);
  const stateBytes = new TextEncoder().encode(`${JSON.stringify(state, null, 2)}\n`);

  const files: SessionFile[] = [
    fileOf('agent_wire_history', 'wire.jsonl', wire),
    { role: 'kimi_state', name: STATE_FILE, nativePath: stateRel, content: stateBytes },
  ];
  for (const file of found) {
    if (file === wire) continue;
    files.push(fileOf('session_state', entryName(file.rel.slice(sessionRel.length + 1)), file));
  }
  if (typeof state.plan_slug === 'string') {
    const planRel = `plans/${state.plan_slug}.md`;
    if ((await root.lstat(planRel)) !== undefined)
      files.push(fileOf('session_state', `plan-${entryName(`${state.plan_slug}.md`)}`, await root.file(planRel)));
  }
  checkRoleCounts(interval, files, root.abs(sessionRel));

  const turn =
    firstUserTurn(parseTranscript((await readHead(wire, HEAD_MAX_BYTES)).toString('utf8')), kimiUserTurn) ??
    firstUserTurn(parseTranscript((await readHead(context, HEAD_MAX_BYTES)).toString('utf8')), kimiUserTurn);
  const native = typeof state.custom_title === 'string' ? { title: state.custom_title } : undefined;
  ctx.logger.debug('kimi session collected', { session: id, files: files.length, root: root.path });
  return {
    sessionId: id,
    cwd: payload.cwd,
    root: root.path,
    files,
    ...titleAndSummary({ native, firstUserTurn: turn }),
  };
}

/** `sessions/<md5(cwd)>/<id>`; else the one work-dir folder that holds this session id. */
async function findSessionFolder(root: SessionRoot, id: string, cwd: string): Promise<string> {
  const expected = `sessions/${kimiWorkDirHash(cwd)}/${id}`;
  if (await root.isDirectory(expected)) return expected;
  const found: string[] = [];
  let entries: string[] = [];
  try {
    entries = await readdir(root.abs('sessions'));
  } catch {
    entries = [];
  }
  for (const name of entries.slice(0, MAX_WORK_DIR_FOLDERS)) {
    const rel = `sessions/${name}/${id}`;
    if (/^[0-9a-f]{32}$/.test(name) && (await root.isDirectory(rel).catch(() => false))) found.push(rel);
  }
  if (found.length === 1) return found[0]!;
  if (found.length === 0) {
    throw artifactInvalid(
      root.abs(expected),
      `no Kimi CLI session folder for session ${id} (work dir ${kimiCanonicalPath(cwd)})`,
      'Check that KIMI_SHARE_DIR matches the one Kimi CLI used and that the session was saved.',
    );
  }
  throw artifactInvalid(
    root.abs(expected),
    `session ${id} has folders under ${found.length} work dirs: ${found.join(', ')}`,
    'Capture it from the work dir it belongs to.',
  );
}

/**
 * Preflight: what is already at each target of a plan, checked without writing anything. A target must lie inside
 * the plan's root; below the root no component may be a link (a link could carry a write anywhere on the machine);
 * an existing file with the same bytes is nothing to write, one with other bytes is a conflict that is never
 * overwritten, and one that is a hard link is refused (RESTORE_UNSAFE) before it is read. Another copy of the session
 * where the harness would also look (the plan's `duplicates`) is a conflict whatever its bytes.
 */
import { lstat, realpath } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import path from 'node:path';
import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { HARNESS_DISPLAY_NAMES } from '../harnesses/names.js';
import type { RestorePlacement, RestorePlan } from '../harnesses/types.js';
import { checkFile, sha256Checked } from '@blue-agent/contract/util/safe-read.js';

export type Collision = 'none' | 'identical' | 'different';

export interface RestoreConflict {
  path: string;
  why: string;
  hint?: string;
}

export interface Inspection {
  /** Placements to write. */
  create: RestorePlacement[];
  /** Placements whose target (or an alias of it) already holds the same bytes. */
  identical: RestorePlacement[];
  /** What is in the way, with the reason (and, where the plan knows better than the engine, what to do). */
  conflicts: RestoreConflict[];
  /** Folders to create, parents first (the root and its missing parents included). */
  dirs: string[];
  /** A restore through the harness's own import: whether the harness already holds the session. */
  imported: Collision | undefined;
  collision: Collision;
  /** The session root with every link resolved, as found now: placements must stay below it. */
  realRoot: string;
}

function unsafe(file: string, why: string): BlueError {
  return new BlueError('RESTORE_UNSAFE', `${file}: ${why}`, {
    file,
    hint:
      'blue-agent restores only into real folders of the harness; replace the link with a folder (or remove ' +
      'it), then restore again.',
  });
}

export function isInside(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel !== '' && !rel.startsWith(`..${path.sep}`) && rel !== '..' && !path.isAbsolute(rel);
}

async function lstatOrUndefined(file: string): Promise<Stats | undefined> {
  try {
    return await lstat(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw error;
  }
}

/**
 * Whether the file lstat saw as `info` holds these bytes. Read by the safe-read rule: a hard link (another name for a
 * file that may be anywhere on the machine) or a file swapped since the lstat is refused, not compared.
 */
async function sameContent(file: string, info: Stats, want: { size: number; sha256: string }): Promise<boolean> {
  const rule = {
    code: 'RESTORE_UNSAFE',
    maxBytes: Number.MAX_SAFE_INTEGER,
    expect: { dev: info.dev, ino: info.ino },
  } as const;
  // Whatever its size: a hard link at a target is refused, not reported as a mere difference.
  await checkFile(file, rule);
  if (info.size !== want.size) return false;
  return (await sha256Checked(file, { ...rule, maxBytes: want.size })) === want.sha256;
}

/**
 * The folders between `from` (exclusive, must exist) and `dir` (inclusive) that do not exist yet, parents first.
 * Anything on the way that is a link or not a folder is refused.
 */
async function missingDirs(from: string, dir: string, checked: Map<string, boolean>): Promise<string[] | 'blocked'> {
  const rel = path.relative(from, dir);
  if (rel === '') return [];
  const missing: string[] = [];
  let current = from;
  for (const segment of rel.split(path.sep)) {
    current = path.join(current, segment);
    const known = checked.get(current);
    if (known === false) {
      missing.push(current);
      continue;
    }
    if (known === true) continue;
    const info = missing.length > 0 ? undefined : await lstatOrUndefined(current);
    if (info === undefined) {
      checked.set(current, false);
      missing.push(current);
      continue;
    }
    if (info.isSymbolicLink()) throw unsafe(current, 'is a symbolic link inside the session root');
    if (!info.isDirectory()) return 'blocked';
    checked.set(current, true);
  }
  return missing;
}

/** The nearest existing ancestor of `dir` (itself when it exists). */
export async function existingAncestor(dir: string): Promise<string> {
  let current = path.resolve(dir);
  for (;;) {
    if ((await lstatOrUndefined(current)) !== undefined) return current;
    const parent = path.dirname(current);
    if (parent === current) return current;
    current = parent;
  }
}

export async function inspectPlan(ctx: Context, plan: RestorePlan): Promise<Inspection> {
  const root = path.resolve(plan.root);
  if (plan.root !== plan.home && !isInside(path.resolve(plan.home), root))
    throw unsafe(root, `the session root is outside the harness home ${plan.home}`);
  for (const p of plan.placements) {
    if (!isInside(root, p.to) || path.join(root, ...p.rel.split('/')) !== p.to)
      throw unsafe(p.to, `is not inside the session root ${root}`);
  }

  const create: RestorePlacement[] = [];
  const identical: RestorePlacement[] = [];
  const conflicts: RestoreConflict[] = [];
  const dirs: string[] = [];
  const checked = new Map<string, boolean>();

  // The root (and the home above it) may be reached through a link, as capture allows (a dotfiles checkout); what
  // lies below the root may not. A root that does not exist yet is created from its nearest existing ancestor.
  const rootInfo = await lstatOrUndefined(root);
  let base = root;
  let realRoot: string;
  if (rootInfo === undefined) {
    base = await existingAncestor(root);
    const info = await lstat(base);
    if (
      !info.isDirectory() &&
      !(
        info.isSymbolicLink() &&
        (await realpath(base)
          .then(async (r) => (await lstat(r)).isDirectory())
          .catch(() => false))
      )
    ) {
      throw unsafe(base, 'is not a folder, so the session root cannot be created below it');
    }
    const missing = await missingDirs(base, root, new Map());
    if (missing === 'blocked') throw unsafe(root, 'cannot be created');
    dirs.push(...missing);
    for (const d of missing) checked.set(d, false);
    realRoot = path.join(await realpath(base), path.relative(base, root));
  } else {
    const real = await realpath(root).catch(() => undefined);
    if (real === undefined || !(await lstat(real)).isDirectory())
      throw unsafe(root, 'the session root is not a folder');
    realRoot = real;
  }

  const aliasFor = new Map<RestorePlacement, string[]>();
  for (const alias of plan.aliases ?? [])
    aliasFor.set(alias.sameAs, [...(aliasFor.get(alias.sameAs) ?? []), alias.file]);

  for (const p of plan.placements) {
    const missing = await missingDirs(root, path.dirname(p.to), checked);
    if (missing === 'blocked') {
      conflicts.push({ path: p.to, why: 'a file sits where the harness keeps a folder' });
      continue;
    }
    for (const d of missing) if (!dirs.includes(d)) dirs.push(d);
    const info = missing.length > 0 ? undefined : await lstatOrUndefined(p.to);
    let state: 'absent' | 'identical' | 'different' = 'absent';
    let why = '';
    if (info !== undefined) {
      if (info.isSymbolicLink()) throw unsafe(p.to, 'is a symbolic link inside the session root');
      if (!info.isFile()) [state, why] = ['different', 'something other than a file is there'];
      else if (await sameContent(p.to, info, p)) state = 'identical';
      else
        [state, why] = ['different', 'a file with other content is there (a local copy of this session that differs)'];
    }
    for (const alias of aliasFor.get(p) ?? []) {
      if (state === 'different') break;
      const aliasInfo = await lstatOrUndefined(alias);
      if (aliasInfo === undefined) continue;
      if (aliasInfo.isFile() && (await sameContent(alias, aliasInfo, p))) state = 'identical';
      else {
        state = 'different';
        why = `this session is already on this machine as ${alias}, with other content`;
      }
    }
    if (state === 'absent') create.push(p);
    else if (state === 'identical') identical.push(p);
    else conflicts.push({ path: p.to, why });
  }

  // Another copy where the harness would also look is a conflict whatever its bytes: never a second copy.
  for (const d of (await plan.duplicates?.()) ?? []) conflicts.push({ path: d.file, why: d.why, hint: d.hint });

  const imported = plan.import === undefined ? undefined : await plan.import.existing(ctx);
  if (imported === 'different')
    conflicts.push({
      path: `${plan.harness} session ${plan.sessionId}`,
      why: `${HARNESS_DISPLAY_NAMES[plan.harness]} already holds a session with this id and other messages`,
    });
  const collision: Collision =
    conflicts.length > 0 ? 'different' : identical.length > 0 || imported === 'identical' ? 'identical' : 'none';
  return {
    create,
    identical,
    conflicts,
    dirs: create.length === 0 ? [] : dirs.filter((d) => create.some((p) => p.to.startsWith(d + path.sep))),
    imported,
    collision,
    realRoot,
  };
}

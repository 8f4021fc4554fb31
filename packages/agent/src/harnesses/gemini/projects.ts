/**
 * Where Gemini CLI keeps a working directory's sessions: `~/.gemini/tmp/<folder>/chats/`, the folder being
 *
 *   - before 0.29: the SHA-256 (hex) of the directory's path (`Storage.getProjectTempDir`);
 *   - from 0.29: a short name its ProjectRegistry (packages/core/src/config/projectRegistry.ts) gives the directory:
 *     the one `~/.gemini/projects.json` maps it to (when the folder's `.project_root` marker does not name another
 *     directory), else a folder whose marker names it, else the directory's base name lower-cased with every other
 *     character turned into `-` (`-1`, `-2`, ... when taken by another directory, `project` when empty).
 *
 * The registry's answer is computed here without writing anything; the path is the resolved one (Gemini CLI keys
 * projects by the real path of its working directory).
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { isRecord } from '@blue-agent/contract/util/record.js';
import { readChecked } from '@blue-agent/contract/util/safe-read.js';
import { sha256Hex } from '@blue-agent/contract/util/startup/sha256.js';

export const PROJECT_ROOT_FILE = '.project_root';
/** The folder name before 0.29. */
export const HASH_FOLDER = /^[0-9a-f]{64}$/;
/** A registry folder name (projects.json's own rule). */
export const SLUG_FOLDER = /^[a-z0-9-]+$/;
/** projects.json holds one line per directory ever used; far larger is not Gemini CLI's. */
const MAX_REGISTRY_BYTES = 16 * 1024 * 1024;
const MAX_MARKER_BYTES = 64 * 1024;
/** Folders looked through for markers (bounded). */
const MAX_FOLDERS = 20_000;

export function projectHash(dir: string): string {
  return sha256Hex(dir);
}

export function slugify(text: string): string {
  return (
    text
      .toLowerCase()
      .replace(/[^a-z0-9]/g, '-')
      .replace(/-+/g, '-')
      .replace(/^-|-$/g, '') || 'project'
  );
}

/** The base folders whose subfolders carry ownership markers. */
function baseDirs(geminiDir: string): string[] {
  return [path.join(geminiDir, 'tmp'), path.join(geminiDir, 'history')];
}

async function readSmall(file: string, maxBytes: number): Promise<string | undefined> {
  try {
    return (await readChecked(file, { code: 'RESTORE_UNSAFE', maxBytes, optional: true }))?.toString('utf8');
  } catch {
    // Unreadable, a link, a FIFO: Gemini CLI would not make sense of it either.
    return undefined;
  }
}

/** projects.json's mapping; a file that does not parse counts as empty, as Gemini CLI resets it. */
export async function readRegistry(geminiDir: string): Promise<Record<string, string>> {
  const text = await readSmall(path.join(geminiDir, 'projects.json'), MAX_REGISTRY_BYTES);
  if (text === undefined) return {};
  try {
    const doc: unknown = JSON.parse(text);
    if (!isRecord(doc) || !isRecord(doc.projects)) return {};
    const out: Record<string, string> = {};
    for (const [dir, slug] of Object.entries(doc.projects)) {
      if (typeof slug !== 'string' || !SLUG_FOLDER.test(slug)) return {};
      out[dir] = slug;
    }
    return out;
  } catch {
    return {};
  }
}

/** Who a folder's marker names: undefined when there is none; null when it cannot be read. */
async function markerOwner(file: string): Promise<string | null | undefined> {
  const text = await readSmall(file, MAX_MARKER_BYTES).catch(() => null);
  if (text === undefined) return undefined;
  if (text === null) return null;
  return path.resolve(text.trim());
}

export interface ProjectFolder {
  slug: string;
  /** Whether `tmp/<slug>/.project_root` already names the directory. */
  marked: boolean;
}

/** The folder Gemini CLI 0.29 and later would use for `dir` (an absolute, resolved path), as its registry decides. */
export async function projectSlug(geminiDir: string, dir: string): Promise<ProjectFolder> {
  const target = path.resolve(dir);
  const registry = await readRegistry(geminiDir);
  const owns = async (slug: string): Promise<boolean> => {
    for (const base of baseDirs(geminiDir)) {
      const owner = await markerOwner(path.join(base, slug, PROJECT_ROOT_FILE));
      if (owner !== undefined && owner !== target) return false;
    }
    return true;
  };
  const marked = async (slug: string) =>
    (await markerOwner(path.join(geminiDir, 'tmp', slug, PROJECT_ROOT_FILE))) === target;

  const mapped = registry[target];
  if (mapped !== undefined && (await owns(mapped))) return { slug: mapped, marked: await marked(mapped) };
  for (const base of baseDirs(geminiDir)) {
    const names = await readdir(base).catch(() => [] as string[]);
    for (const name of names.sort().slice(0, MAX_FOLDERS)) {
      if ((await markerOwner(path.join(base, name, PROJECT_ROOT_FILE))) === target)
        return { slug: name, marked: await marked(name) };
    }
  }
  const taken = new Set(Object.values(registry));
  const base = slugify(path.basename(target) || 'project');
  for (let counter = 0; counter < MAX_FOLDERS; counter++) {
    const candidate = counter === 0 ? base : `${base}-${counter}`;
    if (taken.has(candidate)) continue;
    let collision = false;
    for (const dirOf of baseDirs(geminiDir)) {
      const owner = await markerOwner(path.join(dirOf, candidate, PROJECT_ROOT_FILE));
      if (owner === null || (owner !== undefined && owner !== target)) collision = true;
    }
    if (!collision) return { slug: candidate, marked: false };
  }
  return { slug: `${base}-${MAX_FOLDERS}`, marked: false };
}

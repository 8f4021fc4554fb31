/**
 * Which capture profiles a capture may name: the profile must exist, belong to the harness and support capture. Kept
 * light for the hook's start-up: the validated profile documents come from the document cache file when it matches
 * the profile files' exact text; YAML and the schema validators load only when it does not.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import type { HarnessProfiles, Interval } from '@blue-agent/contract/schema/index.js';
import { safeName } from './log.js';

export function refused(message: string): BlueError {
  return new BlueError('CAPTURE_REFUSED', message);
}

/** The profile must exist, belong to the harness and support capture. */
export async function checkProfile(ctx: Context, harness: string, profile: string): Promise<Interval> {
  const docs = await profileDocuments(ctx);
  for (const doc of docs) {
    const interval = doc.intervals.find((i) => i.profile === profile);
    if (interval === undefined) continue;
    if (doc.harness !== harness) throw refused(`profile ${profile} belongs to ${doc.harness}, not to ${harness}`);
    if (!interval.operations.includes('session_capture'))
      throw refused(`profile ${profile} does not support session capture`);
    return interval;
  }
  throw refused(
    `unknown compatibility profile "${safeName(profile)}"; run \`blue-agent reconcile\` to reinstall the hook`,
  );
}

/**
 * The profile documents, validated. Fast path: the document cache's file already holds the validated data of these
 * exact profile texts (reconcile put it there when it installed the hook). The file is read here directly; anything
 * unexpected in it just means the slow path: load and validate through the regular loader (YAML and the schema
 * validators), and remember.
 */
async function profileDocuments(ctx: Context): Promise<HarnessProfiles[]> {
  const dir = ctx.paths.profilesDir;
  const cacheFile = ctx.paths.documentCacheFile;
  try {
    const [names, cacheText] = await Promise.all([readdir(dir), readFile(cacheFile, 'utf8')]);
    const cache = JSON.parse(cacheText) as {
      version?: unknown;
      entries?: Record<string, { text?: unknown; data?: unknown }>;
    };
    if (cache.version !== 1) throw new Error('miss');
    const entries = cache.entries;
    const docs: HarnessProfiles[] = [];
    for (const name of names.filter((n) => n.endsWith('.yaml') || n.endsWith('.yml')).sort()) {
      const file = path.join(dir, name);
      const entry = entries?.[`profile:${file}`];
      if (entry === undefined || typeof entry.text !== 'string' || entry.text !== (await readFile(file, 'utf8')))
        throw new Error('miss');
      const doc = entry.data as HarnessProfiles;
      if (typeof doc?.harness !== 'string' || !Array.isArray(doc.intervals)) throw new Error('miss');
      docs.push(doc);
    }
    if (docs.length > 0) return docs;
  } catch {
    // A cache miss, or an unreadable folder that the full loader reports properly.
  }
  const [{ DocumentCache }, { loadProfiles }] = await Promise.all([
    import('@blue-agent/contract/schema/document-cache.js'),
    import('@blue-agent/contract/profiles/index.js'),
  ]);
  const documents = await DocumentCache.open(cacheFile, true);
  const set = await loadProfiles(dir, documents);
  await documents.save().catch(() => undefined);
  return [...set.values()].map((loaded) => loaded.doc);
}

/**
 * What the fixture recordings share (`npm run record-fixtures`: each harness's `record-fixtures.record.ts` in its
 * test folder). A recording runs one headless session in a temporary HOME against a loopback model and copies its
 * native files with the temporary root replaced by `{{ROOT}}` (`{{ROOT_REL}}` without its leading `/`) and the
 * kernel release by `{{OS_RELEASE}}`, plus the placeholders its harness's files need (see its rig's
 * `fixture.placeholders`), so tests can lay them out under their own HOME.
 */
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { release } from 'node:os';
import path from 'node:path';
import { FIXTURES } from './recorded-sessions.js';

export const REPLY = 'Recorded reply from the stub model.';
export const TIMEOUT_MS = 90_000;

export interface Placeholders {
  root: string;
  /** Replaced before the root: `[text, placeholder name]` (a folder name derived from the root, say). */
  before?: readonly (readonly [string, string])[];
  /** Replaced after the root. */
  after?: readonly (readonly [string, string])[];
}

export function scrub(text: string, p: Placeholders): string {
  let out = text;
  for (const [from, name] of p.before ?? []) out = out.split(from).join(`{{${name}}}`);
  out = out.split(p.root).join('{{ROOT}}');
  // Some harnesses also record the directory relative to `/`.
  out = out.split(p.root.replace(/^\/+/, '')).join('{{ROOT_REL}}');
  for (const [from, name] of p.after ?? []) out = out.split(from).join(`{{${name}}}`);
  return out.split(release()).join('{{OS_RELEASE}}');
}

/** Copies a file or folder with `scrub` applied to contents and names; `transform` edits each file's text first. */
export async function copyScrubbed(
  from: string,
  to: string,
  p: Placeholders,
  transform: (text: string) => string = (t) => t,
): Promise<void> {
  if ((await stat(from)).isDirectory()) {
    await mkdir(to, { recursive: true });
    for (const name of await readdir(from))
      await copyScrubbed(path.join(from, name), path.join(to, scrub(name, p)), p, transform);
    return;
  }
  await mkdir(path.dirname(to), { recursive: true });
  await writeFile(to, scrub(transform(await readFile(from, 'utf8')), p));
}

/**
 * The harness's fixture folder for `version`, emptied of every earlier recording but those of `keep` (recordings of
 * an older CLI that no recording can replace).
 */
export async function freshDir(harness: string, version: string, keep: readonly string[] = []): Promise<string> {
  const folder = path.join(FIXTURES, harness);
  for (const name of await readdir(folder).catch(() => [] as string[])) {
    if (!keep.includes(name)) await rm(path.join(folder, name), { recursive: true, force: true });
  }
  const dir = path.join(FIXTURES, harness, version);
  await mkdir(dir, { recursive: true });
  return dir;
}

/**
 * A harness's JSON settings file (`settings.json` in its folder) as the test rigs write it: read (or empty when
 * missing), changed, and written back indented, everything the change leaves alone kept.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** Applies `edit` to `dir`/settings.json (creating the folder and the file when missing); returns the file. */
export async function editSettings(dir: string, edit: (settings: Record<string, any>) => void): Promise<string> {
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, 'settings.json');
  const settings = existsSync(file) ? (JSON.parse(await readFile(file, 'utf8')) as Record<string, any>) : {};
  edit(settings);
  await writeFile(file, `${JSON.stringify(settings, null, 2)}\n`);
  return file;
}

/** Appends `group` (a user's own hook group, in the harness's shape) to settings.json's `hooks.<event>`. */
export function addHookGroup(dir: string, event: string, group: Record<string, unknown>): Promise<string> {
  return editSettings(dir, (settings) => {
    const hooks = (settings.hooks ?? {}) as Record<string, unknown[]>;
    hooks[event] = [...(hooks[event] ?? []), group];
    settings.hooks = hooks;
  });
}

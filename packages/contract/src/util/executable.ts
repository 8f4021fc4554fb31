/** Finding an executable on PATH, the way a shell would (absolute directories only). */
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import path from 'node:path';

/** The first executable regular file named `name` on `PATH`, or undefined. */
export async function findExecutable(name: string, searchPath: string | undefined): Promise<string | undefined> {
  for (const dir of (searchPath ?? '').split(path.delimiter)) {
    if (dir === '' || !path.isAbsolute(dir)) continue;
    const candidate = path.join(dir, name);
    try {
      const info = await stat(candidate);
      if (!info.isFile()) continue;
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here; keep looking.
    }
  }
  return undefined;
}

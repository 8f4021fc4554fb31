/**
 * Where the dashboard's built stylesheet and scripts are: this package's dist/assets (scripts/build.mjs), found from
 * this module's own file, whether it runs from src/ (tests) or from a chunk of dist/.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE_NAME = '@blue-agent/control-api';

export function webAssetsDir(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (let dir = here; ; dir = path.dirname(dir)) {
    try {
      if (
        (JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: unknown }).name === PACKAGE_NAME
      )
        return path.join(dir, 'dist', 'assets');
    } catch {
      // Not here; keep walking up.
    }
    if (path.dirname(dir) === dir) return path.join(here, 'assets');
  }
}

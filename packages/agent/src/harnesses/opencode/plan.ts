/**
 * The managed hook as a whole plugin file the agent owns (./plugin.ts renders it): written, rewritten when stale,
 * removed; a file at its path that the agent did not write is the user's and never touched.
 */
import { BlueError } from '@blue-agent/contract/errors.js';
import { isManagedArgv } from '../../harness-kit/signature.js';
import type { HookPlan, HookPlanInput } from '../types.js';
import { embeddedArgv, hasPluginHeader, renderPlugin } from './plugin.js';

export function planOpencodeHook({ text, file, desired }: HookPlanInput): HookPlan {
  const ours = text !== null && isOurPlugin(text);
  if (desired === null) {
    // A file there that is not ours is the user's: nothing of the agent's to remove.
    if (!ours) return { text, owned: undefined, managedFound: 0 };
    return { text: null, owned: undefined, managedFound: 1 };
  }
  if (text !== null && !ours) {
    throw new BlueError(
      'NATIVE_CONFIG_CONFLICT',
      'an OpenCode plugin that blue-agent did not write already sits where its capture plugin goes',
      {
        file,
        hint:
          'Rename or move that file (it is yours; blue-agent never overwrites it), then run `blue-agent ' +
          'reconcile` again.',
      },
    );
  }
  const rendered = renderPlugin(desired);
  return { text: text === rendered ? text : rendered, owned: { whole_file: true }, managedFound: ours ? 1 : 0 };
}

/** Ours: the fixed header line and an embedded capture command for OpenCode. */
export function isOurPlugin(text: string): boolean {
  if (!hasPluginHeader(text)) return false;
  const argv = embeddedArgv(text);
  return argv !== undefined && isManagedArgv(argv, 'opencode');
}

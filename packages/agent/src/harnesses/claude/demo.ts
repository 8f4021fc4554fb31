/**
 * The demo's facet: the recorded session (demo/sessions/claude/<version>/) is a `projects/` tree laid out under
 * `~/.claude/projects`, and reconcile writes the managed SessionEnd hook into `~/.claude/settings.json`.
 */
import path from 'node:path';
import { parse as parseJsonc } from 'jsonc-parser';
import { isManagedCommand } from '../../harness-kit/signature.js';
import type { HarnessDemo } from '../types.js';
import { claudeProjectKey } from './session.js';

export const claudeDemo: HarnessDemo = {
  binary: 'claude',
  sessionsHome: path.join('.claude', 'projects'),
  placeholders({ root, cwd }) {
    return { PROJECT: claudeProjectKey(cwd), CLAUDE_TMP: path.join(root, 'tmp', 'claude') };
  },
  sessionDir(placeholders) {
    return placeholders.PROJECT ?? '';
  },
  hookFile: 'settings.json',
  managedHook(text) {
    const doc = parseJsonc(text) as
      | { hooks?: { SessionEnd?: { hooks?: { type?: string; command?: unknown; timeout?: unknown }[] }[] } }
      | undefined;
    for (const group of doc?.hooks?.SessionEnd ?? []) {
      for (const hook of group.hooks ?? []) {
        if (hook.type === 'command' && typeof hook.command === 'string' && isManagedCommand(hook.command, 'claude')) {
          return {
            command: hook.command,
            timeoutSeconds: typeof hook.timeout === 'number' && hook.timeout > 0 ? hook.timeout : 60,
          };
        }
      }
    }
    return undefined;
  },
};

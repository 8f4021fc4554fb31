import { HARNESSES } from '../../harnesses/names.js';
import type { CommandDeclaration } from '../declaration.js';
import type { ReconcileOptions } from '../reconcile.js';
import { harnessOption } from './harness-option.js';

export const reconcile: CommandDeclaration = {
  usage: 'reconcile',
  summary: "bring the managed session_upload hooks in every harness's native config in line with the policy",
  options: [
    { flags: '--dry-run', description: 'compute the same plan and show it, writing nothing at all (not even caches)' },
    { flags: '--json', description: 'print the report as JSON' },
    { flags: '--policy <file>', description: 'use this policy file (YAML or JSON) instead of the Control API' },
    harnessOption,
  ],
  help: `
For every harness: is it installed, which version and profile, and should it carry the managed capture hook?
Files that change are shown as unified diffs. Only entries that run \`blue-agent capture\` are ever added, updated
or removed; everything else in the file keeps its bytes.

Examples:
  blue-agent reconcile --dry-run --policy policy.yaml
  blue-agent reconcile --json ${HARNESSES.slice(0, 2)
    .map((h) => `--harness ${h}`)
    .join(' ')}`,
  run: async (ctx, opts: ReconcileOptions) => (await import('../reconcile.js')).reconcileCommand(ctx, opts),
};

/**
 * Which governance policy applies: a local file here; the Control API and its last-known-good fallback in remote.ts,
 * loaded only when there is no file, so a run with a local policy loads no HTTP client.
 */
import path from 'node:path';
import { resolveConfigPath } from '../config.js';
import { controlSettings } from '../control-api/settings.js';
import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { checkCompatibility } from './compat.js';
import { checkUploadOrigin, loadPolicyFile } from './file.js';
import type { ResolveOptions, ResolvedPolicy } from './resolved.js';

export async function resolvePolicy(ctx: Context, options: ResolveOptions): Promise<ResolvedPolicy> {
  const { config } = options;
  const settings = controlSettings(ctx, config);
  const originRules = { controlUrl: settings.controlUrl, allowedOrigins: config.allowed_upload_origins };

  const file =
    options.policyFile !== undefined
      ? path.resolve(ctx.cwd, options.policyFile)
      : config.policy_file !== undefined
        ? resolveConfigPath(ctx, config.policy_file)
        : undefined;
  if (file !== undefined) {
    // The config's policy_file is always someone's own; --policy may be the running agent's copy of a fetched revision.
    const origin = options.policyFile === undefined ? 'authored' : (options.policyOrigin ?? 'authored');
    const policy = await loadPolicyFile(file, options.documents, origin);
    const warnings = [
      ...checkCompatibility(policy, { clientVersion: ctx.self.version, where: file }),
      ...checkUploadOrigin(policy, { ...originRules, file }),
    ];
    return { policy, source: 'file', location: file, revision: policy.revision, stale: false, warnings };
  }

  const controlUrl = settings.controlUrl;
  if (controlUrl === undefined) {
    throw new BlueError('POLICY_MISSING', 'no governance policy source is configured', {
      hint:
        'Pass --policy FILE for a local policy, or connect to a Control API with `blue-agent login` ' +
        '(or set BLUE_AGENT_CONTROL_URL and BLUE_AGENT_TOKEN).',
    });
  }

  const { resolveFetchedPolicy } = await import('./remote.js');
  return resolveFetchedPolicy(ctx, options, { ...settings, controlUrl }, originRules);
}

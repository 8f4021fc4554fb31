/**
 * Reading a local policy file and checking where it sends uploads: what a run with an unchanged policy needs, without
 * the YAML parser and the schema validators (validate.ts), which load only for text not validated before.
 */
import { open } from 'node:fs/promises';
import { BlueError } from '@blue-agent/contract/errors.js';
import { DocumentCache } from '@blue-agent/contract/schema/document-cache.js';
import type { GovernancePolicy } from '@blue-agent/contract/schema/index.js';
import { MAX_POLICY_BYTES } from '@blue-agent/contract/schema/limits.js';
import type { PolicyOrigin } from '@blue-agent/contract/policy/validate.js';
import { originOf } from '@blue-agent/contract/util/url.js';

/**
 * Reads a local policy file (YAML or JSON); text validated in an earlier run comes from `documents`. A file is
 * someone's own policy (`authored`: unknown keys refused) unless it is this agent's copy of a fetched revision
 * (`fetched`).
 */
export async function loadPolicyFile(
  file: string,
  documents: DocumentCache = DocumentCache.none(),
  origin: PolicyOrigin = 'authored',
): Promise<GovernancePolicy> {
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      throw new BlueError('POLICY_MISSING', `the policy file ${file} does not exist`, {
        file,
        hint: 'Check the path given with --policy or policy_file in the agent config.',
      });
    }
    throw new BlueError('POLICY_INVALID', `cannot read the policy file ${file}: ${code ?? (error as Error).message}`, {
      file,
      hint: 'Check the file and its permissions.',
    });
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) {
      throw new BlueError('POLICY_INVALID', `the policy file ${file} is not a regular file`, { file });
    }
    if (info.size > MAX_POLICY_BYTES) {
      throw new BlueError('POLICY_INVALID', `the policy file ${file} is larger than ${MAX_POLICY_BYTES} bytes`, {
        file,
        hint: 'A policy is a small YAML or JSON document; check that the path names the right file.',
      });
    }
    // Keyed by origin too: text validated by the other rules (or by a release without them) is validated again.
    const key = `${origin === 'authored' ? 'authored-policy' : 'policy'}:${file}`;
    return await documents.loadAsync(key, await handle.readFile('utf8'), async (text) =>
      (await import('@blue-agent/contract/policy/validate.js')).parsePolicyText(text, file, origin),
    );
  } finally {
    await handle.close();
  }
}

export interface OriginRules {
  /** The Control API base URL, when one is known. */
  controlUrl?: string | undefined;
  /** Extra origins from the agent config's `allowed_upload_origins`. */
  allowedOrigins?: readonly string[] | undefined;
  /** Where the policy came from, for messages. */
  file: string;
}

/**
 * A policy must not be able to send transcripts elsewhere: presign_url must share the Control API's origin or be
 * listed in allowed_upload_origins. Returns warnings; throws POLICY_FOREIGN_ORIGIN.
 */
export function checkUploadOrigin(policy: GovernancePolicy, rules: OriginRules): string[] {
  const presign = policy.session_upload?.presign_url;
  if (presign === undefined) return [];
  const target = originOf(presign);
  const allowed = new Set<string>();
  if (rules.controlUrl !== undefined) allowed.add(originOf(rules.controlUrl));
  for (const origin of rules.allowedOrigins ?? []) allowed.add(originOf(origin));
  allowed.delete('');
  if (allowed.size === 0) {
    // A local file is the administrator's own statement; with nothing to compare against, trust it but say so.
    return [
      `${rules.file}: session_upload.presign_url ${target} is not checked against a Control API origin (no control ` +
        `URL configured)`,
    ];
  }
  if (target !== '' && allowed.has(target)) return [];
  throw new BlueError(
    'POLICY_FOREIGN_ORIGIN',
    `${rules.file}: /session_upload/presign_url points at ${target || presign}, which is neither the Control API's ` +
      `origin nor an allowed upload origin (${[...allowed].join(', ')}); a policy must not be able to send ` +
      `transcripts elsewhere`,
    {
      file: rules.file,
      path: '/session_upload/presign_url',
      hint:
        `If ${target || 'that origin'} is really your organisation's upload service, add it to ` +
        `allowed_upload_origins in the agent config.`,
    },
  );
}

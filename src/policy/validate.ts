/**
 * Policy validation: the JSON Schema, plus the rules a schema cannot state (semver ranges, where uploads may go).
 */
import { open } from 'node:fs/promises';
import semver from 'semver';
import type { Document, LineCounter } from 'yaml';
import { isMap, isNode, isScalar } from 'yaml';
import { BlueError } from '../errors.js';
import { DocumentCache } from '../schema/document-cache.js';
import { parseYamlText, policySchema, validateDocument, type GovernancePolicy } from '../schema/index.js';
import { isRecord } from '../util/record.js';
import { originOf, parseHttpUrl } from '../util/url.js';

/** Largest policy accepted from a file or the network: a policy is a few hundred bytes. */
export const MAX_POLICY_BYTES = 1024 * 1024;

export interface TextSource {
  doc: Document;
  lines: LineCounter;
}

/**
 * Validates parsed policy data. `file` names where it came from (a path or a URL); `source` gives line/column for
 * errors when the data was parsed from YAML/JSON text.
 */
export function validatePolicy(data: unknown, file: string, source?: TextSource): GovernancePolicy {
  rejectHarnessSessionUpload(data, file, source);
  const policy = validateDocument(policySchema, data, file, source);
  for (const [name, rule] of Object.entries(policy.harnesses ?? {})) {
    const range = rule?.version_requirement;
    if (range !== undefined && semver.validRange(range) === null) {
      const jsonPath = `/harnesses/${name}/version_requirement`;
      throw invalid(file, source, ['harnesses', name, 'version_requirement'], jsonPath, `is not a valid semver range: "${range}"`, {
        hint: `Use a range such as ">=2.0.12 <3" or "^0.145.0" for ${jsonPath}.`,
      });
    }
  }
  const presign = policy.session_upload?.presign_url;
  if (presign !== undefined) {
    const url = parseHttpUrl(presign);
    if (url === undefined || url.username !== '' || url.password !== '') {
      throw invalid(file, source, ['session_upload', 'presign_url'], '/session_upload/presign_url', 'must be an absolute http(s) URL without credentials', {
        hint: 'Set presign_url to the Control API presign route, e.g. https://control.example.com/session-uploads/presign.',
      });
    }
  }
  return policy;
}

/** Parses YAML or JSON policy text and validates it; errors carry line and column. */
export function parsePolicyText(text: string, file: string): GovernancePolicy {
  const parsed = parseYamlText(text, file, 'POLICY_INVALID');
  return validatePolicy(parsed.data, file, parsed);
}

/** Reads a local policy file (YAML or JSON); text validated in an earlier run comes from `documents`. */
export async function loadPolicyFile(file: string, documents: DocumentCache = DocumentCache.none()): Promise<GovernancePolicy> {
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
    return documents.load(`policy:${file}`, await handle.readFile('utf8'), (text) => parsePolicyText(text, file));
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
    return [`${rules.file}: session_upload.presign_url ${target} is not checked against a Control API origin (no control URL configured)`];
  }
  if (target !== '' && allowed.has(target)) return [];
  throw new BlueError(
    'POLICY_FOREIGN_ORIGIN',
    `${rules.file}: /session_upload/presign_url points at ${target || presign}, which is neither the Control API's origin nor an allowed upload origin (${[...allowed].join(', ')}); a policy must not be able to send transcripts elsewhere`,
    {
      file: rules.file,
      path: '/session_upload/presign_url',
      hint: `If ${target || 'that origin'} is really your organisation's upload service, add it to allowed_upload_origins in the agent config.`,
    },
  );
}

/** The schema rejects it as an unknown field; say plainly that the block is global. */
function rejectHarnessSessionUpload(data: unknown, file: string, source: TextSource | undefined): void {
  if (!isRecord(data) || !isRecord(data.harnesses)) return;
  for (const [name, rule] of Object.entries(data.harnesses)) {
    if (isRecord(rule) && Object.hasOwn(rule, 'session_upload')) {
      throw invalid(
        file,
        source,
        ['harnesses', name, 'session_upload'],
        `/harnesses/${name}/session_upload`,
        'is not allowed: session_upload is global, it belongs at the top level of the policy, never under a harness',
        { hint: `Move session_upload out of harnesses.${name} to the top level of the policy.` },
      );
    }
  }
}

function invalid(
  file: string,
  source: TextSource | undefined,
  segments: string[],
  jsonPath: string,
  problem: string,
  extra: { hint: string },
): BlueError {
  const where = source === undefined ? undefined : positionOf(source, segments);
  const location = where === undefined ? file : `${file}:${where.line}:${where.column}`;
  return new BlueError('POLICY_INVALID', `${location}: invalid policy: ${jsonPath} ${problem}`, {
    file,
    path: jsonPath,
    ...(where ?? {}),
    hint: extra.hint,
  });
}

/** Position of the key naming the deepest existing segment (a missing field is reported at its parent). */
function positionOf(source: TextSource, segments: string[]): { line: number; column: number } | undefined {
  for (let n = segments.length; n > 0; n--) {
    const parent = n === 1 ? source.doc.contents : source.doc.getIn(segments.slice(0, n - 1), true);
    if (!isMap(parent)) continue;
    const pair = parent.items.find((item) => isScalar(item.key) && String(item.key.value) === segments[n - 1]);
    if (pair !== undefined && isNode(pair.key) && pair.key.range) {
      const pos = source.lines.linePos(pair.key.range[0]);
      return { line: pos.line, column: pos.col };
    }
  }
  const root = source.doc.contents;
  if (isNode(root) && root.range) {
    const pos = source.lines.linePos(root.range[0]);
    return { line: pos.line, column: pos.col };
  }
  return undefined;
}


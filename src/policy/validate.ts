/**
 * Policy validation: the JSON Schema, plus the rules a schema cannot state (semver ranges, the upload URL's form);
 * where uploads may go is file.ts's, which reconcile needs without loading this module.
 */
import semver from 'semver';
import type { Document, LineCounter } from 'yaml';
import { isMap, isNode, isScalar } from 'yaml';
import { BlueError } from '../errors.js';
import { parseYamlText, policySchema, validateDocument, type GovernancePolicy } from '../schema/index.js';
import { isRecord } from '../util/record.js';
import { parseHttpUrl } from '../util/url.js';

export { MAX_POLICY_BYTES, checkUploadOrigin, loadPolicyFile, type OriginRules } from './file.js';

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


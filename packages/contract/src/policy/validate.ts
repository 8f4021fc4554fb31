/**
 * Policy validation: the JSON Schema, plus the rules a schema cannot state (semver ranges, the upload URL's form);
 * where uploads may go is file.ts's, which reconcile needs without loading this module.
 */
import semver from 'semver';
import type { Document, LineCounter } from 'yaml';
import { isMap, isNode, isScalar, isSeq } from 'yaml';
import { BlueError } from '../errors.js';
import { HARNESSES } from '../schema/generated/harness-names.js';
import {
  authoredPolicySchema,
  parseYamlText,
  policySchema,
  validateDocument,
  type GovernancePolicy,
} from '../schema/index.js';
import { isRecord } from '../util/record.js';
import { nearest } from '../util/suggest.js';
import { printable } from '../util/terminal-text.js';
import { parseHttpUrl } from '../util/url.js';

export interface TextSource {
  doc: Document;
  lines: LineCounter;
}

/**
 * Who wrote the policy, which decides how strictly it is read: `authored`, someone's own text (a local policy file, a
 * revision to publish), may hold only the keys the schema names, since a mistyped key could switch capture off
 * unnoticed; `fetched`, a revision from the Control API (or this agent's copy of one), may carry fields a newer server
 * adds.
 */
export type PolicyOrigin = 'authored' | 'fetched';

/**
 * Validates parsed policy data. `file` names where it came from (a path or a URL); `source` gives line/column for
 * errors when the data was parsed from YAML/JSON text.
 */
export function validatePolicy(
  data: unknown,
  file: string,
  source?: TextSource,
  origin: PolicyOrigin = 'fetched',
): GovernancePolicy {
  rejectHarnessSessionUpload(data, file, source);
  const policy = validateDocument(origin === 'authored' ? authoredPolicySchema : policySchema, data, file, source);
  if (origin === 'authored') rejectMistypedHarnesses(policy, file, source);
  for (const [name, rule] of Object.entries(policy.harnesses ?? {})) {
    const range = rule?.version_requirement;
    if (range !== undefined && semver.validRange(range) === null) {
      const jsonPath = `/harnesses/${name}/version_requirement`;
      throw invalid(
        file,
        source,
        ['harnesses', name, 'version_requirement'],
        jsonPath,
        `is not a valid semver range: "${range}"`,
        {
          hint: `Use a range such as ">=2.0.12 <3" or "^0.145.0" for ${jsonPath}.`,
        },
      );
    }
  }
  const presign = policy.session_upload?.presign_url;
  if (presign !== undefined) {
    const url = parseHttpUrl(presign);
    if (url === undefined || url.username !== '' || url.password !== '') {
      throw invalid(
        file,
        source,
        ['session_upload', 'presign_url'],
        '/session_upload/presign_url',
        'must be an absolute http(s) URL without credentials',
        {
          hint:
            'Set presign_url to the Control API presign route, e.g. ' +
            'https://control.example.com/session-uploads/presign.',
        },
      );
    }
  }
  return policy;
}

/** Parses YAML or JSON policy text and validates it; errors carry line and column. */
export function parsePolicyText(text: string, file: string, origin: PolicyOrigin): GovernancePolicy {
  const parsed = parseYamlText(text, file, 'POLICY_INVALID');
  return validatePolicy(parsed.data, file, parsed, origin);
}

/**
 * The fields of a fetched revision this blue-agent does not know (`harnesses.<name>.x`), sorted; a newer server may
 * add them, so they are told, not refused.
 */
export function unknownPolicyFields(data: unknown): string[] {
  if (authoredPolicySchema.validate(data)) return [];
  const fields = (authoredPolicySchema.validate.errors ?? [])
    .filter((e) => e.keyword === 'additionalProperties')
    .map((e) =>
      [...e.instancePath.split('/').slice(1), String(e.params.additionalProperty)]
        .map((s) => printable(s.replace(/~1/g, '/').replace(/~0/g, '~')).slice(0, 64))
        .join('.'),
    );
  return [...new Set(fields)].sort();
}

/**
 * A harness name this blue-agent does not know is ignored (Blue's registry may name harnesses it lacks), but in a
 * policy someone writes, one a letter or two from a known name is a typo that would leave that harness uncaptured.
 */
function rejectMistypedHarnesses(policy: GovernancePolicy, file: string, source: TextSource | undefined): void {
  const known: readonly string[] = HARNESSES;
  const named: [string[], string][] = [
    ...(policy.allowed_harnesses ?? []).map((name, i): [string[], string] => [['allowed_harnesses', String(i)], name]),
    ...Object.keys(policy.harnesses ?? {}).map((name): [string[], string] => [['harnesses', name], name]),
  ];
  for (const [segments, name] of named) {
    if (known.includes(name)) continue;
    const meant = nearest(name, known);
    if (meant === undefined) continue;
    const jsonPath = `/${segments.join('/')}`;
    throw invalid(
      file,
      source,
      segments,
      jsonPath,
      `names the harness ${JSON.stringify(printable(name).slice(0, 64))}, which blue-agent does not know (did you ` +
        `mean "${meant}"?)`,
      {
        hint: `Write "${meant}"; the harnesses blue-agent knows are ${known.join(', ')}.`,
      },
    );
  }
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

/** Position of the key (or list item) naming the deepest existing segment (a missing field is reported at its parent).
 * */
function positionOf(source: TextSource, segments: string[]): { line: number; column: number } | undefined {
  for (let n = segments.length; n > 0; n--) {
    const parent = n === 1 ? source.doc.contents : source.doc.getIn(segments.slice(0, n - 1), true);
    const item = isSeq(parent) && /^\d+$/.test(segments[n - 1]!) ? parent.items[Number(segments[n - 1])] : undefined;
    if (isNode(item) && item.range) {
      const pos = source.lines.linePos(item.range[0]);
      return { line: pos.line, column: pos.col };
    }
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

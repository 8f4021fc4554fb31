/**
 * Loading and validating documents against the JSON Schemas in schemas/. Validators are precompiled by `npm run gen`
 * (no schema compilation at start-up); every error names the file, the JSON path, what was expected and, for YAML and
 * JSON text, the line and column.
 */
import { LineCounter, parseDocument, isMap, isNode, isScalar, type Document, type Node } from 'yaml';
import { BlueError, type ErrorCode } from '../errors.js';
import * as validators from './generated/validators.js';
import { KNOWN_KEYS } from './generated/known-keys.js';
import { nearest } from '../util/suggest.js';
import type { AgentConfig } from './generated/agent-config.js';
import type { BundleManifest } from './generated/bundle-manifest.js';
import type { GovernancePolicy } from './generated/policy.js';
import type { HarnessProfiles } from './generated/profile.js';
import { describeSchemaError, type AjvError } from './describe.js';
import { yamlProblem } from './yaml-errors.js';

export type { AgentConfig } from './generated/agent-config.js';
export type { BundleManifest, BundleFile } from './generated/bundle-manifest.js';
export type { GovernancePolicy, HarnessRule } from './generated/policy.js';
export type { HarnessName } from './generated/harness-name.js';
export type { HarnessProfiles, Interval, Operation } from './generated/profile.js';
export { describeSchemaError, type AjvError } from './describe.js';

type Validate = ((data: unknown) => boolean) & { errors?: AjvError[] | null };

export interface SchemaKind<T> {
  name: string;
  validate: Validate;
  errorCode: ErrorCode;
  /** The keys of each closed object (generated KNOWN_KEYS), for the nearest known key when one is unknown. */
  knownKeys?: Readonly<Record<string, readonly string[]>>;
  readonly _type?: T;
}

/**
 * A policy as agents read it from the Control API: open (Blue's GovernanceConfig carries much blue-agent ignores, and
 * a newer server may add fields); the rules it cannot state, such as session_upload being global, are
 * policy/validate.ts's.
 */
export const policySchema: SchemaKind<GovernancePolicy> = {
  name: 'policy',
  validate: validators.validateGovernancePolicy as Validate,
  errorCode: 'POLICY_INVALID',
};

/**
 * A policy someone writes (a local policy file, a revision to publish): the closed variant `npm run gen` derives from
 * the same schema, so that a mistyped key (which could switch capture off) is refused with the nearest known one.
 */
export const authoredPolicySchema: SchemaKind<GovernancePolicy> = {
  name: 'policy',
  validate: validators.validateGovernancePolicyAuthored as Validate,
  errorCode: 'POLICY_INVALID',
  knownKeys: KNOWN_KEYS.GovernancePolicyAuthored,
};

export const profileSchema: SchemaKind<HarnessProfiles> = {
  name: 'compatibility profile',
  validate: validators.validateHarnessProfiles as Validate,
  errorCode: 'PROFILE_INVALID',
  knownKeys: KNOWN_KEYS.HarnessProfiles,
};

export const agentConfigSchema: SchemaKind<AgentConfig> = {
  name: 'agent config',
  validate: validators.validateAgentConfig as Validate,
  errorCode: 'CONFIG_INVALID',
  knownKeys: KNOWN_KEYS.AgentConfig,
};

export const bundleManifestSchema: SchemaKind<BundleManifest> = {
  name: 'bundle manifest',
  validate: validators.validateBundleManifest as Validate,
  errorCode: 'BUNDLE_INVALID',
};

/** Parses YAML (JSON is accepted too: it is YAML) and reports syntax errors with their position. */
export function parseYamlText(
  text: string,
  file: string,
  errorCode: ErrorCode,
): { data: unknown; doc: Document; lines: LineCounter } {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const problem = yamlProblem(text, doc, lines);
    throw new BlueError(errorCode, `${file}:${problem.line}:${problem.column}: ${problem.message}`, {
      file,
      line: problem.line,
      column: problem.column,
      hint: problem.hint,
    });
  }
  return { data: doc.toJS({ maxAliasCount: 100 }), doc, lines };
}

/** Validates `data` and returns it typed, or throws a BlueError naming file, path, expectation and position. */
export function validateDocument<T>(
  kind: SchemaKind<T>,
  data: unknown,
  file: string,
  source?: { doc: Document; lines: LineCounter },
): T {
  if (kind.validate(data)) return data as T;
  const errors = significant(kind.validate.errors ?? []);
  const error = pickError(errors, source);
  const jsonPath = error === undefined ? '' : error.instancePath;
  const unknown = error === undefined ? undefined : unknownKey(error);
  const suggestion = error === undefined ? undefined : suggest(kind, error, unknown, data);
  const expectation = error === undefined ? 'is invalid' : describeSchemaError(error, suggestion);
  const where = source === undefined || error === undefined ? undefined : errorPosition(source, error, unknown);
  const location = where === undefined ? file : `${file}:${where.line}:${where.column}`;
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more problem${errors.length > 2 ? 's' : ''})` : '';
  throw new BlueError(kind.errorCode, `${location}: invalid ${kind.name}: ${jsonPath || '/'} ${expectation}${more}`, {
    file,
    path: jsonPath || '/',
    ...(where ?? {}),
    hint: hintFor(kind, error, unknown, suggestion, jsonPath, file),
  });
}

/** The key an unknown-key error is about. */
function unknownKey(error: AjvError): string | undefined {
  if (error.keyword === 'additionalProperties') return String(error.params.additionalProperty);
  if (error.keyword === 'propertyNames') return String(error.params.propertyName);
  return undefined;
}

/** The keys the object an unknown-key error is about may hold (the generated table is keyed as ajv reports it). */
function knownKeysAt<T>(kind: SchemaKind<T>, error: AjvError): readonly string[] | undefined {
  const at =
    error.keyword === 'additionalProperties'
      ? error.schemaPath.replace(/\/additionalProperties$/, '')
      : error.schemaPath;
  return kind.knownKeys?.[at];
}

/** The nearest known key to an unknown one, or the nearest allowed value to a string that is not one. */
function suggest<T>(
  kind: SchemaKind<T>,
  error: AjvError,
  unknown: string | undefined,
  data: unknown,
): string | undefined {
  if (unknown !== undefined) {
    const known = knownKeysAt(kind, error);
    return known === undefined ? undefined : nearest(unknown, known);
  }
  if (error.keyword === 'enum') {
    const value = valueAt(data, error.instancePath);
    const allowed = (error.params.allowedValues as unknown[]).filter((v): v is string => typeof v === 'string');
    return typeof value === 'string' ? nearest(value, allowed) : undefined;
  }
  return undefined;
}

function hintFor<T>(
  kind: SchemaKind<T>,
  error: AjvError | undefined,
  unknown: string | undefined,
  suggestion: string | undefined,
  jsonPath: string,
  file: string,
): string {
  if (unknown !== undefined && error !== undefined) {
    const shown = JSON.stringify(unknown.slice(0, 64));
    if (suggestion !== undefined) return `Rename ${shown} to "${suggestion}" in ${file}.`;
    const known = knownKeysAt(kind, error);
    return known === undefined
      ? `Remove ${shown} from ${jsonPath || 'the document'} in ${file}.`
      : `Remove ${shown} from ${jsonPath || 'the top level'} in ${file}; the keys there are ${known.join(', ')}.`;
  }
  if (suggestion !== undefined) return `Did you mean "${suggestion}"? Fix ${jsonPath} in ${file}.`;
  return `Fix ${jsonPath || 'the document'} in ${file} to match schemas/ and try again.`;
}

/** The data at a JSON pointer, or undefined. */
function valueAt(data: unknown, jsonPath: string): unknown {
  let node = data;
  for (const segment of pointerSegments(jsonPath)) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[String(segment)];
  }
  return node;
}

/**
 * The problems worth telling: a key a `propertyNames` error names is reported by ajv twice (that error, and its inner
 * one); a field missing beside an unknown key is most likely that key mistyped (`presign_ur`), which says more.
 */
function significant(errors: AjvError[]): AjvError[] {
  const named = errors.filter((e) => (e as { propertyName?: unknown }).propertyName === undefined);
  const withUnknown = new Set(named.filter((e) => unknownKey(e) !== undefined).map((e) => e.instancePath));
  const told = named.filter((e) => !(e.keyword === 'required' && withUnknown.has(e.instancePath)));
  return told.length > 0 ? told : errors;
}

/**
 * The most specific error (not an umbrella `oneOf`/`anyOf`/`if`), and of those the one earliest in the text when it is
 * known: the first problem a person reads.
 */
function pickError(
  errors: AjvError[],
  source: { doc: Document; lines: LineCounter } | undefined,
): AjvError | undefined {
  const specific = errors.filter((e) => e.keyword !== 'oneOf' && e.keyword !== 'anyOf' && e.keyword !== 'if');
  if (specific.length === 0) return errors[0];
  if (source === undefined) return specific[0];
  // Bounded: a hostile document may have any number of problems; the first ones are enough to choose from.
  const ranked = specific.slice(0, 100).map((e, i) => ({ e, i, at: errorOffset(source, e) }));
  ranked.sort((a, b) => a.at - b.at || a.i - b.i);
  return ranked[0]!.e;
}

function errorOffset(source: { doc: Document }, error: AjvError): number {
  const unknown = unknownKey(error);
  const node =
    unknown === undefined
      ? nodeAt(source.doc, pointerSegments(error.instancePath))
      : keyNode(source.doc, pointerSegments(error.instancePath), unknown);
  return node?.range?.[0] ?? Number.MAX_SAFE_INTEGER;
}

/** Where to point: an unknown key at itself, anything else at its value (a missing field at the nearest parent). */
function errorPosition(
  source: { doc: Document; lines: LineCounter },
  error: AjvError,
  unknown: string | undefined,
): { line: number; column: number } | undefined {
  const segments = pointerSegments(error.instancePath);
  const node =
    (unknown === undefined ? undefined : keyNode(source.doc, segments, unknown)) ?? nodeAt(source.doc, segments);
  if (node?.range === undefined || node.range === null) return undefined;
  const pos = source.lines.linePos(node.range[0]);
  return { line: pos.line, column: pos.col };
}

function pointerSegments(jsonPath: string): (string | number)[] {
  return jsonPath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

/** The key node of `key` in the mapping at `segments`. */
function keyNode(doc: Document, segments: (string | number)[], key: string): Node | undefined {
  const map = segments.length === 0 ? doc.contents : doc.getIn(segments, true);
  if (!isMap(map)) return undefined;
  const pair = map.items.find((item) => isScalar(item.key) && String(item.key.value) === key);
  return pair !== undefined && isNode(pair.key) ? pair.key : undefined;
}

/** The deepest existing node along `segments`: a missing field is reported at its parent. */
function nodeAt(doc: Document, segments: (string | number)[]): Node | undefined {
  for (let n = segments.length; n >= 0; n--) {
    const node = n === 0 ? doc.contents : doc.getIn(segments.slice(0, n), true);
    if (isNode(node) && node.range) return node;
  }
  return undefined;
}

/** Reads YAML or JSON text and validates it in one step. */
export function loadDocument<T>(kind: SchemaKind<T>, text: string, file: string): T {
  const parsed = parseYamlText(text, file, kind.errorCode);
  return validateDocument(kind, parsed.data, file, parsed);
}

/**
 * Loading and validating documents against the JSON Schemas in schemas/. Validators are precompiled by `npm run gen`
 * (no schema compilation at start-up); every error names the file, the JSON path, what was expected and, for YAML and
 * JSON text, the line and column.
 */
import { LineCounter, parseDocument, isNode, type Document } from 'yaml';
import { BlueError, type ErrorCode } from '../errors.js';
import * as validators from './generated/validators.js';
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
  /** Extra advice for specific mistakes, keyed by a predicate on the error. */
  advise?: (error: AjvError) => string | undefined;
  readonly _type?: T;
}

/**
 * The policy schema is open (Blue's GovernanceConfig carries much blue-agent ignores); the rules it cannot state, such
 * as session_upload being global, are policy/validate.ts's.
 */
export const policySchema: SchemaKind<GovernancePolicy> = {
  name: 'policy',
  validate: validators.validateGovernancePolicy as Validate,
  errorCode: 'POLICY_INVALID',
};

export const profileSchema: SchemaKind<HarnessProfiles> = {
  name: 'compatibility profile',
  validate: validators.validateHarnessProfiles as Validate,
  errorCode: 'PROFILE_INVALID',
};

export const agentConfigSchema: SchemaKind<AgentConfig> = {
  name: 'agent config',
  validate: validators.validateAgentConfig as Validate,
  errorCode: 'CONFIG_INVALID',
};

export const bundleManifestSchema: SchemaKind<BundleManifest> = {
  name: 'bundle manifest',
  validate: validators.validateBundleManifest as Validate,
  errorCode: 'BUNDLE_INVALID',
};

/** Parses YAML (JSON is accepted too: it is YAML) and reports syntax errors with their position. */
export function parseYamlText(text: string, file: string, errorCode: ErrorCode): { data: unknown; doc: Document; lines: LineCounter } {
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
  const errors = kind.validate.errors ?? [];
  const error = pickError(errors);
  const jsonPath = error === undefined ? '' : error.instancePath;
  const expectation = error === undefined ? 'is invalid' : describeSchemaError(error);
  // An unknown field is pointed at itself, not at the object holding it.
  const pointAt =
    error?.keyword === 'additionalProperties' ? `${jsonPath}/${String(error.params.additionalProperty).replace(/~/g, '~0').replace(/\//g, '~1')}` : jsonPath;
  const where = source === undefined ? undefined : positionOf(source, pointAt);
  const location = where === undefined ? file : `${file}:${where.line}:${where.column}`;
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more problem${errors.length > 2 ? 's' : ''})` : '';
  const advice = error === undefined ? undefined : kind.advise?.(error);
  throw new BlueError(kind.errorCode, `${location}: invalid ${kind.name}: ${jsonPath || '/'} ${expectation}${more}`, {
    file,
    path: jsonPath || '/',
    ...(where ?? {}),
    hint: advice ?? `Fix ${jsonPath || 'the document'} in ${file} to match schemas/ and try again.`,
  });
}

/** Prefers the most specific error: not the umbrella `oneOf`/`anyOf` ones. */
function pickError(errors: AjvError[]): AjvError | undefined {
  return errors.find((e) => e.keyword !== 'oneOf' && e.keyword !== 'anyOf' && e.keyword !== 'if') ?? errors[0];
}


function positionOf(source: { doc: Document; lines: LineCounter }, jsonPath: string): { line: number; column: number } | undefined {
  const segments = jsonPath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
  // Walk up until a node exists: a missing field is reported at its parent.
  for (let n = segments.length; n >= 0; n--) {
    const node = n === 0 ? source.doc.contents : source.doc.getIn(segments.slice(0, n), true);
    if (isNode(node) && node.range) {
      const pos = source.lines.linePos(node.range[0]);
      return { line: pos.line, column: pos.col };
    }
  }
  return undefined;
}

/** Reads YAML or JSON text and validates it in one step. */
export function loadDocument<T>(kind: SchemaKind<T>, text: string, file: string): T {
  const parsed = parseYamlText(text, file, kind.errorCode);
  return validateDocument(kind, parsed.data, file, parsed);
}

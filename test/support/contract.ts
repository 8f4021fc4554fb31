/**
 * The Control API's answers held to two contracts:
 *   - its own schemas (schemas/control-*.schema.json), which blue-agent's client validates answers with;
 *   - Blue's published service contract (fixtures/contract/blue-0.2.0: the operation's documented statuses, and the
 *     body schema the contract gives for that status, with its formats checked), so a Blue client could talk to it.
 * Used by the helpers that call the reference server in tests (test/support/control-server.ts), so every answer the
 * API tests see is checked, and by the contract suite (test/control-plane/contract.test.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import formatsModule from 'ajv-formats';
import * as validators from '../../packages/contract/src/schema/generated/validators.js';
import { repoRoot } from './context.js';

type Validate = ((data: unknown) => boolean) & { errors?: { instancePath: string; message?: string }[] | null };

const ID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const OURS: { method: string; route: RegExp; schema: string; validate: Validate }[] = [
  {
    method: 'GET',
    route: /^\/\.well-known\/metaharness$/,
    schema: 'control-discovery',
    validate: validators.validateMetaharnessDiscovery as Validate,
  },
  {
    method: 'GET',
    route: /^\/auth\/me$/,
    schema: 'control-identity',
    validate: validators.validateIdentity as Validate,
  },
  {
    method: 'GET',
    route: /^\/harness-metadata$/,
    schema: 'harness-metadata',
    validate: validators.validateHarnessMetadataDocument as Validate,
  },
  {
    method: 'POST',
    route: /^\/session-uploads\/presign$/,
    schema: 'control-presigned-upload',
    validate: validators.validatePresignedUpload as Validate,
  },
  {
    method: 'GET',
    route: /^\/session-uploads$/,
    schema: 'control-captured-sessions',
    validate: validators.validateCapturedSessionList as Validate,
  },
  {
    method: 'GET',
    route: /^\/session-uploads\/facets$/,
    schema: 'control-facets',
    validate: validators.validateSessionFacets as Validate,
  },
  {
    method: 'GET',
    route: /^\/session-uploads\/members$/,
    schema: 'control-members',
    validate: validators.validateShareMembers as Validate,
  },
  {
    method: 'GET',
    route: new RegExp(`^/session-uploads/${ID}$`),
    schema: 'control-session-detail',
    validate: validators.validateSessionDetail as Validate,
  },
  {
    method: 'POST',
    route: new RegExp(`^/session-uploads/${ID}/complete$`),
    schema: 'control-completed-upload',
    validate: validators.validateCompletedUpload as Validate,
  },
  {
    method: 'POST',
    route: new RegExp(`^/session-uploads/${ID}/download$`),
    schema: 'control-download',
    validate: validators.validateSessionDownload as Validate,
  },
  {
    method: 'GET',
    route: new RegExp(`^/session-uploads/${ID}/sharing$`),
    schema: 'control-sharing-state',
    validate: validators.validateSessionSharing as Validate,
  },
  {
    method: 'PUT',
    route: new RegExp(`^/session-uploads/${ID}/sharing$`),
    schema: 'control-sharing-updated',
    validate: validators.validateSharingUpdated as Validate,
  },
  {
    method: 'GET',
    route: /^\/audit-events$/,
    schema: 'control-audit-events',
    validate: validators.validateAuditEventPage as Validate,
  },
  { method: 'GET', route: /^\/users$/, schema: 'control-users', validate: validators.validateUserList as Validate },
  {
    method: 'GET',
    route: /^\/client-status$/,
    schema: 'control-client-statuses',
    validate: validators.validateClientStatusList as Validate,
  },
  {
    method: 'GET',
    route: new RegExp(`^/users/${ID}/tokens$`),
    schema: 'control-tokens',
    validate: validators.validateTokenList as Validate,
  },
  {
    method: 'POST',
    route: /^\/api\/auth\/device\/code$/,
    schema: 'control-device-authorization',
    validate: validators.validateDeviceAuthorization as Validate,
  },
  {
    method: 'POST',
    route: /^\/api\/auth\/oauth2\/token$/,
    schema: 'control-token-answer',
    validate: validators.validateTokenAnswer as Validate,
  },
];

// ---------------------------------------------------------------------------------------------------------------
// Blue's contract

export const BLUE_CONTRACT_DIR = path.join(repoRoot, 'fixtures', 'contract', 'blue-0.2.0');

export interface BlueOperation {
  operationId: string;
  method: string;
  path: string;
  public?: boolean;
  route: RegExp;
  responses: Record<string, { content?: string; schema?: string; inline?: unknown; headers?: string[] }>;
  request?: string | { inline: unknown };
}

let blue: { operations: BlueOperation[]; ajv: Ajv2020 } | undefined;

/** The contract's operations (with a route pattern each) and an Ajv holding its component schemas. */
export function blueContract(): { operations: BlueOperation[]; ajv: Ajv2020 } {
  if (blue !== undefined) return blue;
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  // ajv-formats is CommonJS: its function is the default export's default.
  const addFormats =
    (formatsModule as unknown as { default: (ajv: Ajv2020) => void }).default ??
    (formatsModule as unknown as (ajv: Ajv2020) => void);
  addFormats(ajv);
  for (const name of readdirSync(BLUE_CONTRACT_DIR).filter((n) => n.endsWith('.json') && n !== 'operations.json')) {
    ajv.addSchema(JSON.parse(readFileSync(path.join(BLUE_CONTRACT_DIR, name), 'utf8')) as object);
  }
  const doc = JSON.parse(readFileSync(path.join(BLUE_CONTRACT_DIR, 'operations.json'), 'utf8')) as {
    operations: Omit<BlueOperation, 'route'>[];
  };
  const operations = doc.operations.map((o) => ({
    ...o,
    route: new RegExp(`^${o.path.replace('{id}', ID).replaceAll('.', '\\.')}$`),
  }));
  blue = { operations, ajv };
  return blue;
}

/** The contract's operation for a request, when it has one. */
export function blueOperation(method: string, pathname: string): BlueOperation | undefined {
  return blueContract().operations.find((o) => o.method === method.toUpperCase() && o.route.test(pathname));
}

const compiled = new Map<string, ValidateFunction>();

/** The contract's validator for a body: a component schema by file name, or an inline schema. */
export function blueValidator(
  schema: string | { inline: unknown } | undefined,
  inline?: unknown,
): ValidateFunction | undefined {
  const { ajv } = blueContract();
  if (typeof schema === 'string') return ajv.getSchema(schema) ?? undefined;
  const body = inline ?? (schema as { inline: unknown } | undefined)?.inline;
  if (body === undefined) return undefined;
  const key = JSON.stringify(body);
  let validate = compiled.get(key);
  if (validate === undefined) {
    validate = ajv.compile(body as object);
    compiled.set(key, validate);
  }
  return validate;
}

/**
 * Problems with an answer by Blue's contract: a status the operation does not document (401, 404 and 405 aside:
 * the contract leaves them out of most operations, and a route that does not exist has none), or a body that does
 * not match the schema the contract gives for that status.
 */
export function blueContractProblems(
  method: string,
  route: string,
  status: number,
  body: unknown,
  contentType: string | null,
): string[] {
  const pathname = new URL(route, 'http://127.0.0.1').pathname;
  const operation = blueOperation(method, pathname);
  if (operation === undefined) return [];
  const documented = operation.responses[String(status)];
  if (documented === undefined) {
    // Errors the contract leaves undocumented on most operations, and 304 (only ever the answer to a conditional
    // request, which Blue's clients do not send); every other status must be in the contract.
    return [304, 400, 401, 403, 404, 405, 408, 413, 415, 500].includes(status)
      ? []
      : [`${operation.operationId} answered ${status}, which the contract does not document`];
  }
  const problems: string[] = [];
  if (documented.content !== undefined && !(contentType ?? '').startsWith(documented.content)) {
    problems.push(
      `${operation.operationId} ${status}: content type ${contentType ?? '(none)'}, the contract says ` +
        `${documented.content}`,
    );
  }
  const validate = blueValidator(documented.schema, documented.inline);
  if (validate !== undefined && !validate(body)) {
    const error = validate.errors?.[0];
    problems.push(
      `${operation.operationId} ${status}: ${error?.instancePath || '/'} ${error?.message ?? 'is invalid'} (by the ` +
        `contract's schema)`,
    );
  }
  return problems;
}

/** The schema a successful answer of `method route` must match, or undefined when the route has none yet. */
export function answerContract(method: string, route: string): { schema: string; validate: Validate } | undefined {
  const pathname = new URL(route, 'http://127.0.0.1').pathname;
  return OURS.find((c) => c.method === method.toUpperCase() && c.route.test(pathname));
}

/** The statuses each of the contract's operations has answered in this test file, once checked (see
 * checkAnswerContract). */
export const contractCoverage = new Map<string, Set<number>>();

/**
 * Throws, naming the route and the first problem, when an answer breaks Blue's contract or (for a 2xx) its own
 * schema.
 */
export function checkAnswerContract(
  method: string,
  route: string,
  status: number,
  body: unknown,
  contentType: string | null = 'application/json',
): void {
  const blueProblems = blueContractProblems(method, route, status, body, contentType);
  if (blueProblems.length > 0)
    throw new Error(`${method} ${route}: ${blueProblems.join('; ')}\n${String(JSON.stringify(body)).slice(0, 2000)}`);
  const operation = blueOperation(method, new URL(route, 'http://127.0.0.1').pathname);
  if (operation !== undefined) {
    const statuses = contractCoverage.get(operation.operationId) ?? new Set<number>();
    statuses.add(status);
    contractCoverage.set(operation.operationId, statuses);
  }
  if (status < 200 || status >= 300) return;
  const contract = answerContract(method, route);
  if (contract === undefined || contract.validate(body)) return;
  const problem = contract.validate.errors?.[0];
  throw new Error(
    `${method} ${route} answered a body that does not match schemas/${contract.schema}.schema.json: ` +
      `${problem?.instancePath || '/'} ${problem?.message ?? 'is invalid'}\n` +
      `${String(JSON.stringify(body)).slice(0, 2000)}`,
  );
}

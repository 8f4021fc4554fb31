/**
 * The Control API's answers held to their schemas: what a route sends on success must validate against the schema
 * its clients validate it with. Used by the helpers that call the reference server in tests.
 */
import * as validators from '../../src/schema/generated/validators.js';

type Validate = ((data: unknown) => boolean) & { errors?: { instancePath: string; message?: string }[] | null };

const ID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const CONTRACTS: { method: string; route: RegExp; schema: string; validate: Validate }[] = [
  { method: 'GET', route: /^\/session-uploads$/, schema: 'control-session-uploads', validate: validators.validateSessionUploadList as Validate },
  { method: 'GET', route: new RegExp(`^/session-uploads/${ID}$`), schema: 'control-session-upload', validate: validators.validateSessionUploadDetail as Validate },
  { method: 'POST', route: new RegExp(`^/session-uploads/${ID}/complete$`), schema: 'control-session-upload', validate: validators.validateSessionUploadDetail as Validate },
];

/** The schema a successful answer of `method route` must match, or undefined when the route has none yet. */
export function answerContract(method: string, route: string): { schema: string; validate: Validate } | undefined {
  const pathname = new URL(route, 'http://127.0.0.1').pathname;
  return CONTRACTS.find((c) => c.method === method.toUpperCase() && c.route.test(pathname));
}

/** Throws, naming the route and the first problem, when a 2xx answer does not match its route's schema. */
export function checkAnswerContract(method: string, route: string, status: number, body: unknown): void {
  if (status < 200 || status >= 300) return;
  const contract = answerContract(method, route);
  if (contract === undefined || contract.validate(body)) return;
  const problem = contract.validate.errors?.[0];
  throw new Error(
    `${method} ${route} answered a body that does not match schemas/${contract.schema}.schema.json: ${problem?.instancePath || '/'} ${problem?.message ?? 'is invalid'}\n${JSON.stringify(body).slice(0, 2000)}`,
  );
}

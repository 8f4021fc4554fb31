/** A request's query string: only the names a route takes, each at most once, and its values within bounds. */
import type { Request } from '../route-context.js';
import { badRequest } from '../http.js';

export const MAX_QUERY_LENGTH = 200;

export const DEFAULT_CURSOR_PAGE = 50;

export const DEFAULT_NUMBERED_PAGE = 25;

export const MAX_PAGE = 100;

/** The query string: only `allowed` names, each at most once. */
export function queryParams(
  req: Request,
  allowed: readonly string[],
): { one(name: string): string | undefined; has(name: string): boolean } {
  const params = req.url.searchParams;
  for (const key of params.keys()) {
    if (!allowed.includes(key))
      throw badRequest(`unknown query parameter "${key.slice(0, 100)}"; use ${allowed.join(', ')}`);
  }
  return {
    has: (name) => params.has(name),
    one: (name) => {
      const values = params.getAll(name);
      if (values.length > 1) throw badRequest(`query parameter "${name}" is given more than once`);
      return values[0];
    },
  };
}

export function boundedText(value: string | undefined, name: string): string | undefined {
  if (value === undefined) return undefined;
  if (value.length > MAX_QUERY_LENGTH)
    throw badRequest(`${name} is ${value.length} characters long; at most ${MAX_QUERY_LENGTH} are allowed`);
  return value;
}

export function intParam(name: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,15}$/.test(value) || Number(value) < min || Number(value) > max) {
    throw badRequest(`${name} must be an integer from ${min}${max === Number.MAX_SAFE_INTEGER ? ' up' : ` to ${max}`}`);
  }
  return Number(value);
}

/** A `YYYY-MM-DD` day, as the start of that UTC day. */
export function dayParam(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  const ms = match === null ? Number.NaN : Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]));
  if (!Number.isFinite(ms) || new Date(ms).toISOString().slice(0, 10) !== value)
    throw badRequest(`${name} must be a day, YYYY-MM-DD (UTC)`);
  return ms;
}

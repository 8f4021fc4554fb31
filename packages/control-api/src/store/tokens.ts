/**
 * Bearer tokens and the other secrets of signing in: random, prefixed so people recognise them, and stored only as
 * their SHA-256. Both backends read sign-ins and device codes through these row mappings.
 */
import { createHash, randomBytes, randomInt } from 'node:crypto';
import type { DeviceCode, Grant } from './types.js';

export const TOKEN_PREFIX = 'blue_';

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export function newToken(): string {
  return `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** A random secret that is not a bearer token (a device code, a CSRF token, a sign-in link's). */
export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** The letters of user codes: no vowels (no words), none that look alike (RFC 8628 §6.1). */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
export const USER_CODE_LENGTH = 8;

/** A new user code, normalised (`WDJBMJHT`); people see it as `WDJB-MJHT`. */
export function newUserCode(): string {
  let code = '';
  for (let i = 0; i < USER_CODE_LENGTH; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return code;
}

/** What a person typed, as stored: upper case, letters of the alphabet only; undefined when it cannot be a code. */
export function normaliseUserCode(typed: string): string | undefined {
  const code = typed.toUpperCase().replace(/[\s-]/g, '');
  return code.length === USER_CODE_LENGTH && [...code].every((c) => USER_CODE_ALPHABET.includes(c)) ? code : undefined;
}

export function formatUserCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

type Row = Record<string, unknown>;
const num = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

export function toGrant(row: Row): Grant {
  return {
    id: String(row.id),
    user_id: String(row.user_id),
    user_email: String(row.user_email),
    kind: String(row.kind) as Grant['kind'],
    scopes: String(row.scopes)
      .split(' ')
      .filter((s) => s !== ''),
    label: String(row.label),
    created_at: Number(row.created_at),
    last_used_at: num(row.last_used_at),
    expires_at: num(row.expires_at),
    revoked_at: num(row.revoked_at),
  };
}

export function toDeviceCode(row: Row): DeviceCode {
  return {
    user_code: String(row.user_code),
    client_id: String(row.client_id),
    scopes: String(row.scopes)
      .split(' ')
      .filter((s) => s !== ''),
    client_label: String(row.client_label),
    created_at: Number(row.created_at),
    expires_at: Number(row.expires_at),
    interval_ms: Number(row.interval_ms),
    status: String(row.status) as DeviceCode['status'],
    user_id: row.user_id === null || row.user_id === undefined ? null : String(row.user_id),
  };
}

/** `last_used_at` is written at most this often per sign-in: a request is not a write. */
export const LAST_USED_GRANULARITY_MS = 60_000;
/** Revoked or lapsed sign-ins stay listed this long (who had access, and until when), then go. */
export const GRANT_HISTORY_MS = 90 * 86_400_000;

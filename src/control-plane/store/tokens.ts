/** Bearer tokens: random, prefixed so people recognise them, and stored only as their SHA-256. */
import { createHash, randomBytes } from 'node:crypto';

export const TOKEN_PREFIX = 'blue_';

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export function newToken(): string {
  return `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** The ETag of a governance revision's document. */
export function etagOf(text: string): string {
  return `"${createHash('sha256').update(text).digest('base64url').slice(0, 32)}"`;
}

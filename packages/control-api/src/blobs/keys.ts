/**
 * Object keys are made by the server, but they become file paths (local store) and URL paths (both stores), so they
 * are checked anyway: a small alphabet, no empty, `.` or `..` segment, and no segment starting with a dot, which keeps
 * the local store's secret and temp files out of reach.
 */
import { BlueError } from '@blue-agent/contract/errors.js';

const KEY = /^[A-Za-z0-9/_.-]+$/;

export function isValidKey(key: string): boolean {
  if (key.length === 0 || key.length > 512 || !KEY.test(key)) return false;
  return key.split('/').every((segment) => segment.length > 0 && !segment.startsWith('.'));
}

export function assertValidKey(key: string): void {
  if (!isValidKey(key)) {
    throw new BlueError('UNSAFE_PATH', `blob key ${JSON.stringify(key)} is not allowed`, {
      hint: 'Keys use letters, digits, "/", "_", "." and "-", with no empty segment and no segment starting with ".".',
    });
  }
}

export function assertValidObject(object: { size: number; sha256: string }): void {
  if (!Number.isSafeInteger(object.size) || object.size < 0) {
    throw new BlueError('ARTIFACT_INVALID', `blob size ${object.size} is not a non-negative integer`);
  }
  if (!/^[0-9a-f]{64}$/.test(object.sha256)) {
    throw new BlueError('ARTIFACT_INVALID', 'blob sha256 must be 64 lower-case hex digits');
  }
}

/** The base64 form S3 uses in x-amz-checksum-sha256. */
export function hexToBase64(hex: string): string {
  return Buffer.from(hex, 'hex').toString('base64');
}

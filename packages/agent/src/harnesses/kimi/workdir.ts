/**
 * Where Kimi Code keeps a working directory's sessions: `<home>/sessions/wd_<slug>_<hash>/`, its `encodeWorkDirKey`
 * (the same in 0.10 and 2.1): the directory's path with back slashes made `/` and trailing `/` dropped; the slug is its
 * base name lower-cased, runs of characters outside [a-z0-9._-] turned into `-`, `-` trimmed at both ends, cut to 40
 * and trimmed again (`workspace` when nothing, `.` or `..` is left); the hash is the first 12 hex digits of the
 * SHA-256 of the path. The same key names the workspace in a session's `runtime.set_binding` records.
 */
import { sha256Hex } from '@blue-agent/contract/util/startup/sha256.js';

export function kimiCodeWorkDirKey(cwd: string): string {
  const normalized = cwd.replace(/\\/g, '/').replace(/\/+$/, '');
  let slug = (normalized.split('/').pop() ?? '')
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/^-+|-+$/g, '');
  if (slug === '' || slug === '.' || slug === '..') slug = 'workspace';
  return `wd_${slug}_${sha256Hex(normalized).slice(0, 12)}`;
}

/** A work-dir folder name as Kimi Code writes them. */
export const WORK_DIR_KEY = /^wd_[a-z0-9._-]{1,40}_[0-9a-f]{12}$/;

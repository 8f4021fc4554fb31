/**
 * The last-known-good (LKG) policy: the newest valid revision fetched from the Control API, used when it cannot be
 * reached.
 */
import { unlink } from 'node:fs/promises';
import type { Context } from '../context.js';
import type { GovernancePolicy } from '@blue-agent/contract/schema/index.js';
import { readTextIfExists, writeStateFile } from '@blue-agent/contract/util/fs.js';
import { validatePolicy } from '@blue-agent/contract/policy/validate.js';

export interface LastKnownGood {
  policy: GovernancePolicy;
  etag?: string;
  /** Unix time in milliseconds of the last fetch that returned or confirmed (304) this policy. */
  fetched_at: number;
  /** The governance-config URL it was fetched from. */
  url: string;
}

export function lastKnownGoodPath(ctx: Context): string {
  return ctx.paths.policyCacheFile;
}

/**
 * Reads the LKG. A damaged file, or one from another Control API, is ignored with a warning rather than trusted: it
 * is only a fallback, and a fallback must never be a way to inject a policy.
 */
export async function readLastKnownGood(
  ctx: Context,
  url: string,
  warnings: string[],
): Promise<LastKnownGood | undefined> {
  const file = lastKnownGoodPath(ctx);
  let text: string | null;
  try {
    text = await readTextIfExists(file);
  } catch (error) {
    warnings.push(
      `ignoring the last-known-good policy: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    );
    return undefined;
  }
  if (text === null) return undefined;
  try {
    const data = JSON.parse(text) as Record<string, unknown>;
    if (typeof data !== 'object' || data === null) throw new Error('not an object');
    const { fetched_at: fetchedAt, url: cachedUrl, etag } = data;
    if (typeof fetchedAt !== 'number' || !Number.isFinite(fetchedAt)) throw new Error('fetched_at is not a number');
    if (typeof cachedUrl !== 'string') throw new Error('url is missing');
    if (etag !== undefined && typeof etag !== 'string') throw new Error('etag is not a string');
    const policy = validatePolicy(data.policy, `${file} (policy)`);
    if (cachedUrl !== url) {
      warnings.push(`ignoring the last-known-good policy from ${cachedUrl}: the Control API is now ${url}`);
      return undefined;
    }
    return { policy, fetched_at: fetchedAt, url: cachedUrl, ...(etag === undefined ? {} : { etag }) };
  } catch (error) {
    warnings.push(`ignoring the damaged last-known-good policy ${file}: ${(error as Error).message}`);
    return undefined;
  }
}

export async function writeLastKnownGood(ctx: Context, lkg: LastKnownGood): Promise<void> {
  const body = { policy: lkg.policy, etag: lkg.etag, fetched_at: lkg.fetched_at, url: lkg.url };
  await writeStateFile(lastKnownGoodPath(ctx), `${JSON.stringify(body, null, 2)}\n`);
}

/**
 * Deletes the LKG: the organisation's pin refuses this blue-agent, and nothing may keep being applied from a copy
 * (Blue's client does the same). Answers whether there was one; a missing file is fine.
 */
export async function dropLastKnownGood(ctx: Context): Promise<boolean> {
  try {
    await unlink(lastKnownGoodPath(ctx));
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

/**
 * What `serve` knows and the admin commands need: the origin agents reach the server at, and a first start (the
 * first administrator, their token file, a default policy).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { validatePolicy } from '@blue-agent/contract/policy/validate.js';
import { FIXTURE_CERTIFIED, HARNESSES } from '@blue-agent/contract/schema/generated/harness-names.js';
import { originOf } from '@blue-agent/contract/util/url.js';
import type { AuditActor, ControlStore, PolicyRevision } from '../store/index.js';
import { SIGN_IN_LINK_TTL_MS, signInLinkUrl } from './tokens.js';

/** `<data>/admin-token`: the token of the administrator a first start creates (0600; never printed, never logged). */
export const ADMIN_TOKEN_FILE = 'admin-token';

export const FIRST_ADMIN_EMAIL = 'admin@localhost';

/** Atomically writes a private file (0600) in the data directory. */
function writePrivate(file: string, text: string): void {
  const temp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    writeFileSync(temp, text, { mode: 0o600, flag: 'wx' });
    renameSync(temp, file);
  } catch (error) {
    try {
      unlinkSync(temp);
    } catch {
      // never created
    }
    throw error;
  }
}

/** Why agents of this server would refuse the policy's presign_url, or undefined when it is on the server's origin (or
 * that is not known). */
export function presignOriginWarning(body: Record<string, unknown>, publicUrl: string | undefined): string | undefined {
  const upload = body.session_upload as { presign_url?: unknown } | undefined;
  const presign = typeof upload?.presign_url === 'string' ? upload.presign_url : undefined;
  if (presign === undefined || publicUrl === undefined) return undefined;
  const server = originOf(publicUrl);
  const target = originOf(presign);
  if (target === server) return undefined;
  return (
    `session_upload.presign_url is on ${target || presign}, not on this server's origin ${server} (recorded by ` +
    `\`control-plane serve\`): ` +
    `agents refuse it (POLICY_FOREIGN_ORIGIN) unless their allowed_upload_origins lists it; ` +
    `use ${server}/session-uploads/presign`
  );
}

/**
 * The policy a first start publishes: capture on for every harness, uploads presigned by this server; a harness
 * certified on fixtures rather than on its CLI (FIXTURE_CERTIFIED) also captures on versions past its ceiling.
 */
export function defaultPolicy(publicUrl: string): Record<string, unknown> {
  return {
    contract_version: 1,
    ttl_seconds: 3600,
    required: false,
    allowed_harnesses: [...HARNESSES],
    harnesses: Object.fromEntries(FIXTURE_CERTIFIED.map((h) => [h, { allow_unverified_versions: true }])),
    session_upload: { presign_url: `${publicUrl.replace(/\/+$/, '')}/session-uploads/presign` },
  };
}

export interface FirstStart {
  /** Created because the server had no user: the administrator's e-mail, where its token is, and a sign-in link. */
  admin?: { email: string; tokenFile: string; signInUrl: string };
  /** Published because the server had no policy. */
  policy?: PolicyRevision;
}

/**
 * What `serve` does on a Control API without users or without a policy: creates an administrator (its token in a
 * 0600 file of the data directory, so that it reaches neither a terminal log nor argv) and publishes the default
 * policy. Both happen at most once, however many replicas start at the same time; the audit log says `by` did them.
 */
export async function firstStart(
  store: ControlStore,
  dataDir: string,
  publicUrl: string,
  now: number,
  by?: AuditActor,
): Promise<FirstStart> {
  const started: FirstStart = {};
  const created = await store.addFirstAdmin(FIRST_ADMIN_EMAIL, now, by);
  if (created !== undefined) {
    const tokenFile = path.join(dataDir, ADMIN_TOKEN_FILE);
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    writePrivate(tokenFile, `${created.token}\n`);
    const secret = await store.identity.createSignInLink(created.user.id, now, SIGN_IN_LINK_TTL_MS, by);
    started.admin = { email: created.user.email, tokenFile, signInUrl: signInLinkUrl(publicUrl, secret) };
  }
  const body = defaultPolicy(publicUrl);
  validatePolicy({ ...body, revision: 1 }, '(default policy)', undefined, 'authored');
  const text =
    `# The policy a first start publishes: capture on for every harness, uploads presigned by this ` +
    `server.\n${stringify(body)}`;
  const published = await store.publishFirstPolicy(body, now, { text, by });
  if (published !== undefined) started.policy = published;
  return started;
}

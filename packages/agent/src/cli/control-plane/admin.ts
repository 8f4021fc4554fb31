/** `control-plane users|tokens|policy ...`: the administration commands, run against the database directly. */
import path from 'node:path';
import type { Context } from '../../context.js';
import type { Grant } from '@blue-agent/control-api/store/index.js';
import { type DataOptions, storeOptions, operator, print } from './data.js';

export async function usersAddCommand(
  ctx: Context,
  email: string,
  opts: DataOptions & { admin?: boolean },
): Promise<number> {
  const { addUser } = await import('@blue-agent/control-api/admin.js');
  const { user, token } = await addUser(
    storeOptions(ctx, opts, true),
    email,
    opts.admin === true,
    ctx.clock.now(),
    operator(ctx),
  );
  print(
    ctx,
    opts,
    { ok: true, user_id: user.id, email: user.email, is_admin: user.is_admin, token },
    `Added ${user.is_admin ? 'administrator' : 'user'} ${user.email} (${user.id}).\n` +
      `Bearer token (shown only now; the server keeps only its hash):\n${token}\n`,
  );
  return 0;
}

export async function usersLinkCommand(ctx: Context, email: string, opts: DataOptions): Promise<number> {
  const { makeSignInLink } = await import('@blue-agent/control-api/admin.js');
  const {
    user,
    url,
    expires_at: expires,
  } = await makeSignInLink(storeOptions(ctx, opts, false), email, ctx.clock.now(), operator(ctx));
  print(
    ctx,
    opts,
    { ok: true, email: user.email, url, expires_at: new Date(expires).toISOString() },
    `One-time sign-in link for ${user.email} (works once, until ${new Date(expires).toISOString()}; send it ` +
      `privately):\n${url}\n`,
  );
  return 0;
}

export async function usersListCommand(ctx: Context, opts: DataOptions): Promise<number> {
  const { listUsers } = await import('@blue-agent/control-api/admin.js');
  const users = await listUsers(storeOptions(ctx, opts, false));
  print(
    ctx,
    opts,
    {
      ok: true,
      users: users.map((u) => ({
        user_id: u.id,
        email: u.email,
        is_admin: u.is_admin,
        created_at: new Date(u.created_at).toISOString(),
      })),
    },
    users.length === 0
      ? 'No users yet.\n'
      : users.map((u) => `${u.id}  ${u.email}${u.is_admin ? '  (admin)' : ''}\n`).join(''),
  );
  return 0;
}

/** A sign-in as `tokens list` shows it: id, whose, what, and whether it works. */
function tokenLine(grant: Grant, now: number): string {
  const state =
    grant.revoked_at !== null ? 'revoked' : grant.expires_at !== null && grant.expires_at <= now ? 'lapsed' : 'active';
  const used = grant.last_used_at === null ? 'never used' : `last used ${new Date(grant.last_used_at).toISOString()}`;
  return `${grant.id}  ${grant.user_email}  ${grant.kind}  ${state}  ${used}  ${grant.label}\n`;
}

function tokenJson(grant: Grant, now: number): Record<string, unknown> {
  const iso = (at: number | null) => (at === null ? null : new Date(at).toISOString());
  return {
    id: grant.id,
    user_id: grant.user_id,
    email: grant.user_email,
    kind: grant.kind,
    label: grant.label,
    scopes: grant.scopes,
    created_at: iso(grant.created_at),
    last_used_at: iso(grant.last_used_at),
    expires_at: iso(grant.expires_at),
    revoked_at: iso(grant.revoked_at),
    active: grant.revoked_at === null && (grant.expires_at === null || grant.expires_at > now),
  };
}

export async function tokensAddCommand(
  ctx: Context,
  email: string,
  opts: DataOptions & { label?: string },
): Promise<number> {
  const { addToken } = await import('@blue-agent/control-api/admin.js');
  const { user, token, grant } = await addToken(
    storeOptions(ctx, opts, false),
    email,
    opts.label,
    ctx.clock.now(),
    operator(ctx),
  );
  print(
    ctx,
    opts,
    { ok: true, ...tokenJson(grant, ctx.clock.now()), token },
    `Added a token for ${user.email} (${grant.id}).\nBearer token (shown only now; the server keeps only its ` +
      `hash):\n${token}\n`,
  );
  return 0;
}

export async function tokensListCommand(ctx: Context, email: string | undefined, opts: DataOptions): Promise<number> {
  const { listTokens } = await import('@blue-agent/control-api/admin.js');
  const grants = await listTokens(storeOptions(ctx, opts, false), email);
  const now = ctx.clock.now();
  print(
    ctx,
    opts,
    { ok: true, tokens: grants.map((g) => tokenJson(g, now)) },
    grants.length === 0 ? 'No tokens.\n' : grants.map((g) => tokenLine(g, now)).join(''),
  );
  return 0;
}

export async function tokensRevokeCommand(ctx: Context, id: string, opts: DataOptions): Promise<number> {
  const { revokeToken } = await import('@blue-agent/control-api/admin.js');
  const grant = await revokeToken(storeOptions(ctx, opts, false), id.trim(), ctx.clock.now(), operator(ctx));
  print(
    ctx,
    opts,
    { ok: true, ...tokenJson(grant, ctx.clock.now()) },
    `Revoked ${grant.id} (${grant.user_email}, ${grant.label}): its tokens no longer work.\n`,
  );
  return 0;
}

export async function policyPublishCommand(
  ctx: Context,
  file: string,
  opts: DataOptions & { confirm?: boolean },
): Promise<number> {
  const { publishPolicy } = await import('@blue-agent/control-api/admin.js');
  const { published, ignoredRevision, warnings, captureStop } = await publishPolicy(
    storeOptions(ctx, opts, false),
    path.resolve(ctx.cwd, file),
    ctx.clock.now(),
    {
      confirm: opts.confirm === true,
      by: operator(ctx),
    },
  );
  if (opts.json !== true) for (const warning of warnings) ctx.stderr.write(`warning: ${warning}\n`);
  print(
    ctx,
    opts,
    {
      ok: true,
      revision: published.revision,
      etag: published.etag,
      ignored_revision: ignoredRevision ?? null,
      warnings,
      stops_capture: captureStop !== undefined,
    },
    `Published policy revision ${published.revision}.\n` +
      (ignoredRevision === undefined
        ? ''
        : `(The file's revision ${JSON.stringify(ignoredRevision)} was replaced: the server makes revision ids.)\n`) +
      (captureStop === undefined ? '' : `Session capture stops: ${captureStop.effect}.\n`),
  );
  return 0;
}

/** `control-plane policy show`: a revision exactly as it was published (the document served, with --json). */
export async function policyShowCommand(ctx: Context, opts: DataOptions & { revision?: string }): Promise<number> {
  const { publishedText, showPolicy } = await import('@blue-agent/control-api/admin.js');
  const shown = await showPolicy(storeOptions(ctx, opts, false), opts.revision?.trim());
  const text = publishedText(shown);
  if (opts.json === true) {
    const answer = {
      ok: true,
      revision: shown.revision,
      published_at: new Date(shown.created_at).toISOString(),
      etag: shown.etag,
      text: shown.text,
      document: shown.body,
    };
    ctx.stdout.write(`${JSON.stringify(answer, null, 2)}\n`);
    return 0;
  }
  if (shown.text === null)
    ctx.stderr.write(
      `(revision ${shown.revision} was published before texts were kept: this is its document, as YAML)\n`,
    );
  ctx.stdout.write(text.endsWith('\n') || text === '' ? text : `${text}\n`);
  return 0;
}

/** What the `sessions` subcommands share: the session client for one command, and a session as JSON and as text. */
import type { Context } from '../../context.js';
import { SessionsApi, type CapturedSession } from '../../control-api/sessions.js';

export async function withApi<T>(ctx: Context, work: (api: SessionsApi) => Promise<T>): Promise<T> {
  const api = await SessionsApi.fromContext(ctx);
  try {
    return await work(api);
  } finally {
    await api.close();
  }
}

export function writeJson(ctx: Context, doc: Record<string, unknown>): void {
  ctx.stdout.write(`${JSON.stringify({ ok: true, ...doc }, null, 2)}\n`);
}

/**
 * A session as `--json` prints it: the Control API's CapturedSession, plus what the agent derives — `owned` (its
 * `user_id` is the caller's, from GET /auth/me) and `expired` (its `retention_expires_at` has passed).
 */
export function sessionJson(
  api: SessionsApi,
  s: CapturedSession,
  owned: boolean,
): CapturedSession & { owned: boolean; expired: boolean } {
  return { ...s, owned, expired: api.expired(s) };
}

/** `you`, `shared by EMAIL` (shared with the workspace or named people), or the owner's address (an administrator's
 * view). */
export function ownerLabel(s: CapturedSession, owned: boolean): string {
  if (owned) return 'you';
  return s.sharing_mode === 'private' ? s.user_email : `shared by ${s.user_email}`;
}

/** `2026-01-01 09:30` (UTC) from an ISO time; the text itself when it is not one. */
export function shortTime(iso: string): string {
  return /^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(iso) ? `${iso.slice(0, 10)} ${iso.slice(11, 16)}` : iso;
}

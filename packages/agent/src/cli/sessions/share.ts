/** `sessions share`: who may see a session: private, the workspace, or selected members. */
import type { Context } from '../../context.js';
import { BlueError, usageError } from '@blue-agent/contract/errors.js';
import { printable, sessionLabel, type SharingMode } from '../../control-api/sessions.js';
import { withApi, writeJson } from './common.js';
import { sharingText } from './show.js';

export const SHARING_MODES = ['private', 'workspace', 'selected'] as const;
export const MAX_RECIPIENTS = 100;
// ---------------------------------------------------------------------------------------------------------------
// share

export async function sessionsShareCommand(
  ctx: Context,
  id: string,
  opts: { mode: string; user?: string[]; json?: boolean },
): Promise<number> {
  // Everything about the flags is checked before the Control API is asked anything.
  const mode = opts.mode as SharingMode;
  if (!(SHARING_MODES as readonly string[]).includes(mode)) {
    throw usageError(
      `--mode must be private, workspace or selected, not "${printable(opts.mode).slice(0, 40)}"`,
      'private: only you; workspace: everyone on the Control API; selected: the people named with --user.',
    );
  }
  const users = [...new Set((opts.user ?? []).map((u) => u.trim()))];
  if (mode !== 'selected' && users.length > 0) {
    throw usageError(
      `--user names recipients only with --mode selected, not with --mode ${mode}`,
      'Use --mode selected --user EMAIL (repeatable), or drop --user.',
    );
  }
  if (mode === 'selected' && users.length === 0) {
    throw usageError(
      '--mode selected needs at least one --user EMAIL',
      'Name each recipient with --user (repeatable).',
    );
  }
  for (const user of users) {
    if (user === '' || user.length > 320 || /[\s\u0000-\u001f\u007f]/.test(user)) {
      throw usageError(
        `--user "${printable(user).slice(0, 60)}" is not an e-mail address or user id`,
        'Give the e-mail address the person uses on the Control API.',
      );
    }
  }
  if (users.length > MAX_RECIPIENTS)
    throw usageError(
      `--user is given ${users.length} times; at most ${MAX_RECIPIENTS} recipients are allowed`,
      'Share with fewer people, or with the whole workspace: --mode workspace.',
    );

  const { session, update, names } = await withApi(ctx, async (api) => {
    const session = await api.resolve(id);
    const me = await api.me();
    if (session.user_id !== me.id) {
      throw new BlueError(
        'SESSION_NOT_OWNED',
        `session ${session.id} (${sessionLabel(session)}) belongs to ${session.user_email}; only its owner may ` +
          `change its sharing`,
        {
          hint: 'Ask the owner to share it.',
        },
      );
    }
    // The Control API takes user ids: addresses are looked up among the members (never yourself: you always see it).
    const own = (u: string) => u.toLowerCase() === me.email.toLowerCase() || u === me.id;
    const others = users.filter((u) => !own(u));
    if (mode === 'selected' && others.length === 0) {
      throw usageError(
        '--user names only you; the owner always sees their session',
        'Name someone else with --user, or use --mode private.',
      );
    }
    const byEmail = await api.memberIds(others.filter((u) => u.includes('@')));
    const names = new Map([...byEmail].map(([email, uid]) => [uid, email]));
    const ids = [...new Set([...byEmail.values(), ...others.filter((u) => !u.includes('@'))])];
    const update = await api.setSharing(session.id, mode, ids);
    return { session, update, names };
  });
  if (opts.json === true) {
    writeJson(ctx, { id: session.id, sharing: { mode: update.mode, user_ids: update.user_ids } });
    return 0;
  }
  const recipients = update.user_ids.map((uid) => names.get(uid) ?? uid);
  ctx.stdout.write(
    `${printable(sessionLabel(session))} (${session.id}): sharing is now ` +
      `${printable(sharingText(update.mode, recipients, true))}\n`,
  );
  return 0;
}

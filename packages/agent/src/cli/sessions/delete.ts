/** `sessions delete`: a captured session removed from the Control API, for good, after a `--yes`. */
import type { Context } from '../../context.js';
import { BlueError, usageError } from '@blue-agent/contract/errors.js';
import { printable, sessionLabel } from '../../control-api/sessions.js';

import { withApi, writeJson, ownerLabel } from './common.js';

// ---------------------------------------------------------------------------------------------------------------
// delete

/**
 * Deletes a captured session from the Control API: every revision, its sharing and its stored bundles. Without
 * `--yes` it only says what would go (exit 2): nothing can bring a deleted session back.
 */
export async function sessionsDeleteCommand(
  ctx: Context,
  id: string,
  opts: { yes?: boolean; json?: boolean },
): Promise<number> {
  const session = await withApi(ctx, async (api) => {
    const session = await api.resolve(id);
    const me = await api.me();
    if (session.user_id !== me.id && me.role !== 'admin') {
      throw new BlueError(
        'SESSION_NOT_OWNED',
        `session ${session.id} (${sessionLabel(session)}) belongs to ${session.user_email}; only its owner or an ` +
          `administrator may delete it`,
        {
          hint: 'Ask the owner to delete it.',
        },
      );
    }
    if (opts.yes !== true) {
      throw usageError(
        `sessions delete removes ${sessionLabel(session)} (${session.id}, ` +
          `${ownerLabel(session, session.user_id === me.id)}) and every revision of it from the Control API for ` +
          `good; nothing is deleted without --yes`,
        `Run again with --yes: blue-agent sessions delete ${session.id} --yes`,
      );
    }
    await api.delete(session.id);
    return session;
  });
  if (opts.json === true) {
    writeJson(ctx, { id: session.id, deleted: true });
    return 0;
  }
  ctx.stdout.write(`Deleted ${printable(sessionLabel(session))} (${session.id}) and every revision of it.\n`);
  return 0;
}

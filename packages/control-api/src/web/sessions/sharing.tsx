/** A session's sharing on its page: the owner's form, and what it posts. */
import { HttpError } from '../../http.js';
import type { Request, RouteContext } from '../../route-context.js';
import { changeSharing, visibleSession } from '../../session-actions.js';
import { SHARING_MODES, type CapturedSession, type SharingMode } from '../../store/index.js';
import { browserSession, readPagePost, redirect } from '../http.js';

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function SharingForm({
  csrf,
  session,
  recipients,
  find,
  found,
}: {
  csrf: string;
  session: CapturedSession;
  recipients: { id: string; email: string }[];
  find: string;
  found: { id: string; email: string }[];
}) {
  const modes: Record<SharingMode, string> = {
    private: 'Private: only you (and administrators)',
    workspace: 'Workspace: every member',
    selected: 'Selected members',
  };
  return (
    <section aria-labelledby="sharing">
      <h2 id="sharing">Sharing</h2>
      <form method="post" action={`/sessions/${session.id}/sharing`}>
        <input type="hidden" name="csrf" value={csrf} />
        <input type="hidden" name="action" value="mode" />
        <fieldset>
          <legend>Who may see and resume it</legend>
          {SHARING_MODES.map((m) => (
            <label class="check" key={m}>
              <input type="radio" name="mode" value={m} checked={session.sharing_mode === m} /> {modes[m]}
            </label>
          ))}
        </fieldset>
        <button type="submit">Save</button>
      </form>
      <h3>Selected members</h3>
      {session.sharing_mode === 'workspace' ? (
        <p class="muted">
          Every member may see it now. To name people instead, add them here: it is then shared with them alone.
        </p>
      ) : null}
      {recipients.length === 0 || session.sharing_mode !== 'selected' ? (
        <p class="muted">Nobody by name.</p>
      ) : (
        <ul class="people">
          {recipients.map((r) => (
            <li key={r.id}>
              {r.email}{' '}
              <form method="post" action={`/sessions/${session.id}/sharing`} class="inline">
                <input type="hidden" name="csrf" value={csrf} />
                <input type="hidden" name="action" value="remove" />
                <input type="hidden" name="user" value={r.id} />
                <button type="submit" class="link" aria-label={`Stop sharing with ${r.email}`}>
                  Remove
                </button>
              </form>
            </li>
          ))}
        </ul>
      )}
      <form
        method="get"
        action={`/sessions/${session.id}#sharing`}
        role="search"
        aria-label="Find people to share with"
      >
        <label for="find">Add people</label>
        <input type="search" id="find" name="find" value={find} placeholder="Part of an e-mail" />
        <button type="submit">Find</button>
      </form>
      {find === '' ? null : found.length === 0 ? (
        <p class="muted">Nobody else matches.</p>
      ) : (
        <ul class="people">
          {found.map((u) => (
            <li key={u.id}>
              {u.email}{' '}
              <form method="post" action={`/sessions/${session.id}/sharing`} class="inline">
                <input type="hidden" name="csrf" value={csrf} />
                <input type="hidden" name="action" value="add" />
                <input type="hidden" name="user" value={u.id} />
                <button type="submit" aria-label={`Share with ${u.email}`}>
                  Share
                </button>
              </form>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** POST /sessions/{id}/sharing: a mode, or a person added or removed (selected members). */
export async function sessionSharing(rc: RouteContext, req: Request): Promise<void> {
  const browser = await browserSession(rc, req);
  if (browser === undefined) throw new HttpError(401, 'unauthenticated', 'sign in first');
  const form = await readPagePost(rc, req, browser);
  const session = await visibleSession(rc, browser.user, req.params[0]!);
  const current = session.owner_id === browser.user.id ? (await rc.store.recipients(session)).map((u) => u.id) : [];
  const selected = session.sharing_mode === 'selected' ? current : [];
  const action = form.get('action');
  const who = form.get('user') ?? '';
  if (action === 'mode') {
    const mode = form.get('mode') as SharingMode;
    if (!SHARING_MODES.includes(mode)) throw new HttpError(400, 'invalid_request', 'choose who may see the session');
    if (mode === 'selected' && selected.length === 0)
      throw new HttpError(400, 'invalid_request', 'add at least one person first: find them under "Add people"');
    await changeSharing(rc, browser.user, session, mode, mode === 'selected' ? selected : []);
  } else if ((action === 'add' || action === 'remove') && UUID.test(who)) {
    const next = action === 'add' ? [...new Set([...selected, who])] : selected.filter((id) => id !== who);
    await changeSharing(rc, browser.user, session, next.length === 0 ? 'private' : 'selected', next);
  } else {
    throw new HttpError(400, 'invalid_request', 'the form does not say what to change');
  }
  redirect(req.reply, `/sessions/${session.id}?saved=sharing#sharing`);
}

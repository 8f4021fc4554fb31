/**
 * A session's page (metadata, revisions, download, the resume command, sharing for its owner, deletion, and the
 * transcript), and its download. Every access rule is session-actions.ts's, as for the API; administrators see the
 * organisation's sessions.
 */
import { RECORD_FORMAT } from '@blue-agent/contract/bundle/record.js';
import { formatBytes } from '@blue-agent/contract/bundle/limits.js';
import { maskSecrets } from '@blue-agent/contract/util/secrets.js';
import { MIN_SESSION_PREFIX, sessionRef, type SessionRef } from '@blue-agent/contract/util/session-ref.js';
import { HttpError } from '../../http.js';
import type { Request, RouteContext } from '../../route-context.js';
import { auditAdminRead, downloadLink, removeSession, visibleSession } from '../../session-actions.js';
import { isExpired, type Artifact, type BrowserSession } from '../../store/index.js';
import { browserSession, readPagePost, redirect, sendPage } from '../http.js';
import { Page, when } from '../layout.js';
import { TranscriptView } from '../transcript.js';
import { SharingForm, UUID } from './sharing.js';
import { signedIn } from './signed-in.js';
import { titleOf } from './title.js';
import { forgetExpiredTranscripts, transcriptOf } from './transcripts.js';

/** Sessions an ambiguous id prefix lists at most. */
const PREFIX_MATCHES = 20;

/**
 * A session named as the CLI takes it, by the start of its id (or its id in capitals): to its page when one session
 * the person may see starts so, a page listing them when several do (409: the address names none of them alone).
 */
async function sessionByRef(rc: RouteContext, req: Request, browser: BrowserSession, ref: SessionRef): Promise<void> {
  if (ref.kind === 'id') return redirect(req.reply, `/sessions/${ref.id}${req.url.search}`);
  const { sessions } = await rc.store.listSessions(
    browser.user,
    { id_prefix: ref.prefix, sort: 'updated_desc', limit: PREFIX_MATCHES + 1, offset: 0 },
    rc.now(),
  );
  if (sessions.length === 0)
    throw new HttpError(404, 'not_found', `No session you may see has an id starting with ${ref.prefix}.`);
  if (sessions.length === 1) return redirect(req.reply, `/sessions/${sessions[0]!.id}${req.url.search}`);
  sendPage(
    req.reply,
    409,
    <Page title={`Sessions starting with ${ref.prefix}`} session={browser} nav="sessions">
      <h1>Several sessions start with {ref.prefix}</h1>
      <p role="alert">The address names none of them alone: choose one, or give more characters of its id.</p>
      <ul class="sessions">
        {sessions.slice(0, PREFIX_MATCHES).map((s) => (
          <li class="session" key={s.id}>
            <a class="title clamp" href={`/sessions/${s.id}`}>
              {titleOf(s)}
            </a>
            <div class="meta">
              <code>{s.id}</code>
              <span class="badge">{s.harness}</span>
              <span>{s.owner_id === browser.user.id ? 'yours' : s.owner_email}</span>
              <span>
                <time datetime={new Date(s.updated_at).toISOString()}>{when(s.updated_at)}</time>
              </span>
            </div>
          </li>
        ))}
      </ul>
      {sessions.length > PREFIX_MATCHES ? <p class="muted">And more: give more characters of the id.</p> : null}
    </Page>,
  );
}

/**
 * GET /sessions/{id}: the session's page; `?revision=` shows an earlier upload's transcript, `?find=` looks for people
 * to share with. The id may be given as the CLI takes it: the start of it (sessionByRef).
 */
export async function sessionPage(rc: RouteContext, req: Request): Promise<void> {
  const browser = await signedIn(rc, req);
  if (browser === undefined) return;
  const user = browser.user;
  const ref = sessionRef(req.params[0]!);
  if (ref === undefined) {
    throw new HttpError(
      404,
      'not_found',
      `${req.params[0]!} is not a session id: give its full id, or its first ${MIN_SESSION_PREFIX} or more ` +
        `characters, as the list shows them.`,
    );
  }
  if (ref.kind === 'prefix' || ref.id !== req.params[0]) return sessionByRef(rc, req, browser, ref);
  const session = await visibleSession(rc, user, ref.id);
  await auditAdminRead(rc, user, session, 'page');
  const now = rc.now();
  forgetExpiredTranscripts(now);
  const artifacts = await rc.store.artifactsOf(session.id);
  const owned = session.owner_id === user.id;
  const wanted = req.url.searchParams.get('revision');
  const shown = (wanted === null ? session.current : artifacts.find((a) => a.id === wanted)) ?? session.current;
  const readable = (a: Artifact) => (a.status === 'complete' || a.status === 'superseded') && !isExpired(a, now);
  const transcript = shown !== undefined && readable(shown) ? await transcriptOf(rc, shown) : undefined;
  const recipients = owned ? await rc.store.recipients(session) : [];
  const find = (req.url.searchParams.get('find') ?? '').trim().slice(0, 200);
  const found =
    owned && find !== ''
      ? (await rc.store.searchUsers(find, user.id, 10)).filter((u) => !recipients.some((r) => r.id === u.id))
      : [];
  const current = session.current;
  // A stored or imported record: no harness folder, no profile, nothing to resume.
  const record = current?.artifact_format === RECORD_FORMAT;
  const saved = req.url.searchParams.get('saved');
  sendPage(
    req.reply,
    200,
    <Page title={titleOf(session)} session={browser} nav="sessions">
      <p>
        <a href="/sessions">← Sessions</a>
      </p>
      <h1 class="session-title">{titleOf(session)}</h1>
      {saved === null ? null : (
        <p class="notice" role="status">
          {saved === 'sharing' ? 'Sharing saved.' : 'Saved.'}
        </p>
      )}
      {/* The transcript is what the page is for: first, and the widest column; what is said of the session beside
          it. */}
      <div class="session-page">
        <div class="session-main">
          <section aria-labelledby="transcript">
            <h2 id="transcript">
              Transcript{shown !== undefined && shown.id !== current?.id ? ` (revision ${shown.revision})` : ''}
            </h2>
            {transcript === undefined ? (
              <p class="muted">
                No readable transcript: the upload is not a session bundle, is not verified yet, or has expired.
              </p>
            ) : (
              <TranscriptView transcript={transcript} />
            )}
          </section>

          <section aria-labelledby="revisions">
            <h2 id="revisions">Revisions</h2>
            <table class="responsive">
              <thead>
                <tr>
                  <th scope="col">#</th>
                  <th scope="col">Status</th>
                  <th scope="col">Size</th>
                  <th scope="col">SHA-256</th>
                  <th scope="col">Captured</th>
                  <th scope="col">
                    <span class="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {artifacts.map((a) => (
                  <tr key={a.id} aria-current={a.id === shown?.id ? 'true' : undefined}>
                    <td>{a.revision}</td>
                    <td>{isExpired(a, now) && a.status !== 'pending' ? `${a.status}, expired` : a.status}</td>
                    <td>{formatBytes(a.size_bytes)}</td>
                    <td>
                      <code class="digest" title={a.sha256}>
                        {a.sha256.slice(0, 16)}…
                      </code>
                    </td>
                    <td>{when(a.captured_at_unix_ms ?? a.created_at)}</td>
                    <td>
                      {readable(a) ? (
                        <>
                          <a href={`/sessions/${session.id}/download?artifact=${a.id}`}>Download</a>
                          {a.id === shown?.id ? null : (
                            <>
                              {' · '}
                              <a href={`/sessions/${session.id}?revision=${a.id}#transcript`}>Transcript</a>
                            </>
                          )}
                        </>
                      ) : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
        </div>
        <aside class="session-side" aria-labelledby="about">
          <h2 id="about">About this session</h2>
          <dl class="facts">
            <dt>{record ? 'Provider' : 'Harness'}</dt>
            <dd>{session.harness}</dd>
            {session.tags.length === 0 ? null : (
              <>
                <dt>Tags</dt>
                <dd>{session.tags.map((t) => `#${t}`).join(' ')}</dd>
              </>
            )}
            <dt>Owner</dt>
            <dd>{owned ? `you (${session.owner_email})` : session.owner_email}</dd>
            {record ? null : (
              <>
                <dt>Recorded in</dt>
                <dd>
                  <code>{current?.cwd ?? '(unknown)'}</code>
                </dd>
              </>
            )}
            {current?.repository_remote == null ? null : (
              <>
                <dt>Repository</dt>
                <dd>
                  <code>{current.repository_remote}</code>
                </dd>
              </>
            )}
            <dt>Native session id</dt>
            <dd>
              <code>{session.native_session_id}</code>
            </dd>
            <dt>Updated</dt>
            <dd>{when(session.updated_at)}</dd>
            <dt>Status</dt>
            <dd>{current?.status ?? 'no verified upload yet'}</dd>
            <dt>{record ? 'Kind' : 'Profile'}</dt>
            <dd>{record ? 'a stored record (not resumable)' : (current?.compatibility_profile ?? '—')}</dd>
            {current?.summary == null ? null : (
              <>
                <dt>Summary</dt>
                <dd>{maskSecrets(current.summary)}</dd>
              </>
            )}
          </dl>

          {current !== undefined && current.resumable && readable(current) ? (
            <section aria-labelledby="resume">
              <h2 id="resume">Resume it on your machine</h2>
              <div class="copy">
                <input
                  type="text"
                  readonly
                  value={`blue-agent resume ${session.id}`}
                  id="resume-command"
                  aria-label="Resume command"
                  class="command"
                />
                <button type="button" data-copy="resume-command">
                  Copy
                </button>
              </div>
            </section>
          ) : null}

          {owned ? (
            <SharingForm csrf={browser.csrf} session={session} recipients={recipients} find={find} found={found} />
          ) : session.sharing_mode === 'private' ? null : (
            <p class="muted">Shared with you by {session.owner_email}.</p>
          )}

          {owned || user.is_admin ? (
            <section aria-labelledby="delete">
              <h2 id="delete">Delete</h2>
              <form method="post" action={`/sessions/${session.id}/delete`} class="danger-zone">
                <input type="hidden" name="csrf" value={browser.csrf} />
                <p>
                  Deletes every revision of this session, its sharing and its search entry, for everyone. This cannot be
                  undone.
                </p>
                <label class="check">
                  <input type="checkbox" name="confirm" value="yes" required /> I want to delete this session
                </label>
                <button type="submit" class="danger">
                  Delete session
                </button>
              </form>
            </section>
          ) : null}
        </aside>
      </div>
    </Page>,
  );
}

/** POST /sessions/{id}/delete. */
export async function sessionDelete(rc: RouteContext, req: Request): Promise<void> {
  const browser = await browserSession(rc, req);
  if (browser === undefined) throw new HttpError(401, 'unauthenticated', 'sign in first');
  const form = await readPagePost(rc, req, browser);
  if (form.get('confirm') !== 'yes')
    throw new HttpError(400, 'invalid_request', 'tick the box to confirm the deletion');
  await removeSession(rc, browser.user, await visibleSession(rc, browser.user, req.params[0]!));
  redirect(req.reply, '/sessions?deleted=1');
}

/** GET /sessions/{id}/download?artifact=: to a short-lived URL of that verified upload (recorded in the audit log). */
export async function sessionDownload(rc: RouteContext, req: Request): Promise<void> {
  const browser = await signedIn(rc, req);
  if (browser === undefined) return;
  const session = await visibleSession(rc, browser.user, req.params[0]!);
  const artifact = req.url.searchParams.get('artifact') ?? undefined;
  const link = await downloadLink(
    rc,
    browser.user,
    session,
    artifact !== undefined && UUID.test(artifact) ? artifact : undefined,
  );
  if (link.method !== 'GET' || Object.keys(link.headers).length > 0)
    throw new HttpError(
      501,
      'not_supported',
      'this blob store needs a client that sends headers: resume the session with blue-agent instead',
    );
  void req.reply
    .code(303)
    .headers({ location: link.url, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' })
    .send();
}

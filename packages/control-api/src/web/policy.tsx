/**
 * The Policy page, for administrators: the current revision as it was published (YAML or JSON, comments kept), a form
 * to propose the next one, its difference from the current text reviewed before publishing, and an explicit
 * confirmation for a revision that stops session capture on every machine.
 */
import { diffLines } from 'diff';
import { BlueError } from '@blue-agent/contract/errors.js';
import { MAX_POLICY_BYTES } from '@blue-agent/contract/schema/limits.js';
import { checkPolicyText, presignOriginWarning, publishedText } from '../admin.js';
import { captureStops, type CaptureStop } from '../policy-review.js';
import type { Request, RouteContext } from '../route-context.js';
import { userActor, type BrowserSession, type PolicyRevision } from '../store/index.js';
import { administrator, AdminPage } from './admin.js';
import { readPagePost, redirect, sendPage } from './http.js';
import { Prose, when } from './layout.js';

/** A policy may be as large as agents accept one (escaped in a form, up to three times that). */
const POLICY_FORM = { maxValue: MAX_POLICY_BYTES, maxBytes: 3 * MAX_POLICY_BYTES + 4096 };

/** GET /admin/policy: the current policy as published, and a form to propose a new one (YAML or JSON). */
export async function adminPolicy(rc: RouteContext, req: Request): Promise<void> {
  const session = await administrator(rc, req);
  if (session === undefined) return;
  const current = await rc.store.currentPolicy();
  sendPage(
    req.reply,
    200,
    <PolicyPage
      session={session}
      current={current}
      text={current === undefined ? '' : publishedText(current)}
      published={req.url.searchParams.get('published') ?? undefined}
    />,
  );
}

interface Review {
  diff: ReturnType<typeof diffLines>;
  warnings: string[];
  captureStop: CaptureStop | undefined;
}

function PolicyPage(props: {
  session: BrowserSession;
  current: PolicyRevision | undefined;
  text: string;
  problem?: string;
  review?: Review;
  published?: string | undefined;
}) {
  const { session, current, text, problem, review, published } = props;
  return (
    <AdminPage session={session} tab="policy" title="Policy">
      {published === undefined ? null : (
        <p class="notice" role="status">
          Published revision <code>{published}</code>. Agents hear of it at once.
        </p>
      )}
      <p class="muted">
        Current revision: {current === undefined ? 'none yet' : <code>{current.revision}</code>}
        {current === undefined
          ? ''
          : `, published ${when(current.created_at)}` +
            `${current.text === null ? ' (before texts were kept: its document is shown as YAML)' : ''}`}
        . It is shown as published; edit it below (YAML or JSON), then review the difference before publishing.
      </p>
      {problem === undefined ? null : (
        <p class="warning" role="alert">
          {problem}
        </p>
      )}
      {(review?.warnings ?? []).map((w) => (
        <p class="warning" key={w}>
          <Prose text={w} />
        </p>
      ))}
      {review === undefined ? null : <ReviewSection session={session} current={current} text={text} review={review} />}
      <form method="post" action="/admin/policy/preview">
        <input type="hidden" name="csrf" value={session.csrf} />
        <label for="policy">Policy</label>
        <textarea id="policy" name="policy" rows={22} spellcheck={false}>
          {text}
        </textarea>
        <div class="actions">
          <button type="submit">Review changes</button>
        </div>
      </form>
    </AdminPage>
  );
}

function ReviewSection({
  session,
  current,
  text,
  review,
}: {
  session: BrowserSession;
  current: PolicyRevision | undefined;
  text: string;
  review: Review;
}) {
  const stop = review.captureStop;
  return (
    <section aria-labelledby="diff">
      <h2 id="diff">Changes against the current policy</h2>
      <div class="diff" role="region" aria-label="Difference">
        {review.diff.map((part, i) =>
          part.value
            .replace(/\n$/, '')
            .split('\n')
            .map((line, j) => (
              <span class={part.added === true ? 'add' : part.removed === true ? 'del' : 'same'} key={`${i}.${j}`}>
                {part.added === true ? '+ ' : part.removed === true ? '- ' : '  '}
                {line}
              </span>
            )),
        )}
      </div>
      {stop === undefined ? null : (
        <p class="warning" role="alert">
          This revision stops session capture on every machine: {stop.reasons.join('; ')}. Once it is published,{' '}
          {stop.effect}.
        </p>
      )}
      <form method="post" action="/admin/policy/publish">
        <input type="hidden" name="csrf" value={session.csrf} />
        <input type="hidden" name="policy" value={text} />
        <input type="hidden" name="base" value={current?.revision ?? ''} />
        {stop === undefined ? null : (
          <label class="check">
            <input type="checkbox" name="confirm" value="yes" required /> I understand: {stop.effect}
          </label>
        )}
        <div class="actions">
          <button type="submit" class={stop === undefined ? 'primary' : 'danger'}>
            {stop === undefined ? 'Publish this policy' : 'Publish and stop capture'}
          </button>
        </div>
      </form>
    </section>
  );
}

/** The proposed policy checked as agents will check it; its body, or the reason it is refused. */
function checked(text: string): { body: Record<string, unknown> } | { problem: string } {
  try {
    return { body: checkPolicyText(text, 'the policy').body };
  } catch (error) {
    if (error instanceof BlueError)
      return { problem: `${error.message}${error.hint === undefined ? '' : ` ${error.hint}`}` };
    throw error;
  }
}

/** The text of the form: a browser sends a textarea's line breaks as CRLF, whatever was typed; kept as LF. */
function policyField(form: Map<string, string>): string {
  return (form.get('policy') ?? '').replace(/\r\n/g, '\n');
}

function reviewOf(
  rc: RouteContext,
  current: PolicyRevision | undefined,
  text: string,
  body: Record<string, unknown>,
): Review {
  const warning = presignOriginWarning(body, rc.publicUrl());
  return {
    diff: diffLines(current === undefined ? '' : publishedText(current), text.endsWith('\n') ? text : `${text}\n`),
    warnings: warning === undefined ? [] : [warning],
    captureStop: captureStops(current?.body, body),
  };
}

/** POST /admin/policy/preview: what would change. */
export async function adminPolicyPreview(rc: RouteContext, req: Request): Promise<void> {
  const session = await administrator(rc, req);
  if (session === undefined) return;
  const form = await readPagePost(rc, req, session, POLICY_FORM);
  const text = policyField(form);
  const current = await rc.store.currentPolicy();
  const result = checked(text);
  if ('problem' in result)
    return sendPage(
      req.reply,
      400,
      <PolicyPage session={session} current={current} text={text} problem={result.problem} />,
    );
  sendPage(
    req.reply,
    200,
    <PolicyPage session={session} current={current} text={text} review={reviewOf(rc, current, text, result.body)} />,
  );
}

/**
 * POST /admin/policy/publish: publishes what was reviewed, unless another revision was published meanwhile, or it
 * stops capture everywhere and the box saying so was not ticked.
 */
export async function adminPolicyPublish(rc: RouteContext, req: Request): Promise<void> {
  const session = await administrator(rc, req);
  if (session === undefined) return;
  const form = await readPagePost(rc, req, session, POLICY_FORM);
  const text = policyField(form);
  const result = checked(text);
  if ('problem' in result)
    return sendPage(
      req.reply,
      400,
      <PolicyPage session={session} current={await rc.store.currentPolicy()} text={text} problem={result.problem} />,
    );
  const base = form.get('base') ?? '';
  const stale = async () => {
    const current = await rc.store.currentPolicy();
    sendPage(
      req.reply,
      409,
      <PolicyPage
        session={session}
        current={current}
        text={text}
        problem="Another revision was published since you reviewed the changes: review them again."
      />,
    );
  };
  const reviewed = await rc.store.currentPolicy();
  if ((reviewed?.revision ?? '') !== base) return stale();
  const review = reviewOf(rc, reviewed, text, result.body);
  if (review.captureStop !== undefined && form.get('confirm') !== 'yes') {
    return sendPage(
      req.reply,
      400,
      <PolicyPage
        session={session}
        current={reviewed}
        text={text}
        review={review}
        problem={
          'This revision stops session capture on every machine: ' +
          'tick the box to confirm that you mean it, or change the policy.'
        }
      />,
    );
  }
  // Whether the reviewed revision is still the current one is asked again as the policy is published, from any replica.
  const published = await rc.store.publishPolicyOver(result.body, base === '' ? undefined : base, rc.now(), {
    text,
    by: userActor(session.user),
  });
  if (published === undefined) return stale();
  redirect(req.reply, `/admin/policy?published=${encodeURIComponent(published.revision)}`);
}

/**
 * Policy revisions: a policy text checked as agents will check it, published (with a confirmation when it would stop
 * capture), shown as published.
 */
import { readFile, stat } from 'node:fs/promises';
import { stringify } from 'yaml';
import { BlueError, lineColumnAt } from '@blue-agent/contract/errors.js';
import { validatePolicy } from '@blue-agent/contract/policy/validate.js';
import { MAX_POLICY_BYTES } from '@blue-agent/contract/schema/limits.js';
import { HARNESSES } from '@blue-agent/contract/schema/generated/harness-names.js';
import { parseYamlText } from '@blue-agent/contract/schema/index.js';
import { governanceProblems } from '../governance.js';
import { captureStops, type CaptureStop } from '../policy-review.js';
import { requireDataDir, type AuditActor, type PolicyRevision, type StoreOptions } from '../store/index.js';
import { presignOriginWarning } from './first-start.js';
import { withStore } from './with-store.js';

/**
 * A policy document (YAML or JSON) checked as agents will check it, and by Blue's rules for what clients it needs:
 * the body to publish (without a revision: the server makes it) and the revision the text named, if any. `where`
 * names the text in errors (a file, or the dashboard's form).
 */
export function checkPolicyText(
  text: string,
  where: string,
): { body: Record<string, unknown>; ignoredRevision: unknown } {
  if (Buffer.byteLength(text) > MAX_POLICY_BYTES)
    throw new BlueError('POLICY_INVALID', `${where} is larger than ${MAX_POLICY_BYTES} bytes`, { file: where });
  // The text is kept as published, and PostgreSQL's text holds no NUL (nor does a YAML document).
  const nul = text.indexOf('\u0000');
  if (nul >= 0) {
    const at = lineColumnAt(text, nul);
    throw new BlueError(
      'POLICY_INVALID',
      `${where}:${at.line}:${at.column}: a policy is text, and this one holds a NUL character`,
      { file: where, ...at, hint: 'Check that the file is the policy, saved as UTF-8 text.' },
    );
  }
  const parsed = parseYamlText(text, where, 'POLICY_INVALID');
  const data = parsed.data;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new BlueError('POLICY_INVALID', `${where}: invalid policy: / must be a mapping of policy fields`, {
      file: where,
      path: '/',
    });
  }
  const record = data as Record<string, unknown>;
  // Validate with a stand-in revision: the text need not (and should not) carry one.
  validatePolicy({ ...record, revision: 1 }, where, parsed, 'authored');
  const problems = governanceProblems(record);
  if (problems.length > 0)
    throw new BlueError('POLICY_INVALID', `${where}: ${problems[0]!}`, {
      file: where,
      hint: problems.length > 1 ? `Also: ${problems.slice(1).join('; ')}` : undefined,
    });
  const { revision: ignoredRevision, ...given } = record;
  // The contract requires allowed_harnesses: a revision that leaves it out allows every harness this server knows.
  return {
    body: given.allowed_harnesses === undefined ? { ...given, allowed_harnesses: [...HARNESSES] } : given,
    ignoredRevision,
  };
}

export interface Published {
  published: PolicyRevision;
  ignoredRevision: unknown;
  warnings: string[];
  /** Set when the revision stops capture on every machine (published because it was confirmed). */
  captureStop?: CaptureStop;
}

/** How many times a publish looks again when other revisions are published between its check and its write. */
const PUBLISH_ATTEMPTS = 5;

/**
 * Validates a policy file with the agent's own validator, and Blue's rules for what clients it needs, and publishes it
 * as the next revision, its text kept as written. The revision id is the server's to make, so whatever the file says
 * is replaced (and reported). A revision that would stop capture on every machine (captureStops) is refused
 * (POLICY_CONFIRMATION_REQUIRED) unless `confirm`; the check and the publish see the same current revision.
 */
export async function publishPolicy(
  where: StoreOptions,
  file: string,
  now: number,
  options: { confirm?: boolean; by?: AuditActor } = {},
): Promise<Published> {
  // A mistyped --data is the first thing to say, before anything about the file.
  if (where.databaseUrl === undefined || where.databaseUrl === '') requireDataDir(where.dataDir);
  let size: number;
  try {
    size = (await stat(file)).size;
  } catch (error) {
    throw new BlueError(
      'POLICY_MISSING',
      `cannot read the policy file ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      { file },
    );
  }
  if (size > MAX_POLICY_BYTES)
    throw new BlueError('POLICY_INVALID', `the policy file ${file} is larger than ${MAX_POLICY_BYTES} bytes`, { file });
  const text = await readFile(file, 'utf8');
  const { body, ignoredRevision } = checkPolicyText(text, file);
  return withStore({ ...where, create: false }, async (store) => {
    const warning = presignOriginWarning(body, await store.publicUrl());
    const warnings = warning === undefined ? [] : [warning];
    for (let attempt = 0; attempt < PUBLISH_ATTEMPTS; attempt++) {
      const current = await store.currentPolicy();
      const captureStop = captureStops(current?.body, body);
      if (captureStop !== undefined && options.confirm !== true)
        throw confirmationRequired(file, current!.revision, captureStop);
      const published = await store.publishPolicyOver(body, current?.revision, now, { text, by: options.by });
      if (published !== undefined)
        return { published, ignoredRevision, warnings, ...(captureStop === undefined ? {} : { captureStop }) };
    }
    throw new BlueError(
      'CONCURRENT_MODIFICATION',
      `other policy revisions kept being published while ${file} was: nothing was published`,
      {
        file,
        hint: 'Run the command again (see the current revision with `blue-agent control-plane policy show`).',
      },
    );
  });
}

function confirmationRequired(file: string, current: string, stop: CaptureStop): BlueError {
  return new BlueError(
    'POLICY_CONFIRMATION_REQUIRED',
    `${file} would stop session capture on every machine: ${stop.reasons.join('; ')} (the current revision is ` +
      `${current}); once it is published, ${stop.effect}. Nothing was published`,
    { file, hint: `If that is what you want, publish it again with --confirm; if not, fix ${file}.` },
  );
}

/** `control-plane policy show`: the current revision, or the one named. */
export async function showPolicy(where: StoreOptions, revision: string | undefined): Promise<PolicyRevision> {
  return withStore({ ...where, create: false }, async (store) => {
    const found = revision === undefined ? await store.currentPolicy() : await store.policyRevision(revision);
    if (found !== undefined) return found;
    if (revision === undefined)
      throw new BlueError('POLICY_MISSING', 'no policy has been published yet', {
        hint:
          'Publish one with `blue-agent control-plane policy publish FILE` (or start `control-plane serve`, ' +
          'which publishes a default one).',
      });
    throw new BlueError('POLICY_MISSING', `there is no policy revision ${JSON.stringify(revision.slice(0, 128))}`, {
      hint: 'Give a revision id as `policy publish` printed it, or leave --revision out for the current one.',
    });
  });
}

/**
 * The text a revision was published as; for one published before texts were kept, its document as YAML (without the
 * revision id, which the server makes).
 */
export function publishedText(revision: Pick<PolicyRevision, 'body' | 'text'>): string {
  if (revision.text !== null) return revision.text;
  const { revision: _id, ...rest } = revision.body;
  return stringify(rest);
}

/**
 * Session records a person adds to the Control API: `sessions store` (a conversation piped in, with a title, a
 * provider and tags) and `import chatgpt-export` (every conversation of ChatGPT's data export). Each record is
 * uploaded like a bundle — presign, PUT, complete — so it is stored, shared, kept and deleted like any session; it is
 * never resumable. Its native id is the provider's session id, or the digest of what it says, so storing or importing
 * the same conversation again is the same session and the same bytes: nothing new is stored. The policy's
 * `session_upload.redact` holds for it as for a bundle: redacted whole, or its title and tags masked.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  checkRecord,
  RECORD_CONTENT_TYPE,
  RECORD_FORMAT,
  recordNativeId,
  serializeRecord,
  type SessionRecord,
} from '@blue-agent/contract/bundle/record.js';
import { loadAgentConfig } from '../config.js';
import type { ControlClient } from '../control-api/client.js';
import type { Context } from '../context.js';
import { BlueError, toBlueError, usageError } from '@blue-agent/contract/errors.js';
import { resolvePolicy } from '../policy/index.js';
import { uploadBundle, type UploadBundleOptions } from '../upload/index.js';
import { maskSecrets } from '@blue-agent/contract/util/secrets.js';

/** The record's content, read from stdin, at most this large. */
export const MAX_STORE_BYTES = 16 * 1024 * 1024;
const PROVIDER = /^[a-z0-9][a-z0-9_.-]{0,63}$/;
const TAG = /^[^\s\u0000-\u001f\u007f,]{1,64}$/;
const CONTROL = /[\u0000-\u001f\u007f]/;
export const MAX_TAGS = 32;
/** The profile a record is presigned under: none (the Control API records that as `legacy`, as Blue's server does). */
const NO_PROFILE = 'legacy';

export interface StoreFlags {
  title?: string;
  provider?: string;
  tag?: string[];
  providerSessionId?: string;
}

/** The record `sessions store` uploads; every flag and the content checked first, each problem naming its field. */
export function storeRecord(flags: StoreFlags, content: string): SessionRecord {
  const title = flags.title;
  if (title === undefined) throw usageError('--title is required', 'Name the session: --title "Design review notes".');
  if (title.trim() === '')
    throw usageError('--title must not be blank', 'Give the session a title people will recognise.');
  if (title.length > 256 || title.includes('\0'))
    throw usageError('--title must be at most 256 characters, without NUL', 'Shorten the title.');
  const provider = flags.provider;
  if (provider === undefined)
    throw usageError(
      '--provider is required',
      'Say where the session came from: --provider notes, --provider chatgpt, ...',
    );
  if (provider.trim() === '')
    throw usageError(
      '--provider must not be blank',
      'Say where the session came from: --provider notes, --provider chatgpt, ...',
    );
  if (!PROVIDER.test(provider))
    throw usageError(
      `--provider "${provider.slice(0, 64)}" must be lower-case letters, digits, "_", "." and "-" (at most 64, ` +
        `starting with a letter or digit)`,
      'For example: --provider chatgpt.',
    );
  const tags = [...new Set(flags.tag ?? [])];
  for (const tag of tags) {
    if (tag.trim() === '') throw usageError('--tag must not be blank', 'Give each tag a word: --tag design --tag q3.');
    if (!TAG.test(tag))
      throw usageError(
        `--tag "${tag.slice(0, 64)}" must be 1 to 64 characters without white space, commas or control characters`,
        'One word per tag, repeated: --tag design --tag q3.',
      );
  }
  if (tags.length > MAX_TAGS)
    throw usageError(
      `--tag is given ${tags.length} times; a session carries at most ${MAX_TAGS} tags`,
      'Keep the tags that help find it.',
    );
  const id = flags.providerSessionId;
  if (id !== undefined) {
    if (id.trim() === '')
      throw usageError(
        '--provider-session-id must not be blank',
        'Leave it out when the provider has no id for the session.',
      );
    if (id.length > 512 || CONTROL.test(id))
      throw usageError(
        '--provider-session-id must be at most 512 characters, without control characters',
        'Give the id the provider shows.',
      );
  }
  if (content.trim() === '')
    throw usageError(
      'the content on stdin must not be empty',
      'Pipe the session in: blue-agent sessions store --title T --provider P < notes.md',
    );
  if (content.includes('\0'))
    throw usageError(
      'the content on stdin must be text (it holds NUL characters)',
      'Store text: a transcript, notes, a conversation.',
    );
  return {
    format: RECORD_FORMAT,
    provider,
    ...(id === undefined ? {} : { provider_session_id: id }),
    title: title.trim(),
    tags,
    content,
  };
}

export interface StoredRecord {
  /** The captured session's id on the Control API. */
  id: string | undefined;
  /** The Control API held exactly these bytes already: nothing new was stored. */
  already: boolean;
  native_session_id: string;
  /** The record as it was sent: redacted, or its title and tags masked. */
  record: SessionRecord;
}

/** What the policy in force says of session uploads' secrets: `secrets` to redact them; a Control API without a policy
 * asks for nothing. */
export async function recordRedaction(ctx: Context): Promise<'secrets' | undefined> {
  const { config } = await loadAgentConfig(ctx);
  try {
    const { policy } = await resolvePolicy(ctx, { dryRun: false, config });
    return policy.session_upload?.redact === 'secrets' ? 'secrets' : undefined;
  } catch (error) {
    if (toBlueError(error).code === 'POLICY_MISSING') return undefined;
    throw error;
  }
}

/**
 * The record as it may leave the machine. Under `redact: secrets` the whole record goes through the redactor (what it
 * says, its title, its tags, its ids); otherwise its title and tags, shown in every list, are masked by the one masking
 * rule, as a captured session's are. Each stays within its bounds.
 */
export async function protectRecord(record: SessionRecord, redact: 'secrets' | undefined): Promise<SessionRecord> {
  const bounded = (r: SessionRecord): SessionRecord => ({
    ...r,
    title: cut(r.title, 256),
    tags: [...new Set(r.tags.map((t) => cut(t, 64)))],
  });
  if (redact !== 'secrets')
    return bounded({ ...record, title: maskSecrets(record.title), tags: record.tags.map((t) => maskSecrets(t)) });
  const { redactText } = await import('../redaction/index.js');
  const out = await redactText(serializeRecord(record).toString('utf8'));
  return out.replaced === 0
    ? record
    : checkRecord(bounded(JSON.parse(out.text) as SessionRecord), 'the redacted session record');
}

/** At most `max` UTF-16 units, never half a surrogate pair: a marker may be longer than the secret it replaced. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const end = /[\uD800-\uDBFF]/.test(text[max - 2] ?? '') ? max - 2 : max - 1;
  return `${text.slice(0, end)}\u2026`;
}

/**
 * Uploads `record` (presign, PUT, complete), protected as `redact` (the policy's) says. Throws UPLOAD_FAILED with the
 * Control API's reason when it is refused.
 */
export async function uploadRecord(
  client: ControlClient,
  given: SessionRecord,
  redact: 'secrets' | undefined,
  options: UploadBundleOptions = {},
): Promise<StoredRecord> {
  const record = await protectRecord(given, redact);
  const bytes = serializeRecord(record);
  const work = await mkdtemp(path.join(tmpdir(), 'blue-agent-record-'));
  try {
    const file = path.join(work, 'record.json');
    await writeFile(file, bytes, { mode: 0o600 });
    const nativeId = recordNativeId(record);
    const result = await uploadBundle(
      client,
      {
        bundleFile: file,
        size: bytes.length,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        manifest: {
          harness: record.provider,
          native_session_id: nativeId,
          compatibility_profile: NO_PROFILE,
          artifact_format: RECORD_FORMAT,
          captured_at_unix_ms: record.created_at_unix_ms ?? 0,
          title: record.title,
        },
        resumable: false,
        verified: true,
        contentType: RECORD_CONTENT_TYPE,
        tags: record.tags,
      },
      options,
    );
    if (result.kind !== 'uploaded') {
      // A refused token or an unreachable Control API keep their codes: the caller stops rather than try the next
      // record.
      const code =
        result.kind === 'retry' &&
        result.stop &&
        (result.code === 'AUTH_FAILED' || result.code === 'CONTROL_API_UNREACHABLE')
          ? result.code
          : 'UPLOAD_FAILED';
      throw new BlueError(code, `the Control API did not store "${record.title.slice(0, 80)}": ${result.reason}`, {
        hint:
          result.kind === 'retry'
            ? 'Try again later (`blue-agent doctor` checks the connection).'
            : "The message is the Control API's; correct what it names.",
      });
    }
    return { id: result.session_id, already: result.already, native_session_id: nativeId, record };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * Session records (`blue-session-record-v1`): conversations a person stored (`sessions store`) or imported
 * (`import chatgpt-export`) rather than ones a harness captured. One JSON document, uploaded like a bundle
 * (presign, PUT, complete) and never resumable. Serialised canonically, so storing or importing the same conversation
 * again gives the same bytes and the Control API keeps one copy. Read by the CLI's export and, on the server, by search
 * and the transcript viewer (schemas/session-record.schema.json is its one definition).
 */
import { createHash } from 'node:crypto';
import { BlueError } from '../errors.js';
import { cleanText, type Transcript, type TranscriptTurn } from './transcript.js';
import * as validators from '../schema/generated/validators.js';
import type { SessionRecord } from '../schema/generated/session-record.js';

export type { SessionRecord } from '../schema/generated/session-record.js';

export const RECORD_FORMAT = 'blue-session-record-v1';
export const RECORD_CONTENT_TYPE = 'application/vnd.blue.session-record+json';
/** A record is read whole: at most this large. */
export const MAX_RECORD_BYTES = 32 * 1024 * 1024;
/** The provider of conversations from ChatGPT's data export. */
export const CHATGPT_EXPORT_PROVIDER = 'chatgpt_export';
/** Turns of a record a transcript shows at most. */
const MAX_TURNS = 5_000;

/** The record's bytes: keys in a fixed order, so equal records are equal bytes. */
export function serializeRecord(record: SessionRecord): Buffer {
  const ordered: SessionRecord = {
    format: record.format,
    provider: record.provider,
    ...(record.provider_session_id === undefined ? {} : { provider_session_id: record.provider_session_id }),
    title: record.title,
    tags: [...record.tags],
    ...(record.created_at_unix_ms === undefined ? {} : { created_at_unix_ms: record.created_at_unix_ms }),
    ...(record.content === undefined ? {} : { content: record.content }),
    ...(record.messages === undefined
      ? {}
      : {
          messages: record.messages.map((m) => ({
            role: m.role,
            text: m.text,
            ...(m.created_at_unix_ms === undefined ? {} : { created_at_unix_ms: m.created_at_unix_ms }),
          })),
        }),
  };
  return Buffer.from(`${JSON.stringify(ordered)}\n`, 'utf8');
}

/** Checks a record against its schema; throws BUNDLE_INVALID naming the first problem and `where`. */
export function checkRecord(value: unknown, where: string): SessionRecord {
  const validate = validators.validateSessionRecord as ((data: unknown) => boolean) & {
    errors?: { instancePath: string; message?: string }[] | null;
  };
  if (!validate(value)) {
    const e = validate.errors?.[0];
    throw new BlueError(
      'BUNDLE_INVALID',
      `${where}: not a session record: ${e?.instancePath || '/'} ${e?.message ?? 'is invalid'}`,
      {
        hint:
          'A session record is what `blue-agent sessions store` and `blue-agent import` upload ' +
          '(schemas/session-record.schema.json).',
      },
    );
  }
  return value as SessionRecord;
}

export function parseRecord(bytes: Uint8Array, where: string): SessionRecord {
  if (bytes.length > MAX_RECORD_BYTES)
    throw new BlueError(
      'BUNDLE_INVALID',
      `${where}: the record is ${bytes.length} bytes, over the ${MAX_RECORD_BYTES}-byte limit`,
    );
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    throw new BlueError('BUNDLE_INVALID', `${where}: the record is not JSON`);
  }
  return checkRecord(value, where);
}

/** A native id for a record without the provider's own: the digest of what it says, so storing it twice is one session.
 * */
export function recordNativeId(record: SessionRecord): string {
  if (record.provider_session_id !== undefined) return record.provider_session_id;
  return `sha256-${createHash('sha256')
    .update(serializeRecord({ ...record, tags: [] }))
    .digest('hex')
    .slice(0, 32)}`;
}

/** The conversation a record holds, as the transcript viewer and the export render conversations. */
export function recordTranscript(record: SessionRecord): Transcript {
  const turns: TranscriptTurn[] = [];
  if (record.content !== undefined && record.content.trim() !== '')
    turns.push({ role: 'user', text: cleanText(record.content) });
  for (const m of record.messages ?? []) {
    if (turns.length >= MAX_TURNS) break;
    const text = cleanText(m.text);
    if (text.trim() === '') continue;
    const at = m.created_at_unix_ms === undefined ? {} : { at: new Date(m.created_at_unix_ms).toISOString() };
    if (m.role === 'user' || m.role === 'assistant') turns.push({ role: m.role, text, ...at });
    else turns.push({ role: 'tool', name: m.role, text, ...at });
  }
  return { turns, skipped: 0, truncated: (record.messages?.length ?? 0) > MAX_TURNS };
}

/** What search reads of a record: its tags and title, then what it says (the caller bounds and masks it). */
export function recordSearchParts(record: SessionRecord): string[] {
  return [
    record.tags.join(' '),
    ...recordTranscript(record)
      .turns.filter((t) => t.role !== 'tool')
      .map((t) => t.text),
  ];
}

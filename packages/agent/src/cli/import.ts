/**
 * `blue-agent import chatgpt-export FILE [--json]`: every conversation of a ChatGPT data export's conversations.json
 * becomes a session record on the Control API (provider `chatgpt_export`, not resumable), with its title and its
 * messages for search. Idempotent: a conversation already imported with the same messages stores nothing new; one that
 * grew becomes a new revision of the same session. The file is read as a stream, one conversation at a time.
 */
import path from 'node:path';
import { MAX_RECORD_BYTES, serializeRecord } from '@blue-agent/contract/bundle/record.js';
import { SessionsApi } from '../control-api/sessions.js';
import type { Context } from '../context.js';
import { toBlueError, usageError } from '@blue-agent/contract/errors.js';
import { conversationRecord, readConversations } from '../sessions/chatgpt.js';
import { recordRedaction, uploadRecord } from '../sessions/store.js';

export const IMPORT_SOURCES = ['chatgpt-export'] as const;

export interface ImportReport {
  source: string;
  file: string;
  conversations: number;
  imported: number;
  unchanged: number;
  failed: { index: number; conversation: string | null; reason: string }[];
}

export async function importCommand(
  ctx: Context,
  source: string,
  file: string,
  opts: { json?: boolean },
): Promise<number> {
  if (!(IMPORT_SOURCES as readonly string[]).includes(source)) {
    throw usageError(
      `blue-agent cannot import "${source.slice(0, 40)}"; it imports ${IMPORT_SOURCES.join(', ')}`,
      'For ChatGPT: blue-agent import chatgpt-export conversations.json',
    );
  }
  const where = path.resolve(ctx.cwd, file);
  const report: ImportReport = { source, file: where, conversations: 0, imported: 0, unchanged: 0, failed: [] };
  const progress = opts.json !== true && ctx.stderr.isTTY === true;
  const redact = await recordRedaction(ctx);
  const api = await SessionsApi.fromContext(ctx);
  try {
    for await (const item of readConversations(where)) {
      report.conversations++;
      const fail = (conversation: string | null, reason: string) =>
        report.failed.push({ index: item.index, conversation, reason });
      if ('error' in item) {
        fail(null, item.error);
        continue;
      }
      const record = conversationRecord(item.conversation);
      if ('error' in record) {
        fail(null, record.error);
        continue;
      }
      if (serializeRecord(record).length > MAX_RECORD_BYTES) {
        fail(
          record.provider_session_id ?? null,
          `it is larger than ${MAX_RECORD_BYTES / 1024 / 1024} MiB as a session record`,
        );
        continue;
      }
      try {
        const stored = await uploadRecord(api.client, record, redact);
        if (stored.already) report.unchanged++;
        else report.imported++;
      } catch (error) {
        const blue = toBlueError(error);
        // The Control API cannot be reached or refuses the token: every other conversation would fail the same way.
        if (blue.code === 'CONTROL_API_UNREACHABLE' || blue.code === 'AUTH_FAILED') throw blue;
        fail(record.provider_session_id ?? null, blue.message);
      }
      if (progress)
        ctx.stderr.write(
          `\rimport: ${report.conversations} conversations read, ${report.imported} imported, ${report.unchanged} ` +
            `unchanged, ${report.failed.length} failed\u001b[K`,
        );
    }
  } finally {
    if (progress) ctx.stderr.write('\n');
    await api.close();
  }
  const ok = report.failed.length === 0;
  if (opts.json === true) {
    ctx.stdout.write(`${JSON.stringify({ ok, ...report }, null, 2)}\n`);
  } else {
    ctx.stdout.write(
      `${report.conversations} conversation${report.conversations === 1 ? '' : 's'}: ${report.imported} imported, ` +
        `${report.unchanged} already there, ${report.failed.length} failed.\n`,
    );
    for (const f of report.failed.slice(0, 20))
      ctx.stdout.write(
        `  conversation ${f.index + 1}${f.conversation === null ? '' : ` (${f.conversation})`}: ${f.reason}\n`,
      );
    if (report.failed.length > 20)
      ctx.stdout.write(`  and ${report.failed.length - 20} more (--json lists them all)\n`);
  }
  return ok ? 0 : 1;
}

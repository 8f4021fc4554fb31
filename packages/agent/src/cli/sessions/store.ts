/** `sessions store`: a conversation read from stdin, stored on the Control API as a session record. */
import { formatBytes } from '@blue-agent/contract/bundle/index.js';
import type { Context } from '../../context.js';
import { usageError } from '@blue-agent/contract/errors.js';
import { printable } from '../../control-api/sessions.js';

import { MAX_STORE_BYTES, recordRedaction, storeRecord, uploadRecord, type StoreFlags } from '../../sessions/store.js';
import { withApi, writeJson } from './common.js';

// ---------------------------------------------------------------------------------------------------------------
// store

/** At most this much is read from stdin for a stored session. */
async function readContent(ctx: Context): Promise<string> {
  if (ctx.stdin.isTTY)
    throw usageError(
      'sessions store reads the session from stdin, and stdin is a terminal',
      'Pipe it in: blue-agent sessions store --title T --provider P < notes.md',
    );
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.stdin.stream() as AsyncIterable<Buffer | string>) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += buffer.length;
    if (size > MAX_STORE_BYTES)
      throw usageError(
        `the content on stdin is larger than ${formatBytes(MAX_STORE_BYTES)}`,
        'Store a smaller session, or split it.',
      );
    chunks.push(buffer);
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw usageError('the content on stdin is not UTF-8 text', 'Store text: a transcript, notes, a conversation.');
  }
}

/** `sessions store`: a session record from stdin, with its title, provider and tags; never resumable. */
export async function sessionsStoreCommand(ctx: Context, opts: StoreFlags & { json?: boolean }): Promise<number> {
  // Every flag is checked before stdin is read, and all of it before the Control API is asked anything.
  storeRecord(opts, 'x');
  const record = storeRecord(opts, await readContent(ctx));
  const redact = await recordRedaction(ctx);
  const stored = await withApi(ctx, (api) => uploadRecord(api.client, record, redact));
  const sent = stored.record;
  if (opts.json === true) {
    writeJson(ctx, {
      id: stored.id ?? null,
      already: stored.already,
      provider: sent.provider,
      native_session_id: stored.native_session_id,
      title: sent.title,
      tags: sent.tags,
    });
    return 0;
  }
  ctx.stdout.write(
    `${stored.already ? 'Already stored' : 'Stored'} "${printable(sent.title)}" (${sent.provider})` +
      `${stored.id === undefined ? '' : ` as ${stored.id}`}.\n`,
  );
  return 0;
}

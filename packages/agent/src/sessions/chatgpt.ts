/**
 * ChatGPT's data export (`conversations.json`: one JSON array of conversations, up to 256 MiB) read as a stream: a
 * scanner finds where each element of the top-level array ends without parsing the whole file, and each conversation
 * is parsed on its own (at most 64 MiB), so memory holds one conversation at a time. A conversation is a tree of
 * messages (`mapping`: node id -> {message, parent, children}); the thread shown in ChatGPT is the path from the root
 * to `current_node`. Each becomes a session record (provider `chatgpt_export`, the conversation id as its native id).
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { CHATGPT_EXPORT_PROVIDER, RECORD_FORMAT, type SessionRecord } from '@blue-agent/contract/bundle/record.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { isRecord } from '@blue-agent/contract/util/record.js';

export const MAX_EXPORT_BYTES = 256 * 1024 * 1024;
export const MAX_CONVERSATION_BYTES = 64 * 1024 * 1024;
const MAX_MESSAGES = 100_000;
const MAX_DEPTH = 10_000;

export type ExportItem = { index: number; conversation: unknown } | { index: number; error: string };

/** Each element of the file's top-level array, in order: parsed, or why it could not be. Throws for a file that is not
 * one. */
export async function* readConversations(file: string): AsyncGenerator<ExportItem> {
  const info = await stat(file).catch((error: unknown) => {
    throw new BlueError(
      'PATH_NOT_FOUND',
      `${file}: cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
      { file, hint: 'Give the conversations.json of a ChatGPT data export.' },
    );
  });
  if (!info.isFile())
    throw new BlueError('NOT_A_FILE', `${file} is not a file`, {
      file,
      hint: 'Give the conversations.json of a ChatGPT data export.',
    });
  if (info.size > MAX_EXPORT_BYTES) {
    throw new BlueError(
      'FILE_TOO_LARGE',
      `${file} is ${info.size} bytes, over the ${MAX_EXPORT_BYTES / 1024 / 1024} MiB an import reads`,
      { file, hint: 'Split the export, or import the newest conversations only.' },
    );
  }
  const scanner = new ArrayScanner(file);
  for await (const chunk of createReadStream(file, { highWaterMark: 1024 * 1024 })) {
    yield* scanner.feed(chunk as Buffer);
  }
  scanner.end();
}

/** Finds the top-level array's elements in a byte stream: depth outside strings, strings with their escapes. */
class ArrayScanner {
  private started = false;
  private ended = false;
  private depth = 0;
  private inString = false;
  private escaped = false;
  private offset = 0;
  private parts: Buffer[] = [];
  private size = 0;
  private tooLarge = false;
  private index = 0;
  private inElement = false;

  constructor(private readonly file: string) {}

  *feed(chunk: Buffer): Generator<ExportItem> {
    let start = this.inElement ? 0 : -1;
    for (let i = 0; i < chunk.length; i++, this.offset++) {
      const c = chunk[i]!;
      if (!this.started) {
        if (
          c === 0x20 ||
          c === 0x0a ||
          c === 0x0d ||
          c === 0x09 ||
          (this.offset < 3 && (c === 0xef || c === 0xbb || c === 0xbf))
        )
          continue;
        if (c !== 0x5b) throw this.invalid('it does not start with a JSON array');
        this.started = true;
        this.depth = 1;
        continue;
      }
      if (this.ended) {
        if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
        throw this.invalid('there is more after its array');
      }
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === 0x5c) this.escaped = true;
        else if (c === 0x22) this.inString = false;
        continue;
      }
      if (this.depth === 1 && !this.inElement) {
        if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09 || c === 0x2c) continue;
        if (c === 0x5d) {
          this.ended = true;
          this.depth = 0;
          continue;
        }
        if (c !== 0x7b) throw this.invalid(`element ${this.index + 1} of its array is not a conversation (an object)`);
        this.inElement = true;
        start = i;
      }
      if (c === 0x22) this.inString = true;
      else if (c === 0x7b || c === 0x5b) {
        if (++this.depth > MAX_DEPTH)
          throw this.invalid(`conversation ${this.index + 1} nests deeper than ${MAX_DEPTH} levels`);
      } else if (c === 0x7d || c === 0x5d) {
        this.depth--;
        if (this.depth === 1) {
          this.keep(chunk.subarray(start, i + 1));
          yield this.finish();
          start = -1;
        }
      }
    }
    if (this.inElement && start >= 0) this.keep(chunk.subarray(start));
  }

  end(): void {
    if (!this.started) throw this.invalid('it is empty');
    if (!this.ended) throw this.invalid('it ends before its array is closed (a file cut short?)');
  }

  private keep(bytes: Buffer): void {
    this.size += bytes.length;
    if (this.size > MAX_CONVERSATION_BYTES) {
      this.tooLarge = true;
      this.parts = [];
      return;
    }
    if (!this.tooLarge) this.parts.push(Buffer.from(bytes));
  }

  private finish(): ExportItem {
    const index = this.index++;
    const item: ExportItem = this.tooLarge
      ? {
          index,
          error:
            `it is ${this.size} bytes, over the ${MAX_CONVERSATION_BYTES / 1024 / 1024} MiB one conversation ` +
            `may be`,
        }
      : parseElement(index, Buffer.concat(this.parts));
    this.parts = [];
    this.size = 0;
    this.tooLarge = false;
    this.inElement = false;
    return item;
  }

  private invalid(why: string): BlueError {
    return new BlueError('CONFIG_PARSE', `${this.file} is not a ChatGPT conversations.json: ${why}`, {
      file: this.file,
      hint: 'Give the conversations.json from the zip of a ChatGPT data export (Settings, Data controls, Export data).',
    });
  }
}

function parseElement(index: number, bytes: Buffer): ExportItem {
  try {
    return { index, conversation: JSON.parse(bytes.toString('utf8')) as unknown };
  } catch {
    return { index, error: 'it is not valid JSON' };
  }
}

const TEXT_TYPES = new Set(['text', 'multimodal_text', 'code', 'execution_output', 'tether_quote']);
const ROLES = new Set(['user', 'assistant', 'system', 'tool']);

/** A conversation of the export as a session record, or why it cannot be one. */
export function conversationRecord(conversation: unknown): SessionRecord | { error: string } {
  if (!isRecord(conversation)) return { error: 'it is not an object' };
  const id = typeof conversation.conversation_id === 'string' ? conversation.conversation_id : conversation.id;
  if (typeof id !== 'string' || id.trim() === '' || id.length > 512 || /[\u0000-\u001f\u007f]/.test(id))
    return { error: 'it has no conversation id' };
  const mapping = conversation.mapping;
  if (!isRecord(mapping)) return { error: `conversation ${id} has no messages (no mapping)` };
  const messages: NonNullable<SessionRecord['messages']> = [];
  for (const node of thread(mapping, conversation.current_node)) {
    if (messages.length >= MAX_MESSAGES) break;
    const message = isRecord(node) ? node.message : undefined;
    if (!isRecord(message)) continue;
    const role = isRecord(message.author) ? message.author.role : undefined;
    if (typeof role !== 'string' || !ROLES.has(role)) continue;
    if (isRecord(message.metadata) && message.metadata.is_visually_hidden_from_conversation === true) continue;
    const text = messageText(message.content).replace(/\u0000/g, '');
    if (text.trim() === '') continue;
    const at = seconds(message.create_time);
    messages.push({
      role: role as 'user' | 'assistant' | 'system' | 'tool',
      text,
      ...(at === undefined ? {} : { created_at_unix_ms: at }),
    });
  }
  const rawTitle =
    typeof conversation.title === 'string'
      ? conversation.title
          .replace(/[\u0000-\u001f\u007f]+/g, ' ')
          .trim()
          .slice(0, 256)
      : '';
  const created = seconds(conversation.create_time);
  return {
    format: RECORD_FORMAT,
    provider: CHATGPT_EXPORT_PROVIDER,
    provider_session_id: id,
    title: rawTitle === '' ? 'Untitled conversation' : rawTitle,
    tags: [],
    ...(created === undefined ? {} : { created_at_unix_ms: created }),
    messages,
  };
}

/** The nodes from the root to `current` (the thread ChatGPT shows); without one, every node by its time. */
function thread(mapping: Record<string, unknown>, current: unknown): unknown[] {
  if (typeof current === 'string' && Object.hasOwn(mapping, current)) {
    const path: unknown[] = [];
    const seen = new Set<string>();
    let id: unknown = current;
    while (typeof id === 'string' && Object.hasOwn(mapping, id) && !seen.has(id) && path.length <= MAX_MESSAGES) {
      seen.add(id);
      const node = mapping[id];
      path.push(node);
      id = isRecord(node) ? node.parent : undefined;
    }
    return path.reverse();
  }
  const time = (n: unknown) => (isRecord(n) && isRecord(n.message) ? (seconds(n.message.create_time) ?? 0) : 0);
  return Object.values(mapping).sort((a, b) => time(a) - time(b));
}

function messageText(content: unknown): string {
  if (!isRecord(content) || typeof content.content_type !== 'string' || !TEXT_TYPES.has(content.content_type))
    return '';
  if (typeof content.text === 'string') return content.text;
  if (!Array.isArray(content.parts)) return '';
  return content.parts.filter((p): p is string => typeof p === 'string').join('\n');
}

/** Seconds since the epoch (a float in the export) -> milliseconds, when it is a sane time. */
function seconds(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 && value < 1e11
    ? Math.round(value * 1000)
    : undefined;
}

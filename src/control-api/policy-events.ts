/**
 * `GET <control_url>/governance-config/events`: the Control API's Server-Sent Events stream of governance revisions
 * (the current one at once, then each new one; `event: revision`, `data: {"revision":"…"}`, a keepalive comment about
 * every 15 s). One connection is read until it ends; the caller (the run loop) decides when to connect again. A server
 * that does not have the route (404, 405, 501) is `unsupported`: the agent then relies on polling alone.
 * Bounded: a line longer than MAX_LINE_BYTES ends the stream, and silence longer than the idle timeout (no event, no
 * keepalive) is a dead connection.
 */
import { BlueError } from '../errors.js';
import type { ControlClient } from './client.js';
import { contractHeaders } from './contract.js';
import { header, parseRetryAfter, readSome, routeUrl, serverError } from './http.js';
import type { StreamAnswer } from './stream.js';
import { describeNetworkError, safeUrl } from './scrub.js';

export const POLICY_EVENTS_ROUTE = 'governance-config/events';
/** The longest line accepted: an event is a short JSON object. */
export const MAX_LINE_BYTES = 16 * 1024;
/** The longest revision id taken from an event. */
const MAX_REVISION_CHARS = 200;

export interface ServerSentEvent {
  event: string;
  data: string;
  id: string | undefined;
}

/**
 * Incremental text/event-stream parser (the WHATWG rules that matter here): lines end in LF, CRLF or CR; `:` starts a
 * comment; an empty line dispatches the event gathered so far; `data` lines are joined with LF.
 */
export class EventStreamParser {
  private buffer = '';
  private pendingCr = false;
  private event = '';
  private data: string[] = [];
  private id: string | undefined;
  private readonly decoder = new TextDecoder('utf-8');

  /** Feeds bytes; returns the events completed by them. Throws when a line is longer than `maxLineBytes`. */
  push(chunk: Uint8Array, maxLineBytes = MAX_LINE_BYTES): ServerSentEvent[] {
    let text = this.decoder.decode(chunk, { stream: true });
    const events: ServerSentEvent[] = [];
    // A CR that ended the previous chunk already ended its line: an LF right after it belongs to it.
    if (this.pendingCr && text.startsWith('\n')) text = text.slice(1);
    this.pendingCr = false;
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.line(this.buffer + text.slice(start, i), events);
      this.buffer = '';
      if (c === 13) {
        if (i + 1 < text.length) {
          if (text.charCodeAt(i + 1) === 10) i++;
        } else {
          this.pendingCr = true;
        }
      }
      start = i + 1;
    }
    this.buffer += text.slice(start);
    if (Buffer.byteLength(this.buffer) > maxLineBytes) throw new Error(`a line of the event stream is longer than ${maxLineBytes} bytes`);
    return events;
  }

  private line(line: string, events: ServerSentEvent[]): void {
    if (line === '') {
      if (this.data.length > 0) events.push({ event: this.event === '' ? 'message' : this.event, data: this.data.join('\n'), id: this.id });
      this.event = '';
      this.data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
    else if (field === 'id' && !value.includes('\0')) this.id = value;
  }
}

/** The revision a `revision` event names, or undefined for any other event or a body that does not name one. */
export function revisionOf(event: ServerSentEvent): string | undefined {
  if (event.event !== 'revision') return undefined;
  let revision: unknown;
  try {
    revision = (JSON.parse(event.data) as { revision?: unknown } | null)?.revision;
  } catch {
    revision = undefined;
  }
  if (typeof revision === 'number' && Number.isSafeInteger(revision)) revision = String(revision);
  if (typeof revision !== 'string') revision = event.id;
  if (typeof revision !== 'string' || revision === '' || revision.length > MAX_REVISION_CHARS || /[\u0000-\u001f\u007f]/.test(revision)) return undefined;
  return revision;
}

export type StreamEnd =
  /** The stream was open and then ended (the server's lifetime limit, a restart, a dropped connection). */
  | { kind: 'ended'; reason: string; events: number }
  /** This Control API has no event stream: poll. */
  | { kind: 'unsupported'; status: number }
  /** Refused or unreachable before the stream opened; `retryAfterMs` when the server said when to come back. */
  | { kind: 'failed'; reason: string; status?: number; retryAfterMs?: number | undefined }
  /** The caller's signal ended it. */
  | { kind: 'aborted' };

export interface StreamOptions {
  /** Called for each revision the stream names, the current one first. */
  onRevision: (revision: string) => void;
  /** Called once the server has accepted the stream (200, text/event-stream). */
  onOpen?: () => void;
  signal: AbortSignal;
}

/**
 * Reads one event stream until it ends. `client` should have a timeout a few keepalives long: it bounds the wait for
 * the answer and for each chunk after it.
 */
export async function readPolicyEvents(client: ControlClient, options: StreamOptions): Promise<StreamEnd> {
  const url = routeUrl(client.controlUrl, POLICY_EVENTS_ROUTE);
  const where = `GET ${safeUrl(url.href)}`;
  let response: StreamAnswer;
  try {
    response = await client.openStream(url, { headers: { ...contractHeaders(), accept: 'text/event-stream' }, signal: options.signal });
  } catch (error) {
    if (options.signal.aborted) return { kind: 'aborted' };
    if (error instanceof BlueError) return { kind: 'failed', reason: error.message };
    return { kind: 'failed', reason: `${where}: ${describeNetworkError(error, client.timeoutMs)}` };
  }
  const status = response.statusCode;
  if (status === 404 || status === 405 || status === 501) {
    response.body.destroy();
    return { kind: 'unsupported', status };
  }
  const type = header(response.headers, 'content-type') ?? '';
  if (status !== 200 || !/^text\/event-stream\b/i.test(type)) {
    const said = serverError(await readSome(response, 4096));
    const retryAfterMs = parseRetryAfter(header(response.headers, 'retry-after'), Date.now());
    const why = status === 200 ? `answered ${type === '' ? 'without a content type' : printableType(type)}, not an event stream` : `answered HTTP ${status}`;
    return {
      kind: 'failed',
      status,
      reason: client.scrub(`${where} ${why}${said === undefined ? '' : `: ${said.code === undefined ? '' : `[${said.code}] `}${said.message}`}`),
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    };
  }
  options.onOpen?.();
  const parser = new EventStreamParser();
  let events = 0;
  try {
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      for (const event of parser.push(chunk)) {
        const revision = revisionOf(event);
        if (revision === undefined) continue;
        events++;
        options.onRevision(revision);
      }
    }
  } catch (error) {
    response.body.destroy();
    if (options.signal.aborted) return { kind: 'aborted' };
    const why = error instanceof Error && error.message.startsWith('a line of the event stream') ? error.message : describeNetworkError(error, client.timeoutMs);
    return { kind: 'ended', reason: `${where}: ${why}`, events };
  }
  if (options.signal.aborted) return { kind: 'aborted' };
  return { kind: 'ended', reason: `${where}: the server ended the stream`, events };
}

function printableType(type: string): string {
  return type.slice(0, 100).replace(/[^\x20-\x7e]/g, '?');
}

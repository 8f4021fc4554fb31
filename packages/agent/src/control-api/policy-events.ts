/**
 * `GET <control_url>/governance-config/events`: the Control API's Server-Sent Events stream of governance revisions
 * (the current one at once, then each new one; `event: revision`, `data: {"revision":"…"}`, a keepalive comment about
 * every 15 s). One connection is read until it ends; the caller (the run loop) decides when to connect again. A server
 * that does not have the route (404, 405, 501) is `unsupported`: the agent then relies on polling alone.
 * Bounded: a line, an event or the bytes read without an event past STREAM_LIMITS drop the stream (`refused`: the run
 * loop waits its backoff before it connects again), and silence longer than the idle timeout (no event, no keepalive)
 * is a dead connection.
 */
import { BlueError } from '@blue-agent/contract/errors.js';
import type { ControlClient } from './client.js';
import { contractHeaders } from './contract.js';
import { header, parseRetryAfter, readSome, routeUrl, serverError } from './http.js';
import type { StreamAnswer } from './stream.js';
import { describeNetworkError, safeUrl } from './scrub.js';

export const POLICY_EVENTS_ROUTE = 'governance-config/events';
/** The longest revision id taken from an event. */
const MAX_REVISION_CHARS = 200;

/**
 * What one stream may send. An event is a short JSON object; a keepalive is a comment line. Past a bound the stream
 * is dropped: whatever a server sends, the reader keeps at most one line and one event, and never reads on without
 * getting an event.
 */
export interface StreamLimits {
  /** The longest line. */
  lineBytes: number;
  /** The most bytes of one event's fields, from its first line to the blank line that ends it (comments aside). */
  eventBytes: number;
  /** The most field lines of one event. */
  eventLines: number;
  /**
   * The most bytes read since the last event taken (comments, keepalives, blank lines, ignored fields and unwanted
   * events included): a server's keepalives alone take days to reach it, a server that sends anything but events
   * reaches it at once.
   */
  bytesWithoutEvent: number;
}

export const STREAM_LIMITS: StreamLimits = {
  lineBytes: 16 * 1024,
  eventBytes: 32 * 1024,
  eventLines: 64,
  bytesWithoutEvent: 256 * 1024,
};
/** The longest line accepted. */
export const MAX_LINE_BYTES = STREAM_LIMITS.lineBytes;

/** A stream that broke one of its bounds (StreamLimits): it is dropped. */
export class StreamBoundError extends Error {
  /** Wanted events the same chunk completed before the bound was broken. */
  events: ServerSentEvent[] = [];

  constructor(message: string) {
    super(message);
    this.name = 'StreamBoundError';
  }
}

export interface ServerSentEvent {
  event: string;
  data: string;
  id: string | undefined;
}

const BOM = [0xef, 0xbb, 0xbf];

/**
 * Incremental text/event-stream parser (the WHATWG rules that matter here): lines end in LF, CRLF or CR; `:` starts a
 * comment; an empty line dispatches the event gathered so far; `data` lines are joined with LF. It works on bytes, so
 * every bound is counted in bytes, and decodes a line only once it is whole (no line break falls inside a UTF-8
 * sequence). `wanted` says which events count: others are dropped as comments are, and do not reset
 * `bytesWithoutEvent`.
 */
export class EventStreamParser {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private pendingCr = false;
  private atStart = true;
  private event = '';
  private data: string[] = [];
  private dataBytes = 0;
  private id: string | undefined;
  private eventBytes = 0;
  private eventLines = 0;
  private sinceEvent = 0;

  constructor(
    private readonly limits: StreamLimits = STREAM_LIMITS,
    private readonly wanted: (event: ServerSentEvent) => boolean = () => true,
  ) {}

  /** What the parser holds between chunks, in bytes: the unfinished line, the event gathered so far, the last id. */
  get retainedBytes(): number {
    return this.pendingBytes + this.dataBytes + Buffer.byteLength(this.event) + Buffer.byteLength(this.id ?? '');
  }

  /**
   * Feeds bytes; returns the wanted events completed by them. Throws StreamBoundError past a bound (with the events
   * completed before it).
   */
  push(chunk: Uint8Array): ServerSentEvent[] {
    const events: ServerSentEvent[] = [];
    try {
      this.read(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength), events);
    } catch (error) {
      if (error instanceof StreamBoundError) error.events = events;
      throw error;
    }
    return events;
  }

  private read(bytes: Buffer, events: ServerSentEvent[]): void {
    let start = 0;
    // A CR that ended the previous chunk already ended its line: an LF right after it belongs to it.
    if (this.pendingCr && bytes.length > 0) {
      if (bytes[0] === 10) start = 1;
      this.pendingCr = false;
    }
    // This chunk's bytes before `counted` are in `sinceEvent` already (or came before the last wanted event).
    let counted = 0;
    for (let i = start; i < bytes.length; i++) {
      const c = bytes[i];
      if (c !== 10 && c !== 13) continue;
      this.checkLine(this.pendingBytes + i - start);
      let end = i + 1;
      if (c === 13) {
        if (end < bytes.length) {
          if (bytes[end] === 10) end++;
        } else {
          this.pendingCr = true;
        }
      }
      const size = this.pendingBytes + end - start;
      const event = this.line(this.takeLine(bytes.subarray(start, i)), size);
      if (event !== undefined) {
        events.push(event);
        this.sinceEvent = 0;
        counted = end;
      } else {
        this.checkQuiet(end - counted);
      }
      i = end - 1;
      start = end;
    }
    const rest = bytes.subarray(start);
    this.checkLine(this.pendingBytes + rest.length);
    this.checkQuiet(bytes.length - counted);
    this.sinceEvent += bytes.length - counted;
    if (rest.length > 0) {
      // A copy: a slice would keep the whole chunk it came from.
      this.pending.push(Buffer.from(rest));
      this.pendingBytes += rest.length;
    }
  }

  private takeLine(tail: Buffer): string {
    let bytes = this.pending.length === 0 ? tail : Buffer.concat([...this.pending, tail]);
    this.pending = [];
    this.pendingBytes = 0;
    if (this.atStart) {
      this.atStart = false;
      if (bytes.length >= 3 && bytes[0] === BOM[0] && bytes[1] === BOM[1] && bytes[2] === BOM[2])
        bytes = bytes.subarray(3);
    }
    return bytes.toString('utf8');
  }

  private checkLine(bytes: number): void {
    if (bytes > this.limits.lineBytes)
      throw new StreamBoundError(`a line of the event stream is longer than ${this.limits.lineBytes} bytes`);
  }

  private checkQuiet(more: number): void {
    if (this.sinceEvent + more > this.limits.bytesWithoutEvent) {
      throw new StreamBoundError(
        `the event stream sent more than ${this.limits.bytesWithoutEvent} bytes without an event`,
      );
    }
  }

  /** One whole line (`size`: its bytes with the line break); the event it completes, when it completes a wanted one. */
  private line(line: string, size: number): ServerSentEvent | undefined {
    if (line === '') {
      const event =
        this.data.length === 0
          ? undefined
          : { event: this.event === '' ? 'message' : this.event, data: this.data.join('\n'), id: this.id };
      this.event = '';
      this.data = [];
      this.dataBytes = 0;
      this.eventBytes = 0;
      this.eventLines = 0;
      return event !== undefined && this.wanted(event) ? event : undefined;
    }
    if (line.startsWith(':')) return undefined;
    this.eventBytes += size;
    this.eventLines++;
    if (this.eventBytes > this.limits.eventBytes)
      throw new StreamBoundError(`an event of the stream is longer than ${this.limits.eventBytes} bytes`);
    if (this.eventLines > this.limits.eventLines)
      throw new StreamBoundError(`an event of the stream has more than ${this.limits.eventLines} lines`);
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'data') {
      this.data.push(value);
      this.dataBytes += size;
    } else if (field === 'id' && !value.includes('\0')) this.id = value;
    return undefined;
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
  if (
    typeof revision !== 'string' ||
    revision === '' ||
    revision.length > MAX_REVISION_CHARS ||
    /[\u0000-\u001f\u007f]/.test(revision)
  )
    return undefined;
  return revision;
}

export type StreamEnd =
  /** The stream was open and then ended (the server's lifetime limit, a restart, a dropped connection). */
  | { kind: 'ended'; reason: string; events: number }
  /** The stream broke one of its bounds (StreamLimits) and was dropped: a broken or hostile server, or a path that
   * mangles it. */
  | { kind: 'refused'; reason: string; events: number }
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
  /** STREAM_LIMITS unless given. */
  limits?: StreamLimits;
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
    response = await client.openStream(url, {
      headers: { ...contractHeaders(), accept: 'text/event-stream' },
      signal: options.signal,
    });
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
    const why =
      status === 200
        ? `answered ${type === '' ? 'without a content type' : printableType(type)}, not an event stream`
        : `answered HTTP ${status}`;
    return {
      kind: 'failed',
      status,
      reason: client.scrub(
        `${where} ${why}` +
          `${said === undefined ? '' : `: ${said.code === undefined ? '' : `[${said.code}] `}${said.message}`}`,
      ),
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    };
  }
  options.onOpen?.();
  // Only events that name a revision count: anything else is read as a comment is, within the same bounds.
  const parser = new EventStreamParser(options.limits ?? STREAM_LIMITS, (event) => revisionOf(event) !== undefined);
  let events = 0;
  try {
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      for (const event of parser.push(chunk)) {
        events++;
        options.onRevision(revisionOf(event)!);
      }
    }
  } catch (error) {
    response.body.destroy();
    if (options.signal.aborted) return { kind: 'aborted' };
    if (error instanceof StreamBoundError) {
      for (const event of error.events) {
        events++;
        options.onRevision(revisionOf(event)!);
      }
      return { kind: 'refused', reason: client.scrub(`${where}: ${error.message}; dropped it`), events };
    }
    return { kind: 'ended', reason: `${where}: ${describeNetworkError(error, client.timeoutMs)}`, events };
  }
  if (options.signal.aborted) return { kind: 'aborted' };
  return { kind: 'ended', reason: `${where}: the server ended the stream`, events };
}

function printableType(type: string): string {
  return type.slice(0, 100).replace(/[^\x20-\x7e]/g, '?');
}

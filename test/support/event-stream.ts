/**
 * Reads a server-sent event stream for tests, frame by frame as it arrives: each event (its fields) and each comment
 * line, so a test sees keepalives as well as events.
 */
import http from 'node:http';

export interface StreamFrame {
  /** `comment` for a `: …` line; otherwise the event's fields. */
  kind: 'event' | 'comment';
  event?: string;
  id?: string;
  data?: string;
  comment?: string;
}

export interface OpenStream {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body of a non-200 answer. */
  body: string;
  /** The next frame, or undefined once the stream has ended; rejects after `timeoutMs`. */
  next(timeoutMs?: number): Promise<StreamFrame | undefined>;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
}

export function openEventStream(url: string, token: string | undefined): Promise<OpenStream> {
  return new Promise((resolve, reject) => {
    const request = http.get(
      url,
      {
        headers: { accept: 'text/event-stream', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
      },
      (response) => {
        const frames: (StreamFrame | undefined)[] = [];
        const waiters: ((frame: StreamFrame | undefined) => void)[] = [];
        let buffer = '';
        let body = '';
        let endedResolve!: () => void;
        const ended = new Promise<void>((r) => (endedResolve = r));
        const push = (frame: StreamFrame | undefined) => {
          const waiter = waiters.shift();
          if (waiter !== undefined) waiter(frame);
          else frames.push(frame);
        };
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          if (response.statusCode !== 200) {
            body += chunk;
            return;
          }
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const event: StreamFrame = { kind: 'event' };
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) push({ kind: 'comment', comment: line.slice(1).trim() });
              else {
                const colon = line.indexOf(':');
                const field = line.slice(0, colon);
                const value = line.slice(colon + 1).replace(/^ /, '');
                if (field === 'event' || field === 'id' || field === 'data') event[field] = value;
              }
            }
            if (event.event !== undefined || event.data !== undefined) push(event);
          }
        });
        let finished = false;
        const finish = () => {
          if (finished) return;
          finished = true;
          push(undefined);
          endedResolve();
        };
        response.on('end', finish);
        response.on('error', finish);
        response.on('close', finish);
        const open: OpenStream = {
          status: response.statusCode ?? 0,
          headers: response.headers,
          get body() {
            return body;
          },
          next: (timeoutMs = 5000) => {
            if (frames.length > 0) return Promise.resolve(frames.shift());
            return new Promise((resolveFrame, rejectFrame) => {
              const timer = setTimeout(() => {
                waiters.splice(waiters.indexOf(waiter), 1);
                rejectFrame(new Error(`no event within ${timeoutMs} ms`));
              }, timeoutMs);
              const waiter = (frame: StreamFrame | undefined) => {
                clearTimeout(timer);
                resolveFrame(frame);
              };
              waiters.push(waiter);
            });
          },
          ended,
          close: () => request.destroy(),
        };
        if (response.statusCode !== 200) response.once('end', () => resolve(open));
        else resolve(open);
      },
    );
    request.on('error', reject);
  });
}

/** The next frame that is an event (keepalives skipped). */
export async function nextEvent(stream: OpenStream, timeoutMs = 5000): Promise<StreamFrame | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const frame = await stream.next(Math.max(1, deadline - Date.now()));
    if (frame === undefined || frame.kind === 'event') return frame;
  }
}

/**
 * Malformed HTTP never reaches a handler: the `node:http` server answers it here, as JSON, rather than dropping the
 * socket silently (headers too large, a request that did not arrive in time, anything not well-formed).
 */
import type { Socket } from 'node:net';
import type { ServerLog } from '../log.js';

/** The `clientError` handler of a server with these timeouts. */
export function answerBadHttp(
  log: ServerLog,
  headersTimeout: number,
  requestTimeout: number,
): (error: NodeJS.ErrnoException, socket: Socket) => void {
  return (error, socket) => {
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    const answer =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? {
            status: '431 Request Header Fields Too Large',
            code: 'headers_too_large',
            message: 'the request line or headers are too large',
          }
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? {
              status: '408 Request Timeout',
              code: 'request_timeout',
              message:
                `the request did not arrive in time (headers within ${headersTimeout} ms, all of it within ` +
                `${requestTimeout} ms)`,
            }
          : { status: '400 Bad Request', code: 'bad_http', message: 'the request is not well-formed HTTP' };
    log('info', `client error: ${answer.status.split(' ')[0]} ${answer.code}`, {
      event: 'client_error',
      status: Number(answer.status.split(' ')[0]),
      code: answer.code,
    });
    const body = JSON.stringify({ error: answer.message, code: answer.code });
    const status = answer.status;
    socket.end(
      `HTTP/1.1 ${status}\r\ncontent-type: application/json\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  };
}

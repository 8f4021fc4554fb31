/** An error of a browser page, as a page (the API's routes answer JSON). */
import type { FastifyReply } from 'fastify';
import type { HttpError } from '../http.js';
import { sendPage } from './http.js';
import { ErrorPage } from './layout.js';

export function sendErrorPage(reply: FastifyReply, error: HttpError): FastifyReply {
  if (reply.sent || reply.raw.headersSent) {
    reply.raw.destroy();
    return reply.hijack();
  }
  for (const [name, value] of Object.entries(error.headers)) void reply.header(name, value);
  sendPage(reply, error.status, <ErrorPage status={error.status} message={error.message} />);
  return reply;
}

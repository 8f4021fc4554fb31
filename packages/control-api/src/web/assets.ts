/**
 * The dashboard's stylesheet and scripts, built by `npm run build` into dist/assets and served from there: a fixed
 * list of names (nothing else on disk is reachable), read once, with an ETag.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { HttpError, sendEmpty } from '../http.js';
import type { Request, RouteContext } from '../route-context.js';

const TYPES: Record<string, string> = {
  'app.css': 'text/css; charset=utf-8',
  'link.js': 'text/javascript; charset=utf-8',
  'dashboard.js': 'text/javascript; charset=utf-8',
};

const cache = new Map<string, { body: Buffer; etag: string }>();

/** GET /assets/{name}. */
export async function serveAsset(rc: RouteContext, req: Request): Promise<void> {
  const name = req.params[0]!;
  const type = TYPES[name];
  if (type === undefined || rc.assetsDir === undefined)
    throw new HttpError(404, 'not_found', `no asset ${name.slice(0, 64)}`);
  const file = path.join(rc.assetsDir, name);
  let entry = cache.get(file);
  if (entry === undefined) {
    const body = await readFile(file).catch(() => {
      throw new HttpError(404, 'not_found', `the asset ${name} is not built: run npm run build`);
    });
    entry = { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
    cache.set(file, entry);
  }
  const headers = { etag: entry.etag, 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' };
  if (req.raw.headers['if-none-match'] === entry.etag) return sendEmpty(req.reply, 304, headers);
  void req.reply.code(200).headers(headers).type(type).send(entry.body);
}

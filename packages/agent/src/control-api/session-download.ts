/** A session's bundle fetched through the signed URL the Control API hands out for it. */
import type { CapturedSession, DownloadProgress } from './captured-session.js';
import { tooLarge } from './session-errors.js';
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open, unlink } from 'node:fs/promises';
import type { Dispatcher } from 'undici';
import { LIMITS } from '@blue-agent/contract/bundle/limits.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import type { SessionDownload } from '@blue-agent/contract/schema/generated/control-download.js';
import { printable } from '@blue-agent/contract/util/terminal-text.js';
import { type ControlClient, unusableAnswer } from './client.js';
import { header, readSome } from './http.js';
import { describeNetworkError, safeUrl, scrubText } from './scrub.js';
import { loadUndici } from './undici.js';

/** Where a session's bundle is fetched from, with what to send and what to expect. */
interface SignedDownload {
  url: string;
  headers: Record<string, string>;
  size?: number;
  sha256?: string;
}

/**
 * The download answer, checked: an http(s) URL without credentials, GET only, headers safe to send (never an
 * Authorization), and what to expect. When the server names the artifact it signed and it is not the listing's
 * current one (a newer upload landed meanwhile), its own size and digest apply; otherwise what it and the listing
 * both state must agree.
 */
export function signedDownload(answer: SessionDownload, session: CapturedSession, where: string): SignedDownload {
  const bad = (why: string) => unusableAnswer(where, why);
  let url: URL;
  try {
    url = new URL(answer.download_url);
  } catch {
    throw bad('download_url is not a URL');
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username !== '' || url.password !== '')
    throw bad('download_url is not an http(s) URL without credentials');
  const headers: Record<string, string> = {};
  for (const [name, v] of Object.entries(answer.headers ?? {})) {
    if (v === undefined) continue;
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name) || /[\r\n\u0000]/.test(v))
      throw bad(`header ${printable(name).slice(0, 40)} is not usable`);
    // The bearer token never goes to the storage service, whatever the answer says.
    if (name.toLowerCase() !== 'authorization') headers[name] = v;
  }
  const sameArtifact =
    answer.artifact_id === undefined || session.artifact_id === null || answer.artifact_id === session.artifact_id;
  if (
    sameArtifact &&
    answer.size_bytes !== undefined &&
    session.size_bytes !== null &&
    answer.size_bytes !== session.size_bytes
  )
    throw bad('size_bytes differs from the session record');
  if (sameArtifact && answer.sha256 !== undefined && session.sha256 !== null && answer.sha256 !== session.sha256)
    throw bad('sha256 differs from the session record');
  const size = answer.size_bytes ?? (sameArtifact ? (session.size_bytes ?? undefined) : undefined);
  const sha256 = answer.sha256 ?? (sameArtifact ? (session.sha256 ?? undefined) : undefined);
  return {
    url: answer.download_url,
    headers,
    ...(size === undefined ? {} : { size }),
    ...(sha256 === undefined ? {} : { sha256 }),
  };
}

/** The slowest download still waited for. */
export const MIN_BYTES_PER_SECOND = 32 * 1024;

/**
 * Fetches what a signed download URL names into `file` (created new, 0600): streamed, refusing more bytes than
 * expected, the bearer token never sent; anything wrong removes the file.
 */
export async function fetchSigned(
  client: ControlClient,
  signed: SignedDownload,
  id: string,
  file: string,
  onProgress?: (progress: DownloadProgress) => void,
): Promise<{ size: number; sha256: string }> {
  if (signed.size !== undefined && signed.size > LIMITS.bundleBytes) throw tooLarge(id, signed.size);
  const cap = signed.size ?? LIMITS.bundleBytes;
  const get = `GET ${safeUrl(signed.url)}`;
  const budgetMs = client.timeoutMs + Math.ceil((cap / MIN_BYTES_PER_SECOND) * 1000);
  let response: Dispatcher.ResponseData;
  try {
    const undici = await loadUndici();
    response = await undici.request(signed.url, {
      method: 'GET',
      headers: { ...signed.headers, 'user-agent': client.userAgent },
      dispatcher: await client.connectionPool(),
      signal: AbortSignal.timeout(budgetMs),
    });
  } catch (error) {
    throw new BlueError('DOWNLOAD_FAILED', `${get}: ${describeNetworkError(error)}`, {
      hint: 'Check the network and try again.',
    });
  }
  if (response.statusCode !== 200) {
    const text = scrubText(await readSome(response, 2048));
    throw new BlueError(
      'DOWNLOAD_FAILED',
      `${get} answered HTTP ${response.statusCode}${text === '' ? '' : `: ${printable(text).slice(0, 300)}`}`,
      {
        hint:
          response.statusCode === 403 || response.statusCode === 401
            ? 'The signed URL was refused (it may have expired); try again.'
            : 'Try again later.',
      },
    );
  }
  const declared = header(response.headers, 'content-length');
  // An abandoned body reports its abort as an error: expected here, never to surface as an unhandled one.
  response.body.on('error', () => undefined);
  if (
    declared !== undefined &&
    (signed.size === undefined ? Number(declared) > cap : Number(declared) !== signed.size)
  ) {
    response.body.destroy();
    throw new BlueError(
      'DOWNLOAD_FAILED',
      `${get} announced ${printable(declared).slice(0, 20)} bytes; ` +
        `${signed.size === undefined ? `a bundle has at most ${cap}` : `the session's bundle has ${signed.size}`}`,
    );
  }
  const handle = await open(
    file,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o600,
  );
  const hash = createHash('sha256');
  let received = 0;
  let ok = false;
  try {
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      received += chunk.length;
      if (received > cap)
        throw new BlueError(
          'DOWNLOAD_FAILED',
          `${get} sent more than the ${signed.size === undefined ? 'largest bundle' : "bundle's"} ${cap} bytes`,
        );
      hash.update(chunk);
      let offset = 0;
      while (offset < chunk.length) offset += (await handle.write(chunk, offset, chunk.length - offset)).bytesWritten;
      onProgress?.({ received, total: signed.size });
    }
    const sha256 = hash.digest('hex');
    if (
      (signed.size !== undefined && received !== signed.size) ||
      (signed.sha256 !== undefined && sha256 !== signed.sha256)
    ) {
      const recorded = [
        signed.size === undefined ? undefined : `${signed.size} bytes`,
        signed.sha256 === undefined ? undefined : `SHA-256 ${signed.sha256}`,
      ]
        .filter(Boolean)
        .join(' and ');
      throw new BlueError(
        'DOWNLOAD_FAILED',
        `the downloaded bundle has ${received} bytes and SHA-256 ${sha256}; the Control API recorded ${recorded}`,
        {
          hint:
            'The bundle was damaged on the way or in storage: do not restore it. Try again; if it persists, ' +
            'tell the Control API administrator.',
        },
      );
    }
    await handle.sync();
    ok = true;
    return { size: received, sha256 };
  } catch (error) {
    if (error instanceof BlueError) throw error;
    throw new BlueError(
      'DOWNLOAD_FAILED',
      `${get}: ${describeNetworkError(error)} after ${received}` +
        `${signed.size === undefined ? '' : ` of ${signed.size}`} bytes`,
      { hint: 'Try again.' },
    );
  } finally {
    response.body.destroy();
    await handle.close().catch(() => undefined);
    if (!ok) await unlink(file).catch(() => undefined);
  }
}

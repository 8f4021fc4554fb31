/**
 * Where the reference Control API keeps session bundles. The embedded default is a local directory behind URLs the
 * server signs itself; the scale-out one is an S3-compatible bucket with presigned URLs. Either way the client uploads
 * and downloads with exactly the method, URL and headers it is given, and the server never takes the client's word
 * for what was stored: `stat` reads the object's real size and SHA-256.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface SignedRequest {
  method: 'PUT' | 'GET';
  url: string;
  /** Headers the client must send unchanged (for uploads: the length and the checksum the signature binds). */
  headers: Record<string, string>;
  expiresAtUnixMs: number;
}

export interface StoredObject {
  size: number;
  /** Lower-case hex SHA-256 of the stored bytes, computed from the bytes themselves. */
  sha256: string;
}

/**
 * What the Control API says of a key a signed upload URL names: whether bytes put there may be kept. A URL cannot be
 * taken back once given out, but what it was signed for can go (a session deleted, an upload expired or failed).
 */
export interface UploadGate {
  wanted(key: string): Promise<boolean>;
}

export interface BlobStore {
  readonly kind: 'local' | 's3';
  /** A URL that accepts exactly `size` bytes whose SHA-256 is `sha256` at `key`, until `expiresAtUnixMs`. */
  presignUpload(key: string, object: StoredObject, expiresAtUnixMs: number): Promise<SignedRequest>;
  /** A short-lived URL to read `key`. */
  presignDownload(key: string, expiresAtUnixMs: number): Promise<SignedRequest>;
  /**
   * The stored object's real size and digest; undefined when nothing is stored at `key`. With `copyTo`, the bytes
   * hashed are also written to that new file (one read for both: complete checks an upload and indexes its text).
   */
  stat(key: string, options?: { copyTo?: string | undefined }): Promise<StoredObject | undefined>;
  /**
   * Stores whose URLs point at the Control API itself (the local store) answer them here: true when the request was
   * theirs and has been answered. The server offers every request to it before its own routes; an upload is kept only
   * while `uploads` wants its key.
   */
  serve?(request: IncomingMessage, response: ServerResponse, uploads: UploadGate): Promise<boolean>;
  /** Throws when the store cannot be used now (for `GET /ready`): the folder is gone or read-only, the bucket
   * unreachable. */
  check?(): Promise<void>;
  /** Removes the object; no error when it is already gone. */
  delete(key: string): Promise<void>;
  /**
   * Stores that keep objects as files here (the local store): the file of `key`, to read without a copy. Only for
   * objects already verified (an upload URL binds the size and digest, so no other bytes can be put there).
   */
  fileOf?(key: string): string;
  close(): Promise<void>;
}

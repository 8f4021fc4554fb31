/**
 * s3rver, an S3 work-alike, on 127.0.0.1 with one bucket in a temporary folder: the S3 blob store's tests and the
 * Control API's tests with a bucket use it. It checks SigV4 signatures and their expiry, as S3 does.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { S3BlobStoreOptions } from '../../packages/control-api/src/blobs/s3.js';

interface S3rverInstance {
  run(): Promise<{ address: string; port: number }>;
  close(): Promise<void>;
}
const S3rver = createRequire(import.meta.url)('s3rver') as new (options: Record<string, unknown>) => S3rverInstance;

export interface TestBucket {
  /** What createS3BlobStore needs to reach the bucket. */
  options: S3BlobStoreOptions;
  close(): Promise<void>;
}

export async function startS3rver(bucket = 'bundles'): Promise<TestBucket> {
  const dir = await mkdtemp(path.join(tmpdir(), 'blue-s3rver-'));
  const s3 = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory: dir,
    configureBuckets: [{ name: bucket, configs: [] }],
  });
  const { port } = await s3.run();
  return {
    options: {
      endpoint: `http://127.0.0.1:${port}`,
      bucket,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    },
    close: async () => {
      await s3.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

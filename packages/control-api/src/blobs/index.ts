export type { BlobStore, SignedRequest, StoredObject } from './types.js';
export { createLocalBlobStore, type LocalBlobStoreOptions } from './local.js';
// The S3 store is imported from './s3.js' where it is used, so that the AWS SDK loads only then.
export type { S3BlobStoreOptions, S3Config, S3StaticCredentials } from './s3.js';
export { isValidKey, assertValidKey } from './keys.js';

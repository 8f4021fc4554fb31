export type { BlobStore, SignedRequest, StoredObject } from './types.js';
export { createLocalBlobStore, type LocalBlobStoreOptions } from './local.js';
export { createS3BlobStore, s3OptionsFromEnv, type S3BlobStoreOptions } from './s3.js';
export { isValidKey, assertValidKey } from './keys.js';

/**
 * blue-session-bundle-v1: a gzip-compressed tar of `files/NNNN-<name>` entries and a last `manifest.json`, written and
 * read in one streamed pass each, byte-for-byte reproducible, and refused at the first thing a restore must not trust.
 */
export { BUNDLE_CONTENT_TYPE, ARTIFACT_FORMAT, LIMITS, formatBytes, type Limits } from './limits.js';
export { writeBundle, type BundleResult, type WriteBundleOptions } from './create.js';
export type { BundleInput, BundleRedaction, Redacted } from './input.js';
export { verifyBundle, readManifest, validManifest, type VerifyOptions } from './verify.js';
export { extractBundle, type ExtractResult } from './extract.js';
export { MANIFEST_NAME, type BundleFile, type BundleManifest } from './manifest.js';

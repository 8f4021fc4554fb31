/**
 * The caps of a blue-session-bundle-v1. Capture refuses to make a bundle past them and restore refuses to read one,
 * so both sides share these numbers.
 */

export const BUNDLE_CONTENT_TYPE = 'application/vnd.blue.session-bundle+tar+gzip';
export const ARTIFACT_FORMAT = 'blue-session-bundle-v1';

const KiB = 1024;
const MiB = 1024 * KiB;

export const LIMITS = {
  /** The compressed bundle. */
  bundleBytes: 128 * MiB,
  /** One session file. */
  fileBytes: 64 * MiB,
  files: 2048,
  /** All session files together. */
  contentBytes: 128 * MiB,
  /** manifest.json; the schema's own bounds allow about 10 MiB of pretty-printed JSON at 2048 files. */
  manifestBytes: 16 * MiB,
  /**
   * The uncompressed tar: content, manifest, and headers (at most three 512-byte blocks plus padding per entry).
   * Reading stops as soon as a bundle decompresses past it.
   */
  tarBytes: 128 * MiB + 16 * MiB + 16 * MiB,
  /** A file's bundle name, so that `NNNN-<name>` fits in one path component (NAME_MAX 255). */
  nameBytes: 250,
  /** A tar entry's full name. */
  entryNameBytes: 1024,
  nativePathBytes: 4096,
  /** A pax extended header or GNU long name: only names and harmless metadata belong there. */
  extendedHeaderBytes: 64 * KiB,
  /**
   * Decompression-bomb guard: past `ratioFloorBytes` of output, a bundle may not expand more than `maxRatio` times the
   * compressed bytes consumed so far. Session text compresses 5 to 20 times; a bomb, about a thousand times.
   */
  maxRatio: 200,
  ratioFloorBytes: 16 * MiB,
} as const;

export type Limits = { readonly [K in keyof typeof LIMITS]: number };

export function limitsWith(overrides: Partial<Limits> | undefined): Limits {
  return overrides === undefined ? LIMITS : { ...LIMITS, ...overrides };
}

/** `12.3 MiB` for people; exact byte counts stay in JSON output. */
export function formatBytes(bytes: number): string {
  if (bytes < KiB) return `${bytes} B`;
  if (bytes < MiB) return `${(bytes / KiB).toFixed(1)} KiB`;
  if (bytes < 1024 * MiB) return `${(bytes / MiB).toFixed(1)} MiB`;
  return `${(bytes / (1024 * MiB)).toFixed(1)} GiB`;
}

/**
 * `GET /harness-metadata`: the compatibility profiles the server was started with, so an organisation's machines and
 * its tooling can see which harness versions are supported, deprecated or certified, from one place. The document is
 * the profiles' own fields (schemas/profile.schema.json), one entry per harness, in a stable order.
 */
import type { ProfileSet } from '../profiles/index.js';

export const HARNESS_METADATA_FORMAT = 'blue-harness-metadata-v1';

export function harnessMetadataDocument(profiles: ProfileSet): unknown {
  const harnesses = [...profiles.values()]
    .sort((a, b) => a.harness.localeCompare(b.harness))
    .map(({ doc }) => ({
      harness: doc.harness,
      display_name: doc.display_name,
      binary: doc.binary,
      package: doc.package,
      intervals: doc.intervals.map((interval) => ({
        profile: interval.profile,
        introduced: interval.introduced,
        ...(interval.before === undefined ? {} : { before: interval.before }),
        verified_before: interval.verified_before,
        ...(interval.verified_by === undefined ? {} : { verified_by: interval.verified_by }),
        lifecycle: interval.lifecycle,
        operations: interval.operations,
        ...(interval.capture === undefined ? {} : { capture_event: interval.capture.event }),
      })),
    }));
  return { format: HARNESS_METADATA_FORMAT, harnesses };
}

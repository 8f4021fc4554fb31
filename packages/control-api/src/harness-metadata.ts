/**
 * `GET /harness-metadata` in the shape of Blue's harness registry (schemas/harness-metadata.schema.json), generated
 * from the compatibility profiles the server was started with, so an organisation's machines and its tooling can see
 * from one place which harness versions are supported, deprecated or certified. Each profile interval is a
 * generation; what it can do is named with Blue's capability words (hooks for the managed capture hook, session_upload
 * for capture, session_resume for restore). Also: which profiles a presign may name, per harness.
 */
import type { ProfileSet } from '@blue-agent/contract/profiles/index.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';

/** The governance contract version whose registry shape this is. */
export const HARNESS_METADATA_CONTRACT_VERSION = 1;

const OPERATION_CAPABILITIES: Record<string, string> = {
  session_capture: 'session_upload',
  session_resume: 'session_resume',
};

function capabilitiesOf(interval: Interval): string[] {
  const capabilities = interval.capture === undefined ? [] : ['hooks'];
  for (const operation of interval.operations) {
    const capability = OPERATION_CAPABILITIES[operation];
    if (capability !== undefined) capabilities.push(capability);
  }
  return capabilities;
}

/** A hook in a plugin module (a hook format ending in `-plugin`) is a plugin; every other is a native config entry. */
function componentRules(interval: Interval | undefined): {
  agents_require_plugin: boolean;
  hooks_require_plugin: boolean;
  hooks_as_plugin_modules: boolean;
} {
  const plugin = interval?.capture?.hook.format.endsWith('-plugin') === true;
  return { agents_require_plugin: false, hooks_require_plugin: plugin, hooks_as_plugin_modules: plugin };
}

/** An npm package of the profile's `package` (`npm:<name>`), as an install command with a `{version}` placeholder. */
function installCommand(pkg: string | undefined): string {
  if (pkg?.startsWith('npm:') === true) return `npm install -g '${pkg.slice(4)}@{version}'`;
  if (pkg?.startsWith('pypi:') === true) return `pipx install '${pkg.slice(5)}=={version}'`;
  return '';
}

export function harnessMetadataDocument(profiles: ProfileSet): unknown {
  const harnesses = [...profiles.values()]
    .sort((a, b) => a.harness.localeCompare(b.harness))
    .map(({ doc }) => {
      const generations = doc.intervals.map((interval) => ({
        profile: interval.profile,
        introduced: interval.introduced,
        before: interval.before ?? null,
        verified_before: interval.verified_before,
        lifecycle: interval.lifecycle,
        capabilities: capabilitiesOf(interval),
        component_rules: componentRules(interval),
        ...(interval.verified_by === undefined ? {} : { verified_by: interval.verified_by }),
        ...(interval.capture === undefined ? {} : { capture_event: interval.capture.event }),
      }));
      return {
        key: doc.harness,
        aliases: [],
        label: doc.display_name,
        description:
          `${doc.display_name} (${doc.package ?? doc.binary}): session capture and resume through its ` +
          `native hooks and files`,
        binary_names: [doc.binary],
        install_command_template: installCommand(doc.package),
        capabilities: [...new Set(generations.flatMap((g) => g.capabilities))].sort(),
        component_rules: componentRules(doc.intervals.at(-1)),
        generations,
      };
    });
  return { contract_version: HARNESS_METADATA_CONTRACT_VERSION, harnesses };
}

/** The profiles a presign may name, per harness, and whether each resumes sessions. */
export function knownProfiles(profiles: ProfileSet): Map<string, Map<string, { resumes: boolean }>> {
  return new Map(
    [...profiles.values()].map(({ doc }) => [
      doc.harness,
      new Map(doc.intervals.map((i) => [i.profile, { resumes: i.operations.includes('session_resume') }])),
    ]),
  );
}

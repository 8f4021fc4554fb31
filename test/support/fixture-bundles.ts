/**
 * Bundles of the recorded session fixtures (fixtures/sessions/), written with the real bundle writer. Placeholders
 * are replaced with fixed values, so the bundles — and what is exported from them — are the same on every run.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { writeBundle, type BundleResult } from '../../packages/contract/src/bundle/index.js';
import type { SessionFile } from '../../packages/agent/src/harnesses/types.js';
import { HARNESSES } from '../../packages/agent/src/harnesses/names.js';
import type { HarnessName } from '../../packages/contract/src/schema/index.js';
import { fixtureDir, readRecorded, shippedProfiles, substitute } from './recorded-sessions.js';
import { repoRoot } from './context.js';
import { fixturePlaceholders, rigFor, type FixtureRig } from './rigs.js';

export { shippedProfiles } from './recorded-sessions.js';

export const HARNESS_LIST: readonly HarnessName[] = HARNESSES;

/**
 * A harness's golden export of its recorded fixture (`md` or `json`), in its test folder: `export.<format>`, and
 * `export-<version>.<format>` for an older recording (its rig's `olderFixtures`).
 */
export function goldenExport(harness: HarnessName, format: 'md' | 'json', older?: FixtureRig): string {
  return path.join(
    repoRoot,
    'packages',
    'agent',
    'test',
    'harnesses',
    harness,
    'golden',
    older === undefined ? `export.${format}` : `export-${older.version}.${format}`,
  );
}

/** The recording's temporary root, as if the session had run for a user `dev`. */
export const ROOT = '/home/dev';
export const CWD = `${ROOT}/work/proj`;
const VARS: Record<string, string> = {
  ROOT,
  ROOT_REL: ROOT.slice(1),
  ...fixturePlaceholders(CWD),
  OS_RELEASE: '6.8.0',
};
export const CAPTURED_AT = Date.UTC(2026, 10, 30, 16, 40, 0);

/** The shipped profile of a harness's recorded fixture. */
export function fixtureProfile(harness: HarnessName): string {
  return rigFor(harness).fixture.profile;
}

async function content(file: string): Promise<Uint8Array> {
  return new TextEncoder().encode(substitute(await readFile(file, 'utf8'), VARS));
}

/** The files a capture of the harness's recorded fixture (or of `fixture`) holds, with their roles and native paths. */
export async function fixtureFiles(
  harness: HarnessName,
  fixture: FixtureRig = rigFor(harness).fixture,
): Promise<{ sessionId: string; files: SessionFile[] }> {
  const dir = await fixtureDir(harness, fixture.version);
  const recorded = await readRecorded(dir);
  const id = recorded.session_id;
  const files = await fixture.files(dir, recorded, VARS, content);
  return { sessionId: id, files };
}

/** Writes the bundle of a harness's recorded fixture (or of `fixture`, one of its older ones) to `out`. */
export async function fixtureBundle(
  harness: HarnessName,
  out: string,
  extra: { title?: string; summary?: string; files?: SessionFile[] } = {},
  fixture: FixtureRig = rigFor(harness).fixture,
): Promise<BundleResult> {
  const { sessionId, files } = await fixtureFiles(harness, fixture);
  return writeBundle(
    {
      harness,
      profile: fixture.profile,
      sessionId,
      capturedAtUnixMs: CAPTURED_AT,
      cwd: CWD,
      repository: { root: CWD, remote: 'https://example.com/dev/proj.git' },
      ...(extra.title === undefined ? {} : { title: extra.title }),
      ...(extra.summary === undefined ? {} : { summary: extra.summary }),
      files: extra.files ?? files,
    },
    out,
    { profiles: await shippedProfiles() },
  );
}

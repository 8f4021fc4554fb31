// Types for scripts/compat.mjs, so TypeScript tests can share its logic.
export const repoRoot: string;
export const PROFILES_DIR: string;
export const README: string;
export const BEGIN_MARKER: string;
export const END_MARKER: string;
export const FIXTURE_HARNESSES: Record<string, string>;
export interface IntervalLike {
  introduced: string;
  before?: string;
}
export function readProfiles(dir?: string): { file: string; doc: any }[];
export function fixtureVersions(harness: string): string[];
export function inInterval(version: string, interval: IntervalLike): boolean;
export function ceilingAfter(version: string): string;
export function raiseCeiling(
  current: string,
  results: { version: string; passed: boolean }[],
): { ceiling: string; raised: boolean; blockedBy: string | undefined };
export function spliceCeiling(text: string, profile: string, ceiling: string, verifiedBy: string): string;
export function renderCompatTable(options?: { profilesDir?: string; lockFile?: string }): string;
export function withCompatTable(readme: string, table: string): string;
export function updateReadme(options?: { readmeFile?: string; profilesDir?: string; lockFile?: string }): boolean;

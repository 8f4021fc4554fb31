/**
 * Shared by every harness's `planRestore`: the checks that turn a manifest entry into a native target. A bundle is
 * treated as hostile even after verification: every target is rebuilt from a small set of shapes each harness allows
 * for each role, and every segment must be a plain file name.
 */
import path from 'node:path';
import { nativePathProblem } from '@blue-agent/contract/bundle/manifest.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { sessionIdProblem } from '@blue-agent/contract/util/session-id.js';
import { printable } from '@blue-agent/contract/util/terminal-text.js';
import type { ArtifactRole, RestoreInput, RestorePlacement } from '../harnesses/types.js';

export function restoreUnsafe(
  what: string,
  hint = 'This bundle holds something no harness of this profile writes; do not restore it, and report where it ' +
    'came from.',
): BlueError {
  return new BlueError('RESTORE_UNSAFE', what, { hint });
}

/** The session id as a file name: the bundle's own claim, checked again where it becomes part of a path. */
export function checkedSessionId(input: RestoreInput): string {
  const id = input.manifest.native_session_id;
  const problem = sessionIdProblem(id);
  if (problem !== undefined)
    throw restoreUnsafe(
      `the bundle's session id ${JSON.stringify(printable(id).slice(0, 80))} cannot name a file: it ${problem}`,
    );
  return id;
}

/** Splits a native path into plain segments; anything that could climb out, hide or mean two things is refused. */
export function safeSegments(nativePath: string, label: string): string[] {
  const problem = nativePathProblem(nativePath);
  if (problem !== undefined)
    throw restoreUnsafe(`${label}: native_path ${JSON.stringify(nativePath.slice(0, 200))} ${problem}`);
  return nativePath.split('/');
}

/** The manifest entries with their extracted files, each role checked against the interval. */
export function entriesOf(
  input: RestoreInput,
): { role: ArtifactRole; nativePath: string | undefined; from: string; size: number; sha256: string; label: string }[] {
  const { manifest, files, interval } = input;
  if (files.length !== manifest.files.length)
    throw restoreUnsafe(`the bundle lists ${manifest.files.length} files but ${files.length} were extracted`);
  const roles = interval.session?.roles ?? [];
  return manifest.files.map((f, i) => {
    const label = `manifest.json: files[${i}] (${f.path})`;
    if (!roles.some((r) => r.role === f.role))
      throw restoreUnsafe(`${label}: role ${f.role} is not one profile ${interval.profile} restores`);
    return { role: f.role, nativePath: f.native_path, from: files[i]!, size: f.size, sha256: f.sha256, label };
  });
}

export function placement(
  root: string,
  rel: string,
  entry: { role: ArtifactRole; from: string; size: number; sha256: string },
): RestorePlacement {
  return {
    from: entry.from,
    to: path.join(root, ...rel.split('/')),
    rel,
    role: entry.role,
    size: entry.size,
    sha256: entry.sha256,
  };
}

/** Two entries must never land on the same target. */
export function checkDistinct(placements: readonly RestorePlacement[]): void {
  const seen = new Set<string>();
  for (const p of placements) {
    if (seen.has(p.rel)) throw restoreUnsafe(`two files of the bundle would be restored to the same place, ${p.rel}`);
    seen.add(p.rel);
  }
}

/** The profile's session root under the harness home: for restore, the rule capture uses. */
export { sessionRootOf as restoreRoot } from './session-files.js';

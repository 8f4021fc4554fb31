// Types for scripts/certify-plan.mjs.
import type { HarnessLock } from './install-harnesses.mjs';

export interface CertifyOptions {
  updateProfiles: boolean;
  harness: string | undefined;
  version: string | undefined;
  latest: boolean;
  results: string | undefined;
  help: boolean;
}
export interface Target {
  harness: string;
  version: string;
  method: 'cli' | 'fixtures' | 'cross';
  /** A cross-version target's capturing version. */
  from?: string;
  package?: string;
  runtime_deps?: { folder: string; packages: string[] };
  locked: boolean;
}
export const USAGE: string;
export function parseArgs(argv: string[]): CertifyOptions;
export function latestQueries(
  lock: HarnessLock,
  opts: Pick<CertifyOptions, 'harness'>,
): { harness: string; package: string }[];
export type Resumable = (harness: string, version: string) => boolean;
export function resumableIn(docs: readonly unknown[]): Resumable;
/** May version `to` resume a session captured by version `from`? */
export type CanResume = (harness: string, from: string, to: string) => boolean;
export function resumesFrom(docs: readonly unknown[]): CanResume;
export function crossTargets(
  lock: HarnessLock,
  resumable: Resumable,
  canResume?: CanResume,
): { harness: string; from: string; version: string; method: 'cross' }[];
export function targetLabel(target: { version: string; from?: string }): string;
export function plan(
  lock: HarnessLock,
  opts: CertifyOptions,
  latest?: Map<string, string>,
  resumable?: Resumable,
  canResume?: CanResume,
): Target[];

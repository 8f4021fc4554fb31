/**
 * What the ledger keeps about a JSON settings file whose matcher-group hooks the agent wrote (`matcher-hooks.ts`), so
 * that removal can give back the user's original bytes. It holds only bytes the agent itself inserted (whitespace,
 * punctuation, the `hooks` and event keys) and, for a file that held only whitespace, that whitespace: never a copy
 * of the user's content.
 */

import { readAddedSettings, type AddedSetting } from './required-settings.js';

/** A ledger record as the harness contract holds it: a JSON object the planner alone reads. */
export type OwnershipRecord = Readonly<Record<string, unknown>>;

export type Container = 'hooks' | 'event';

// A type alias rather than an interface, so that it is assignable to the ledger's OwnershipRecord.
export type MatcherHooksOwnership = {
  v: 1;
  /** How the file looked before the agent first wrote to it. */
  base: 'existing' | 'missing' | 'empty';
  /** For base `empty`: the whitespace the file held (capped; longer runs come back as an empty file). */
  baseText?: string;
  /** The event array the managed group was added to. */
  event: string;
  /**
   * Containers the agent created: the `hooks` object and/or the event array. Absent when unknown: the agent found
   * its entry already in place with no record of how it got there.
   */
  created?: Container[];
  /**
   * The exact bytes inserted around the managed group when it was added. `node` is the outermost inserted node
   * (the group itself, the event property, or the `hooks` property); `comma` says where its separating comma went.
   */
  splice?: { node: 'group' | 'event' | 'hooks'; before: string; after: string; comma: 'joined' | 'separate' | 'none' };
  /** Settings the harness needed to run hooks that the agent added with the hook (`required-settings.ts`). */
  settings?: AddedSetting[];
};

export const BASE_TEXT_LIMIT = 4096;

const CONTAINERS: readonly Container[] = ['hooks', 'event'];

/** Reads a ledger record defensively (the ledger is a file on disk): anything unexpected counts as no record. */
export function readOwnership(owned: OwnershipRecord | undefined): MatcherHooksOwnership | undefined {
  if (owned === undefined || owned === null || typeof owned !== 'object') return undefined;
  const r = owned as Record<string, unknown>;
  if (r.v !== 1 || typeof r.event !== 'string') return undefined;
  if (r.base !== 'existing' && r.base !== 'missing' && r.base !== 'empty') return undefined;
  if (r.baseText !== undefined && (typeof r.baseText !== 'string' || r.baseText.trim() !== '')) return undefined;
  if (
    r.created !== undefined &&
    (!Array.isArray(r.created) || !r.created.every((c) => CONTAINERS.includes(c as Container)))
  ) {
    return undefined;
  }
  let splice: MatcherHooksOwnership['splice'];
  if (r.splice !== undefined) {
    const s = r.splice as Record<string, unknown> | null;
    if (
      s === null ||
      typeof s !== 'object' ||
      (s.node !== 'group' && s.node !== 'event' && s.node !== 'hooks') ||
      typeof s.before !== 'string' ||
      typeof s.after !== 'string' ||
      (s.comma !== 'joined' && s.comma !== 'separate' && s.comma !== 'none')
    ) {
      return undefined;
    }
    splice = { node: s.node, before: s.before, after: s.after, comma: s.comma };
  }
  let settings: AddedSetting[] | undefined;
  if (r.settings !== undefined) {
    settings = readAddedSettings(r.settings);
    if (settings === undefined) return undefined;
  }
  return makeOwnership(
    r.base,
    r.baseText as string | undefined,
    r.event,
    r.created as Container[] | undefined,
    splice,
    settings,
  );
}

/** Builds a record with a fixed key order, so equal records serialise identically. */
export function makeOwnership(
  base: MatcherHooksOwnership['base'],
  baseText: string | undefined,
  event: string,
  created: readonly Container[] | undefined,
  splice: MatcherHooksOwnership['splice'],
  settings?: readonly AddedSetting[],
): MatcherHooksOwnership {
  return {
    v: 1,
    base,
    ...(base === 'empty' && baseText !== undefined ? { baseText } : {}),
    event,
    ...(created === undefined ? {} : { created: CONTAINERS.filter((c) => created.includes(c)) }),
    ...(splice === undefined ? {} : { splice }),
    ...(settings === undefined || settings.length === 0
      ? {}
      : {
          settings: settings.map((a) => ({
            key: [...a.key],
            value: a.value,
            top: a.top,
            before: a.before,
            after: a.after,
            comma: a.comma,
          })),
        }),
  };
}

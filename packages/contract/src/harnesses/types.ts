/**
 * What a harness's transcript reader is (./<name>/transcript.ts, listed in ./index.ts): its native files of a verified
 * bundle in, the harness-neutral conversation of ../bundle/transcript.ts out, and where one record keeps the user's
 * turn (for titles). Both the agent (exports, titles) and the Control API (search, the transcript viewer) read
 * bundles with it.
 */
import type { Transcript } from '../bundle/transcript.js';

/** One file of a verified bundle, as a transcript reader sees it. */
export interface TranscriptSource {
  role: string;
  /** The manifest's `path` (`files/0001-transcript.jsonl`). */
  path: string;
  native_path?: string;
  bytes: Uint8Array;
}

/** What one transcript record holds of the user's turn, as a harness's reader finds it. */
export interface UserTurn {
  texts: string[];
  /** A tool result rides in this user entry: it is the harness speaking, not the user. */
  toolResult: boolean;
}

/** How a harness finds the user's turn in one record of its transcript; undefined when the record holds none. */
export type UserTurnOf = (record: unknown) => UserTurn | undefined;

/** A harness's transcript reader (built on ../harness-kit/transcript.ts): its native files in, the conversation out. */
export interface TranscriptReader {
  /** The files the reader wants (only these are read from the bundle). */
  wants(file: { role: string; path: string; native_path?: string }): boolean;
  read(files: readonly TranscriptSource[], sessionId: string): Transcript;
  /** The user's turn one record of the harness's transcript holds, for the title and preview. */
  userTurn: UserTurnOf;
}

/**
 * The transcript readers, one line per harness: how a bundle's conversation is read, whichever side reads it (the
 * agent's exports, the Control API's search and transcript viewer). Each harness's reader is in its folder here
 * (./<name>/transcript.ts, pure over bytes); the agent's adapter for the harness refers to the same reader. Keyed by
 * the generated HarnessName, so a profile without a reader, or a reader without a profile, does not compile.
 */
import type { Transcript } from '../bundle/transcript.js';
import { emptyTranscript } from '../harness-kit/transcript.js';
import type { BundleManifest, HarnessName } from '../schema/index.js';
import type { TranscriptReader, TranscriptSource } from './types.js';
import { claudeTranscriptReader } from './claude/transcript.js';
import { codexTranscriptReader } from './codex/transcript.js';
import { geminiTranscriptReader } from './gemini/transcript.js';
import { kimiTranscriptReader } from './kimi/transcript.js';
import { opencodeTranscriptReader } from './opencode/transcript.js';
import { qwenTranscriptReader } from './qwen/transcript.js';

export const TRANSCRIPT_READERS: Readonly<Record<HarnessName, TranscriptReader>> = {
  claude: claudeTranscriptReader,
  codex: codexTranscriptReader,
  gemini: geminiTranscriptReader,
  kimi: kimiTranscriptReader,
  opencode: opencodeTranscriptReader,
  qwen: qwenTranscriptReader,
};

/** The transcript reader of the harness a manifest names, or undefined for one this version does not know. */
export function transcriptReaderFor(harness: string): TranscriptReader | undefined {
  return Object.hasOwn(TRANSCRIPT_READERS, harness) ? TRANSCRIPT_READERS[harness as HarnessName] : undefined;
}

/** Which of the manifest's files the harness's reader needs (indexes into `manifest.files`). */
export function wantedFiles(manifest: BundleManifest): number[] {
  const reader = transcriptReaderFor(manifest.harness);
  if (reader === undefined) return [];
  return manifest.files.flatMap((f, i) =>
    reader.wants({ role: f.role, path: f.path, ...(f.native_path === undefined ? {} : { native_path: f.native_path }) })
      ? [i]
      : [],
  );
}

/** Reads the conversation from the wanted files' bytes (never throws on their content). */
export function readTranscript(manifest: BundleManifest, files: readonly TranscriptSource[]): Transcript {
  const reader = transcriptReaderFor(manifest.harness);
  return reader === undefined ? emptyTranscript() : reader.read(files, manifest.native_session_id);
}

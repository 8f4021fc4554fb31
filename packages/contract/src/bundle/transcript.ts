/**
 * A conversation as blue-agent reads and shows it, whatever wrote it: a harness's transcript (each harness's reader
 * turns its native files into these turns) or a session record (./record.ts). Both sides of the contract render it.
 */
import { CONTROL_CHARACTERS } from '../util/terminal-text.js';

export type TurnRole = 'user' | 'assistant' | 'tool';

export interface TranscriptTurn {
  role: TurnRole;
  /** The readable text, control characters removed (new lines and tabs kept). */
  text: string;
  /** Tool calls the turn made, one short line each (`Bash: seq 1 9000`). */
  tools?: string[];
  /** For a tool turn: the tool's name, when the transcript says it. */
  name?: string;
  /** ISO 8601, when the transcript records a time. */
  at?: string;
  /** The tool reported an error. */
  error?: boolean;
}

export interface Transcript {
  turns: TranscriptTurn[];
  /** Records that could not be read (not JSON, unexpected shape) and were skipped. */
  skipped: number;
  /** More turns than the cap: the rest were left out. */
  truncated: boolean;
  /** Further conversations inside the session (subagents), each with a title. */
  sections?: { title: string; transcript: Transcript }[];
}

const ANSI = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]/g;
/** The control and bidirectional characters every shown text is held to (util/terminal-text.ts), tabs and line feeds
 * kept. */
const CONTROL = new RegExp(`(?![\\t\\n])[${CONTROL_CHARACTERS}]`, 'g');

/** Terminal escape sequences and control characters removed; new lines normalised, tabs kept. */
export function cleanText(text: string): string {
  return text.replace(/\r\n?/g, '\n').replace(ANSI, '').replace(CONTROL, '');
}

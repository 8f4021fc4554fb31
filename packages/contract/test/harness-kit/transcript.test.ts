/**
 * The subagent sections every transcript reader shares: one section per subagent file (of a role, when asked), in
 * native-path order, titled with the description its meta file gives; at most MAX_SUBAGENT_SECTIONS, then truncated;
 * a meta file that is not JSON counted as skipped.
 */
import { describe, expect, it } from 'vitest';
import {
  emptyTranscript,
  MAX_SUBAGENT_SECTIONS,
  subagentDescriptions,
  withSubagentSections,
  type Transcript,
  type TranscriptSource,
} from '../../src/harness-kit/transcript.js';

const enc = (text: string) => new TextEncoder().encode(text);
const file = (native_path: string, text = '', role = 'session_companion'): TranscriptSource => ({
  role,
  path: `files/${native_path}`,
  native_path,
  bytes: enc(text),
});
const read = (bytes: Uint8Array): Transcript => ({
  turns: [{ role: 'user', text: new TextDecoder().decode(bytes) }],
  skipped: 0,
  truncated: false,
});
const PATTERN = /(?:^|\/)sub\/([a-z0-9-]+)\.jsonl$/;

describe('subagent sections', () => {
  it('orders sections by native path, titles them with their descriptions, and keeps the main transcript', () => {
    const main = { ...emptyTranscript(), turns: [{ role: 'user' as const, text: 'main' }] };
    const files = [
      file('s/sub/b.jsonl', 'B'),
      file('s/sub/a.jsonl', 'A'),
      file('s/sub/a.meta.json', '{"description": "Reads the tests"}'),
      file('s/sub/b.meta.json', 'not json'),
      file('s/other.jsonl', 'X'),
    ];
    const descriptions = subagentDescriptions(main, files, /(?:^|\/)sub\/([a-z0-9-]+)\.meta\.json$/);
    expect(main.skipped).toBe(1);
    const t = withSubagentSections(main, files, { pattern: PATTERN, read, descriptions });
    expect(t.turns).toEqual(main.turns);
    expect(t.sections?.map((s) => [s.title, s.transcript.turns[0]!.text])).toEqual([
      ['Subagent a: Reads the tests', 'A'],
      ['Subagent b', 'B'],
    ]);
  });

  it('takes only files of the role asked for, and gives the main transcript back as it was when there is none', () => {
    const main = emptyTranscript();
    expect(
      withSubagentSections(main, [file('sub/a.jsonl', 'A', 'primary_transcript')], {
        pattern: PATTERN,
        read,
        role: 'session_companion',
      }),
    ).toBe(main);
  });

  it(`renders at most ${MAX_SUBAGENT_SECTIONS} and says the rest was left out`, () => {
    const files = Array.from({ length: MAX_SUBAGENT_SECTIONS + 1 }, (_, i) =>
      file(`sub/a${String(i).padStart(3, '0')}.jsonl`, String(i)),
    );
    const all = withSubagentSections(emptyTranscript(), files.slice(0, MAX_SUBAGENT_SECTIONS), {
      pattern: PATTERN,
      read,
    });
    expect([all.sections?.length, all.truncated]).toEqual([MAX_SUBAGENT_SECTIONS, false]);
    const over = withSubagentSections(emptyTranscript(), files, { pattern: PATTERN, read });
    expect([over.sections?.length, over.truncated, over.sections?.at(-1)?.title]).toEqual([
      MAX_SUBAGENT_SECTIONS,
      true,
      `Subagent a${String(MAX_SUBAGENT_SECTIONS - 1).padStart(3, '0')}`,
    ]);
  });
});

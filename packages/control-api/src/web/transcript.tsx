/**
 * The transcript viewer: a session's conversation as people read it — user and assistant turns, tool calls and tool
 * output collapsed, long text cut with the rest behind "Show more" — with secrets masked as titles are. Every byte of
 * it is text to Preact (escaped); nothing from a transcript is ever markup, a link or a script.
 */
import type { ComponentChildren } from 'preact';
import { maskSecrets } from '@blue-agent/contract/util/secrets.js';
import type { Conversation } from '../search-text.js';

/**
 * Text shown before "Show more" (characters, and lines: a screen of short lines is as tall as one of long ones; tool
 * output, opened, shows fewer); a turn's text at most; tool output and a tool call at most (then cut).
 */
const SHOWN_CHARS = 1_500;
const SHOWN_LINES = 30;
const TOOL_SHOWN_LINES = 12;
const TURN_CHARS = 20_000;
const TOOL_CHARS = 4_000;
const TOOL_CALL_CHARS = 300;
/** Turns, and characters of text, a page holds at most (a page must stay a page; the bundle has the rest). */
const MAX_TURNS = 2_000;
const MAX_PAGE_CHARS = 2_000_000;

/**
 * The conversation cut to what a page shows: at most MAX_TURNS turns and MAX_PAGE_CHARS characters in all, each
 * turn's text, tool output and tool call cut to its own bound (saying how much was left out). Pure; what the viewer
 * renders and what the server keeps in memory between views.
 */
export function bounded(transcript: Conversation, budget = { turns: MAX_TURNS, chars: MAX_PAGE_CHARS }): Conversation {
  const turns: Conversation['turns'] = [];
  for (const turn of transcript.turns) {
    if (budget.turns <= 0 || budget.chars <= 0) break;
    const text = cut(turn.text, turn.role === 'tool' ? TOOL_CHARS : TURN_CHARS);
    budget.turns--;
    budget.chars -= text.length;
    turns.push({
      ...turn,
      text,
      ...(turn.tools === undefined ? {} : { tools: turn.tools.slice(0, 100).map((t) => cut(t, TOOL_CALL_CHARS)) }),
    });
  }
  const sections: NonNullable<Conversation['sections']> = [];
  for (const section of transcript.sections ?? []) {
    if (budget.turns <= 0 || budget.chars <= 0) break;
    sections.push({ title: cut(section.title, 200), transcript: bounded(section.transcript, budget) });
  }
  const { sections: _all, ...rest } = transcript;
  return {
    ...rest,
    turns,
    truncated:
      transcript.truncated ||
      turns.length < transcript.turns.length ||
      sections.length < (transcript.sections?.length ?? 0),
    ...(sections.length === 0 ? {} : { sections }),
  };
}

const ROLE_NAMES: Record<string, string> = { user: 'User', assistant: 'Assistant', tool: 'Tool', system: 'System' };

/** A conversation as `bounded` left it. */
export function TranscriptView({ transcript }: { transcript: Conversation }) {
  return (
    <div class="transcript">
      <Turns transcript={transcript} />
      {transcript.truncated ? (
        <p class="muted">The transcript is longer: its first turns are shown. Download the session for all of it.</p>
      ) : null}
    </div>
  );
}

function Turns({ transcript }: { transcript: Conversation }) {
  const turns = transcript.turns;
  return (
    <>
      {turns.map((turn, i) =>
        turn.role === 'tool' ? (
          <details class="turn tool" key={i}>
            <summary>
              Tool output{turn.name === undefined ? '' : ` (${turn.name})`}
              {turn.error === true ? ' — error' : ''}
            </summary>
            <ToolOutput text={maskSecrets(turn.text)} />
          </details>
        ) : (
          <section class={`turn ${turn.role}`} key={i} aria-label={`${ROLE_NAMES[turn.role] ?? turn.role} turn`}>
            <h3 class="role">
              {ROLE_NAMES[turn.role] ?? turn.role}
              {turn.at === undefined ? null : <span class="muted"> · {turn.at.replace('T', ' ').slice(0, 19)}</span>}
            </h3>
            <LongText text={maskSecrets(turn.text)} />
            {turn.tools === undefined || turn.tools.length === 0 ? null : (
              <details class="tools">
                <summary>
                  {turn.tools.length} tool call{turn.tools.length === 1 ? '' : 's'}
                </summary>
                <ul>
                  {turn.tools.map((tool, j) => (
                    <li key={j}>
                      <code>{maskSecrets(tool)}</code>
                    </li>
                  ))}
                </ul>
              </details>
            )}
          </section>
        ),
      )}
      {(transcript.sections ?? []).map((section, i) => (
        <details class="section" key={`s${i}`}>
          <summary>{section.title}</summary>
          <Turns transcript={section.transcript} />
        </details>
      ))}
    </>
  );
}

/** Text with the part past SHOWN_CHARS or SHOWN_LINES behind a "Show more" disclosure (no script needed). */
function LongText({ text }: { text: string }): ComponentChildren {
  const at = shownUpTo(text, SHOWN_CHARS, SHOWN_LINES);
  if (at === undefined) return <div class="text">{text}</div>;
  return (
    <div class="text">
      {text.slice(0, at)}
      <details class="more">
        <summary>Show more ({howMuch(text.slice(at))})</summary>
        {text.slice(at)}
      </details>
    </div>
  );
}

/** Tool output as it came (preformatted), its first lines shown and the rest behind "Show more". */
function ToolOutput({ text }: { text: string }): ComponentChildren {
  const at = shownUpTo(text, SHOWN_CHARS, TOOL_SHOWN_LINES);
  if (at === undefined) return <pre>{text}</pre>;
  return (
    <>
      <pre>{text.slice(0, at)}</pre>
      <details class="more output">
        <summary>Show more ({howMuch(text.slice(at))})</summary>
        <pre>{text.slice(at)}</pre>
      </details>
    </>
  );
}

/**
 * Where the shown part of `text` ends: after its `lines`-th line, or near `chars` characters (after a word where there
 * is one), whichever comes first; undefined when all of it is shown.
 */
function shownUpTo(text: string, chars: number, lines: number): number | undefined {
  let at: number | undefined;
  if (text.length > chars) {
    const space = text.lastIndexOf(' ', chars);
    at = space > chars - 200 ? space + 1 : boundary(text, chars);
  }
  let end = -1;
  for (let line = 0; line < lines && end < text.length; line++) {
    end = text.indexOf('\n', end + 1);
    if (end === -1) break;
  }
  if (end !== -1 && end + 1 < text.length && (at === undefined || end + 1 < at)) at = end + 1;
  return at;
}

/** What "Show more" holds: lines when there are several, else characters. */
function howMuch(rest: string): string {
  const lines = rest.replace(/\n$/, '').split('\n').length;
  return lines > 1 ? `${lines.toLocaleString('en')} more lines` : `${rest.length.toLocaleString('en')} more characters`;
}

function cut(text: string, max: number): string {
  return text.length <= max
    ? text
    : `${text.slice(0, boundary(text, max))}\n… (${(text.length - max).toLocaleString('en')} more characters not ` +
        `shown)`;
}

/** `max`, moved back off the middle of a surrogate pair. */
function boundary(text: string, max: number): number {
  const code = text.charCodeAt(max - 1);
  return code >= 0xd800 && code <= 0xdbff ? max - 1 : max;
}

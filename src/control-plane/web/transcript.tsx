/**
 * The transcript viewer: a session's conversation as people read it — user and assistant turns, tool calls and tool
 * output collapsed, long text cut with the rest behind "Show more" — with secrets masked as titles are. Every byte of
 * it is text to Preact (escaped); nothing from a transcript is ever markup, a link or a script.
 */
import type { ComponentChildren } from 'preact';
import { maskSecrets } from '../../harness-kit/secrets.js';
import type { Conversation } from '../search-text.js';

/** Text shown before "Show more"; tool output shown at most (then cut). */
const SHOWN_CHARS = 1_500;
const TOOL_CHARS = 4_000;
/** Turns rendered at most (a page must stay a page). */
const MAX_TURNS = 2_000;

const ROLE_NAMES: Record<string, string> = { user: 'User', assistant: 'Assistant', tool: 'Tool', system: 'System' };

export function TranscriptView({ transcript }: { transcript: Conversation }) {
  const budget = { turns: MAX_TURNS };
  return (
    <div class="transcript">
      <Turns transcript={transcript} budget={budget} />
      {budget.turns <= 0 || transcript.truncated ? <p class="muted">The transcript is longer: its first turns are shown.</p> : null}
    </div>
  );
}

function Turns({ transcript, budget }: { transcript: Conversation; budget: { turns: number } }) {
  const turns = transcript.turns.slice(0, Math.max(0, budget.turns));
  budget.turns -= turns.length;
  return (
    <>
      {turns.map((turn, i) =>
        turn.role === 'tool' ? (
          <details class="turn tool" key={i}>
            <summary>
              Tool output{turn.name === undefined ? '' : ` (${turn.name})`}
              {turn.error === true ? ' — error' : ''}
            </summary>
            <pre>{cut(maskSecrets(turn.text), TOOL_CHARS)}</pre>
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
      {(transcript.sections ?? []).map((section, i) =>
        budget.turns <= 0 ? null : (
          <details class="section" key={`s${i}`}>
            <summary>{section.title}</summary>
            <Turns transcript={section.transcript} budget={budget} />
          </details>
        ),
      )}
    </>
  );
}

/** Text with the part past SHOWN_CHARS behind a "Show more" disclosure (no script needed). */
function LongText({ text }: { text: string }): ComponentChildren {
  if (text.length <= SHOWN_CHARS) return <div class="text">{text}</div>;
  // Cut after a word where there is one near the limit.
  const space = text.lastIndexOf(' ', SHOWN_CHARS);
  const at = space > SHOWN_CHARS - 200 ? space + 1 : boundary(text, SHOWN_CHARS);
  return (
    <div class="text">
      {text.slice(0, at)}
      <details class="more">
        <summary>Show more ({(text.length - at).toLocaleString('en')} more characters)</summary>
        {text.slice(at)}
      </details>
    </div>
  );
}

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, boundary(text, max))}\n… (${(text.length - max).toLocaleString('en')} more characters not shown)`;
}

/** `max`, moved back off the middle of a surrogate pair. */
function boundary(text: string, max: number): number {
  const code = text.charCodeAt(max - 1);
  return code >= 0xd800 && code <= 0xdbff ? max - 1 : max;
}

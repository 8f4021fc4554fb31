/**
 * The transcript viewer's bounds: however large a session, a page holds at most so many turns and characters, each
 * turn, tool output and tool call cut to its own bound, saying that it was cut; and it renders as text only.
 */
import { renderToStaticMarkup } from 'preact-render-to-string';
import { describe, expect, it } from 'vitest';
import type { Conversation } from '../../src/search-text.js';
import { bounded, TranscriptView } from '../../src/web/transcript.js';

const turn = (role: 'user' | 'assistant' | 'tool', text: string, tools?: string[]) => ({
  role,
  text,
  ...(tools === undefined ? {} : { tools }),
});
const conversation = (turns: Conversation['turns'], sections?: Conversation['sections']): Conversation => ({
  turns,
  skipped: 0,
  truncated: false,
  ...(sections === undefined ? {} : { sections }),
});

describe('bounded', () => {
  it('cuts a turn to 20,000 characters, tool output to 4,000 and a tool call to 300, saying how much was cut', () => {
    const out = bounded(
      conversation([turn('assistant', 'a'.repeat(50_000), ['x'.repeat(1_000)]), turn('tool', 'o'.repeat(10_000))]),
    );
    expect(out.turns[0]!.text).toMatch(/^a{20000}\n… \(30,000 more characters not shown\)$/);
    expect(out.turns[0]!.tools![0]).toMatch(/^x{300}\n… \(700 more characters not shown\)$/);
    expect(out.turns[1]!.text).toMatch(/^o{4000}\n… \(6,000 more characters not shown\)$/);
    expect(out.truncated).toBe(false);
  });

  it('keeps at most 2,000 turns and 2,000,000 characters, subagents included, and says it is longer', () => {
    const many = bounded(conversation(Array.from({ length: 2_500 }, (_, i) => turn('user', `turn ${i}`))));
    expect([many.turns.length, many.truncated]).toEqual([2_000, true]);
    const big = bounded(
      conversation(
        Array.from({ length: 200 }, () => turn('assistant', 'b'.repeat(20_000))),
        [{ title: 'agent', transcript: conversation([turn('user', 'never shown')]) }],
      ),
    );
    expect(big.turns.length).toBe(100);
    expect(big.sections).toBeUndefined();
    expect(big.truncated).toBe(true);
    const small = bounded(
      conversation([turn('user', 'hi')], [{ title: 'agent', transcript: conversation([turn('user', 'sub')]) }]),
    );
    expect(small.sections?.[0]?.transcript.turns[0]?.text).toBe('sub');
  });

  it('shows long tool output, once opened, by its first lines, and the rest behind "Show more"; long text too', () => {
    const output = Array.from({ length: 40 }, (_, i) => `line ${i + 1}`).join('\n');
    const prose = Array.from({ length: 50 }, (_, i) => `para ${i + 1}`).join('\n');
    const html = renderToStaticMarkup(
      TranscriptView({
        transcript: bounded(
          conversation([turn('tool', output), turn('assistant', prose), turn('tool', 'short\noutput')]),
        ),
      }),
    );
    expect(html).toContain(
      `<pre>${Array.from({ length: 12 }, (_, i) => `line ${i + 1}\n`).join('')}</pre><details class="more ` +
        `output"><summary>Show more (28 more lines)</summary><pre>line 13\n`,
    );
    expect(html).toContain(`para 30\n<details class="more"><summary>Show more (20 more lines)</summary>para 31\n`);
    expect(html).toContain('<pre>short\noutput</pre></details>');
  });

  it('renders everything as text', () => {
    const html = renderToStaticMarkup(
      TranscriptView({
        transcript: bounded(conversation([turn('user', '<img src=x onerror=alert(1)>', ['<b>tool</b>'])])),
      }),
    );
    expect(html).toContain('&lt;img src=x onerror=alert(1)>');
    expect(html).toContain('<code>&lt;b>tool&lt;/b></code>');
    expect(html).not.toContain('<img');
  });
});

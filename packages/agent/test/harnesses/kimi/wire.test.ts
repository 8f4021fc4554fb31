/**
 * Kimi Code's wire logs relocated: the workspace of each `runtime.set_binding` line set to the destination's key, and
 * every other byte (other lines, other keys, line breaks, a last line without one) as it was.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { withWorkspace } from '../../../src/harnesses/kimi/wire.js';

const binding = (ws: string, extra = '') =>
  `{"type":"runtime.set_binding","workspaceId":${JSON.stringify(ws)},` +
  `"runtimeId":"local","agentId":"main"${extra},"time":1}`;

describe('Kimi Code wire: runtime bindings', () => {
  it('rewrites the workspace of every binding line and nothing else', () => {
    const text =
      `{"type":"metadata","protocol_version":"1.5"}\n${binding('wd_proj_aaaaaaaaaaaa')}\r\n` +
      '{"type":"turn.prompt","input":[{"type":"text","text":"say ' +
      `\\"runtime.set_binding\\" workspaceId"}]}\n${binding('wd_proj_aaaaaaaaaaaa', ',"x":[1, 2]')}`;
    const out = withWorkspace(Buffer.from(text), 'wd_dest_bbbbbbbbbbbb').toString();
    expect(out).toBe(text.replaceAll('wd_proj_aaaaaaaaaaaa', 'wd_dest_bbbbbbbbbbbb'));
  });

  it('returns the same bytes when there is nothing to change', () => {
    const none = Buffer.from('{"type":"metadata"}\n{"type":"turn.prompt"}\n');
    expect(withWorkspace(none, 'wd_x_000000000000')).toBe(none);
    const already = Buffer.from(`${binding('wd_x_000000000000')}\n`);
    expect(withWorkspace(already, 'wd_x_000000000000')).toBe(already);
  });

  it('leaves lines it cannot read for sure alone: not JSON, no type, two workspaces, a non-text workspace', () => {
    const odd = [
      '{"type":"runtime.set_binding","workspaceId":"wd_a_1"',
      '{"kind":"runtime.set_binding","workspaceId":"wd_a_1"}',
      '{"type":"runtime.set_binding","workspaceId":"wd_a_1","workspaceId":"wd_a_2"}',
      '{"type":"runtime.set_binding","workspaceId":7}',
      '{"type":"context.append_message","note":"runtime.set_binding","workspaceId":"wd_a_1"}',
      '["runtime.set_binding"]',
    ].join('\n');
    expect(withWorkspace(Buffer.from(odd), 'wd_b_2').toString()).toBe(odd);
  });

  it('keeps the bytes of every other line, whatever they are', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.string().filter((l) => !l.includes('\n')),
            fc.constant(binding('wd_p_111111111111')),
          ),
          { minLength: 1, maxLength: 8 },
        ),
        (lines) => {
          const text = lines.join('\n');
          const out = withWorkspace(Buffer.from(text), 'wd_q_222222222222').toString().split('\n');
          expect(out).toHaveLength(lines.length);
          for (const [i, line] of lines.entries()) {
            expect(out[i]).toBe(line === binding('wd_p_111111111111') ? binding('wd_q_222222222222') : line);
          }
        },
      ),
    );
  });
});

/**
 * YAML syntax errors name the line a person must change, for the whole class: a key indented too deep (the parser
 * notices it at the value on the line above), tabs, quotes and brackets never closed (noticed at the end of the text),
 * and keys given twice.
 */
import { describe, expect, it } from 'vitest';
import { BlueError } from '../../src/errors.js';
import { parseYamlText } from '../../src/schema/index.js';

function syntaxError(text: string): BlueError {
  try {
    parseYamlText(text, 'policy.yaml', 'POLICY_INVALID');
  } catch (error) {
    if (error instanceof BlueError) return error;
    throw error;
  }
  throw new Error('expected a syntax error');
}

const lines = (...l: string[]) => `${l.join('\n')}\n`;

describe('YAML syntax errors', () => {
  it('puts a key indented deeper than the key above it on its own line, not on the value above', () => {
    const error = syntaxError(
      lines(
        'allowed_harnesses: [claude]',
        'session_upload:',
        '  presign_url: https://control.example.com/session-uploads/presign',
        '  backfill: true',
        '    redact: secrets',
      ),
    );
    expect([error.code, error.line, error.column]).toEqual(['POLICY_INVALID', 5, 5]);
    expect(error.message).toMatch(/^policy\.yaml:5:5: line 5 is indented deeper than line 4/);
    expect(error.hint).toMatch(/line 5/);
  });

  it('does so at any depth, and under a value that is a URL', () => {
    expect(
      syntaxError(lines('session_upload:', '  presign_url: https://control.example.com/p', '      backfill: true'))
        .line,
    ).toBe(3);
    expect(syntaxError(lines('a:', '  b:', '    c: 1', '      d: 2', 'e: 1')).line).toBe(4);
  });

  it('keeps the line of a key with no colon, which is where the mistake is', () => {
    expect(syntaxError(lines('session_upload', 'ttl_seconds: 60')).line).toBe(1);
  });

  it('says a tab indents the line, on that line', () => {
    const error = syntaxError(
      lines('session_upload:', '  presign_url: https://control.example.com/p', '\tbackfill: true'),
    );
    expect([error.line, error.column]).toEqual([3, 1]);
    expect(error.message).toMatch(/tab/);
    expect(error.hint).toMatch(/spaces/);
  });

  it('reports an unclosed quote where it opens, not at the end of the text', () => {
    const double = syntaxError(
      lines(
        'ttl_seconds: 60',
        'session_upload:',
        '  presign_url: "https://control.example.com/p',
        '  backfill: true',
        'required: true',
      ),
    );
    expect([double.line, double.column]).toEqual([3, 16]);
    expect(double.message).toMatch(/the " quote opened here is never closed/);
    const single = syntaxError(
      lines('session_upload:', "  presign_url: 'https://control.example.com/p", '  backfill: true'),
    );
    expect([single.line, single.column]).toEqual([2, 16]);
  });

  it('reports an unclosed bracket or brace where it opens', () => {
    const seq = syntaxError(lines('ttl_seconds: 60', 'allowed_harnesses: [claude, codex', 'required: true'));
    expect([seq.line, seq.column]).toEqual([2, 20]);
    expect(seq.message).toMatch(/the \[ opened here is never closed/);
    const map = syntaxError(lines('harnesses: {claude: {}', 'required: true'));
    expect([map.line, map.column]).toEqual([1, 12]);
  });

  it('reports a key given twice at the second, naming the line of the first', () => {
    const error = syntaxError(
      lines(
        'session_upload:',
        '  presign_url: https://control.example.com/p',
        'ttl_seconds: 60',
        'session_upload:',
        '  backfill: true',
      ),
    );
    expect([error.line, error.column]).toEqual([4, 1]);
    expect(error.message).toBe(
      'policy.yaml:4:1: the key "session_upload" appears twice in one mapping (first on line 1)',
    );
    const nested = syntaxError(lines('session_upload:', '  backfill: true', '  redact: none', '  backfill: false'));
    expect(nested.message).toMatch(
      /^policy\.yaml:4:3: the key "backfill" appears twice in one mapping \(first on line 2\)/,
    );
  });

  it('keeps what the parser says, where it says it, for every other error', () => {
    const error = syntaxError(lines('ttl_seconds: 60', 'allowed_harnesses: [claude]]'));
    expect([error.line, error.column]).toEqual([2, 28]);
    expect(error.message).toMatch(/^policy\.yaml:2:28: Unexpected flow-seq-end/);
  });
});

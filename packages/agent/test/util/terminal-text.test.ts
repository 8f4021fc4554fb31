import { describe, expect, it } from 'vitest';
import { reportError } from '../../src/cli/main.js';
import { bufferOutput, createContext } from '../../src/context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { escapeControls, printable } from '@blue-agent/contract/util/terminal-text.js';

const HOSTILE = 'id-\u001b]0;pwned\u0007-\u009b31m-\u202eevil-\r\nnext';

describe('text from elsewhere on a terminal', () => {
  it('printable turns every control character, C1 and bidi override included, into a space', () => {
    expect(printable(HOSTILE)).toBe('id- ]0;pwned - 31m- evil- next');
  });

  it('escapeControls keeps line feeds and tabs and shows everything else escaped', () => {
    expect(escapeControls(HOSTILE)).toBe('id-\\u001b]0;pwned\\u0007-\\u009b31m-\\u202eevil-\\u000d\nnext');
    expect(escapeControls('a\tb\nc')).toBe('a\tb\nc');
  });

  it('holds the one set: C0, DEL, C1, the Arabic letter mark, LRM and RLM, embeddings, overrides and isolates', () => {
    const set = [0x00, 0x08, 0x0b, 0x1f, 0x7f, 0x80, 0x9f, 0x61c, 0x200e, 0x200f, 0x202a, 0x202e, 0x2066, 0x2069].map(
      (c) => String.fromCharCode(c),
    );
    for (const c of set) expect(printable(`a${c}b`), c.charCodeAt(0).toString(16)).toBe('a b');
    // Neighbours that are ordinary text stay.
    for (const c of ['\u00a0', '\u061b', '\u200d', '\u2029', '\u202f', '\u206a', 'é'])
      expect(printable(`a${c}b`)).toBe(`a${c}b`);
  });

  it('an error message quoting hostile text reaches stderr without a control character', () => {
    const stderr = bufferOutput();
    const ctx = createContext({ stderr, stdout: bufferOutput(), env: {} });
    reportError(
      ctx,
      new BlueError('BUNDLE_INVALID', `session ${HOSTILE} is not here`, { hint: `ask \u001b[2J${HOSTILE}` }),
      false,
    );
    const text = stderr.text();
    expect(text).toContain('blue-agent: error [BUNDLE_INVALID]: session id-\\u001b]0;pwned');
    expect(text.replace(/\n/g, '')).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e]/);
  });
});

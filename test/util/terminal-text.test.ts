import { describe, expect, it } from 'vitest';
import { reportError } from '../../src/cli/main.js';
import { bufferOutput, createContext } from '../../src/context.js';
import { BlueError } from '../../src/errors.js';
import { escapeControls, printable } from '../../src/util/terminal-text.js';

const HOSTILE = 'id-\u001b]0;pwned\u0007-\u009b31m-\u202eevil-\r\nnext';

describe('text from elsewhere on a terminal', () => {
  it('printable turns every control character, C1 and bidi override included, into a space', () => {
    expect(printable(HOSTILE)).toBe('id- ]0;pwned - 31m- evil- next');
  });

  it('escapeControls keeps line feeds and tabs and shows everything else escaped', () => {
    expect(escapeControls(HOSTILE)).toBe('id-\\u001b]0;pwned\\u0007-\\u009b31m-\\u202eevil-\\u000d\nnext');
    expect(escapeControls('a\tb\nc')).toBe('a\tb\nc');
  });

  it('an error message quoting hostile text reaches stderr without a control character', () => {
    const stderr = bufferOutput();
    const ctx = createContext({ stderr, stdout: bufferOutput(), env: {} });
    reportError(ctx, new BlueError('BUNDLE_INVALID', `session ${HOSTILE} is not here`, { hint: `ask \u001b[2J${HOSTILE}` }), false);
    const text = stderr.text();
    expect(text).toContain('blue-agent: error [BUNDLE_INVALID]: session id-\\u001b]0;pwned');
    expect(text.replace(/\n/g, '')).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e]/);
  });
});

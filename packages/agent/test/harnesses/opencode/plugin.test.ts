/**
 * How a plugin file is recognised as the agent's: its first line, then the capture command embedded in it. Anything
 * short of both is the user's file.
 */
import { describe, expect, it } from 'vitest';
import { embeddedArgv, hasPluginHeader, PLUGIN_HEADER } from '../../../src/harnesses/opencode/plugin.js';

describe('hasPluginHeader', () => {
  it('is the first line exactly, or followed by a space and more', () => {
    expect(hasPluginHeader(PLUGIN_HEADER)).toBe(true);
    expect(hasPluginHeader(`${PLUGIN_HEADER}\nexport const X = 1;\n`)).toBe(true);
    expect(hasPluginHeader(`${PLUGIN_HEADER} v2\n`)).toBe(true);
  });

  it('tolerates a byte-order mark before it and CRLF after it', () => {
    expect(hasPluginHeader(`\uFEFF${PLUGIN_HEADER}\r\nexport const X = 1;\r\n`)).toBe(true);
  });

  it('is not the header anywhere else, nor a line that only contains it', () => {
    expect(hasPluginHeader('// my own plugin\n')).toBe(false);
    expect(hasPluginHeader('')).toBe(false);
    expect(hasPluginHeader(`// mine\n${PLUGIN_HEADER}\n`)).toBe(false);
    expect(hasPluginHeader(`x ${PLUGIN_HEADER} \n`)).toBe(false);
    expect(hasPluginHeader(`${PLUGIN_HEADER}x\n`)).toBe(false);
  });

  it('counts a byte-order mark or carriage return only where they may stand', () => {
    expect(hasPluginHeader(`${PLUGIN_HEADER}\uFEFF\n`)).toBe(false);
    expect(hasPluginHeader(`${PLUGIN_HEADER.slice(0, 5)}\r${PLUGIN_HEADER.slice(5)}\n`)).toBe(false);
  });
});

describe('embeddedArgv', () => {
  const file = (value: string): string => `${PLUGIN_HEADER}\nconst CAPTURE_ARGV = ${value};\nexport const X = 1;\n`;

  it('reads the capture command as a JSON array of strings', () => {
    expect(embeddedArgv(file('["/usr/bin/node","/opt/b/blue-agent.js","capture"]'))).toEqual([
      '/usr/bin/node',
      '/opt/b/blue-agent.js',
      'capture',
    ]);
    expect(embeddedArgv(file('[]'))).toEqual([]);
    expect(embeddedArgv(file('["a"]').replace(/\n/g, '\r\n'))).toEqual(['a']);
  });

  it('is undefined without that line, or when it is not an array of strings', () => {
    expect(embeddedArgv(`${PLUGIN_HEADER}\n`)).toBeUndefined();
    expect(embeddedArgv(file('["a", 1]'))).toBeUndefined();
    expect(embeddedArgv(file('[1, "a"]'))).toBeUndefined();
    expect(embeddedArgv(file('{"0":"a"}'))).toBeUndefined();
    expect(embeddedArgv(file('"a"'))).toBeUndefined();
    expect(embeddedArgv(file('["a"].concat(process.argv)'))).toBeUndefined();
  });
});

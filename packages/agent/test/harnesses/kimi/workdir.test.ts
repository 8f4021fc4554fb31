/**
 * Kimi Code's work-dir key, checked against the folders the real CLI made (0.10.0 and 2.1.0 agree): ASCII names, a
 * name of characters outside [a-z0-9._-] only, a long name with spaces and accents; and for any path, a folder name
 * Kimi Code's own pattern accepts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { kimiCodeWorkDirKey, WORK_DIR_KEY } from '../../../src/harnesses/kimi/workdir.js';

describe('Kimi Code work-dir key', () => {
  it('is the one the real CLI gave each folder', () => {
    // From session_index.jsonl of runs of Kimi Code 2.1.0 and 0.10.0 in these folders.
    expect(kimiCodeWorkDirKey('/tmp/research/kimi')).toBe('wd_kimi_07dd63ed896f');
    expect(kimiCodeWorkDirKey('/tmp/research/kimi/runs/k-2.1.0/work/日本語')).toBe('wd_workspace_5676521d65c2');
    expect(kimiCodeWorkDirKey('/tmp/research/kimi/runs/k-2.1.0/work/real.dir')).toBe('wd_real.dir_0665ea2dad6f');
    expect(
      kimiCodeWorkDirKey(
        '/tmp/research/kimi/runs/k-2.1.0/work/Проект Ünïcode très-long name with spaces, and more than forty ' +
          'characters!',
      ),
    ).toBe('wd_n-code-tr-s-long-name-with-spaces-and-mo_b213f2746b69');
    expect(kimiCodeWorkDirKey('/tmp/research/kimi/runs/k-0.10.0/work/日本語')).toBe('wd_workspace_b57d9be72683');
  });

  it('drops trailing slashes and reads back slashes as slashes', () => {
    expect(kimiCodeWorkDirKey('/tmp/research/kimi/')).toBe('wd_kimi_07dd63ed896f');
    expect(kimiCodeWorkDirKey('\\tmp\\research\\kimi')).toBe('wd_kimi_07dd63ed896f');
    expect(kimiCodeWorkDirKey('/')).toMatch(/^wd_workspace_[0-9a-f]{12}$/);
    expect(kimiCodeWorkDirKey('/w/..')).toMatch(/^wd_workspace_/);
    expect(kimiCodeWorkDirKey('/w/-x-')).toMatch(/^wd_x_/);
  });

  it('is always a folder name of the shape Kimi Code writes', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'grapheme', maxLength: 60 }), { maxLength: 4 }), (parts) => {
        const key = kimiCodeWorkDirKey(`/${parts.join('/')}`);
        expect(key).toMatch(WORK_DIR_KEY);
        expect(key).not.toMatch(/^wd_[-]|-_[0-9a-f]{12}$/);
      }),
    );
  });
});

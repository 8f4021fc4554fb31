/**
 * One rule for native session ids: the TypeScript function and the bundle manifest schema's pattern (what bundle
 * verify applies) agree on every id, hostile or not, and each place that takes an id uses it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parsePayload, PayloadRefused } from '../../src/capture/payload.js';
import { checkedSessionId } from '../../src/harness-kit/restore-files.js';
import { assertSessionId } from '../../src/harness-kit/session-files.js';
import type { RestoreInput } from '../../src/harnesses/types.js';
import * as validators from '@blue-agent/contract/schema/generated/validators.js';
import {
  isSessionId,
  SESSION_ID_MAX_LENGTH,
  SESSION_ID_PATTERN,
  SESSION_ID_PATTERN_SOURCE,
  SESSION_ID_RULE,
  sessionIdProblem,
} from '@blue-agent/contract/util/session-id.js';
import { contractRoot } from '../../../../test/support/context.js';

function schemaPattern(file: string, pick: (schema: any) => { pattern: string }): string {
  const schema = JSON.parse(readFileSync(path.join(contractRoot, 'schemas', file), 'utf8'));
  return pick(schema).pattern;
}

const hostile: [string, string][] = [
  ['empty', ''],
  ['.', '.'],
  ['..', '..'],
  ['...', '...'],
  ['a leading dot', '.hidden'],
  ['a slash', 'a/b'],
  ['a leading slash', '/etc'],
  ['a climb', '../x'],
  ['a backslash', 'a\\b'],
  ['NUL', 'a\u0000b'],
  ['a leading dash (an option)', '-rf'],
  ['a leading underscore', '_x'],
  ['513 characters', 'a'.repeat(513)],
  ['a newline at the end', 'abc\n'],
  ['a space', 'a b'],
  ['a tab', 'a\tb'],
  ['only white space', '   '],
  ['a C1 control', 'a\u0085b'],
  ['a bidirectional override', 'a\u202eb'],
  ['a zero-width space', 'a\u200bb'],
  ['a non-ASCII letter', 'caf\u00e9'],
  ['a colon', 'a:b'],
  ["restore's temp name", 'x.blue-agent-restore-y'],
];

const valid: [string, string][] = [
  ['a UUID', '0b7c4a1e-1111-4222-8333-944455556666'],
  ['Kimi', 'session_4f1c8e2a-7b3d-4c9e-a1f0-2d6b8e9c3a71'],
  ['OpenCode', 'ses_3f2a1b0c9d8eFfGg'],
  ['one character', 'a'],
  ['dots inside', 'a..b'],
  ['512 characters', `A${'a'.repeat(511)}`],
  ['a trailing dash', 'abc-'],
];

describe('the native session id rule', () => {
  const manifest = schemaPattern('bundle-manifest.schema.json', (s) => s.properties.native_session_id);
  const presign = schemaPattern('control-presign.schema.json', (s) => s.properties.session_id);

  it('is the same pattern text in the bundle manifest and in src/util/session-id.ts', () => {
    expect(manifest).toBe(SESSION_ID_PATTERN_SOURCE);
    // The Control API takes any id a client of the contract sends (no control characters): the rule guards restores,
    // which read the id from the manifest.
    expect(presign).toBe('^[^\\u0000-\\u001f\\u007f]+$');
  });

  const manifestOf = (id: string) => ({
    schema_version: 1,
    artifact_format: 'blue-session-bundle-v1',
    harness: 'opencode',
    compatibility_profile: 'opencode-v1_2_0',
    native_session_id: id,
    captured_at_unix_ms: 0,
    files: [{ role: 'portable_export', path: 'files/0000-export.json', size: 1, sha256: 'a'.repeat(64) }],
  });
  const presignOf = (id: string) => ({
    harness: 'opencode',
    session_id: id,
    sha256: 'a'.repeat(64),
    size_bytes: 1,
    content_type: 'application/vnd.blue.session-bundle+tar+gzip',
  });

  it.each([...hostile.map(([n, id]) => [n, id, false] as const), ...valid.map(([n, id]) => [n, id, true] as const)])(
    '%s: the function, the schema pattern, the generated validators and every place agree',
    (_name, id, ok) => {
      expect(isSessionId(id)).toBe(ok);
      expect(sessionIdProblem(id) === undefined).toBe(ok);
      expect(new RegExp(manifest, 'u').test(id)).toBe(ok);
      expect((validators.validateBundleManifest as (d: unknown) => boolean)(manifestOf(id))).toBe(ok);
      // Every id blue-agent captures is one the Control API takes.
      if (ok) expect((validators.validatePresignRequest as (d: unknown) => boolean)(presignOf(id))).toBe(true);

      // Capture (the hook's payload), the harness adapters, and restore.
      const payload = () => parsePayload(JSON.stringify({ session_id: id }));
      if (ok) expect(payload().session_id).toBe(id);
      else expect(payload).toThrow(PayloadRefused);
      const adapter = () => assertSessionId(id, '/where');
      if (ok) adapter();
      else expect(adapter).toThrow(expect.objectContaining({ code: 'ARTIFACT_INVALID' }));
      const restore = () => checkedSessionId({ manifest: { native_session_id: id } } as unknown as RestoreInput);
      if (ok) expect(restore()).toBe(id);
      else expect(restore).toThrow(expect.objectContaining({ code: 'RESTORE_UNSAFE' }));
    },
  );

  it('names the part of the rule broken, never the id', () => {
    expect(sessionIdProblem('..')).toBe('must start with a letter or digit (not ".", "..", "-" or "_")');
    expect(sessionIdProblem('a/b')).toBe('may only hold the characters A-Z a-z 0-9 . _ -');
    expect(sessionIdProblem('')).toBe('must be 1 to 512 characters long (it has 0)');
    expect(sessionIdProblem(42)).toBe('is not a string');
  });
});

describe('the native session id rule, part by part', () => {
  it('bounds the length at 512 characters, saying how many there are', () => {
    expect(SESSION_ID_MAX_LENGTH).toBe(512);
    expect(sessionIdProblem(`a${'b'.repeat(511)}`)).toBeUndefined();
    expect(sessionIdProblem(`a${'b'.repeat(512)}`)).toBe('must be 1 to 512 characters long (it has 513)');
    expect(sessionIdProblem('/'.repeat(600))).toBe('must be 1 to 512 characters long (it has 600)');
  });

  it('names a character outside the set wherever it stands, before the first-character rule', () => {
    for (const id of ['a/b', '/ab', 'ab/', 'ab\n', '\u00e9a', '.a b', '-a:b', 'a\u0000']) {
      expect(sessionIdProblem(id), JSON.stringify(id)).toBe('may only hold the characters A-Z a-z 0-9 . _ -');
    }
  });

  it('needs a letter or digit first, and each one is allowed there', () => {
    for (const id of ['.a', '-a', '_a', '..', '.blue-agent-restore']) {
      expect(sessionIdProblem(id), id).toBe('must start with a letter or digit (not ".", "..", "-" or "_")');
    }
    for (const id of ['A', 'Z', 'a', 'z', '0', '9', 'a.b_c-d', 'Zz9']) expect(sessionIdProblem(id), id).toBeUndefined();
  });

  it("refuses restore's temporary name anywhere after the first character", () => {
    for (const id of ['x.blue-agent-restore', 'x.blue-agent-restore.y', 'a-b.blue-agent-restore-1']) {
      expect(sessionIdProblem(id), id).toBe(
        'must not contain ".blue-agent-restore" (the name of restore\'s temporary files)',
      );
    }
    expect(sessionIdProblem('x.blue-agent-restor')).toBeUndefined();
    expect(sessionIdProblem('xblue-agent-restore')).toBeUndefined();
  });

  it('states the rule people are shown, and the pattern holds only what the parts allow', () => {
    expect(SESSION_ID_RULE).toBe('1 to 512 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit');
    expect(SESSION_ID_PATTERN.flags).toBe('u');
    expect(SESSION_ID_PATTERN.test('a\nb')).toBe(false);
    expect(isSessionId(undefined)).toBe(false);
    expect(isSessionId(['a'])).toBe(false);
  });
});

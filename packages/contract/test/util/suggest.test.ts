import { describe, expect, it } from 'vitest';
import { nearest } from '../../src/util/suggest.js';

const POLICY_KEYS = [
  'revision',
  'ttl_seconds',
  'required',
  'allowed_harnesses',
  'harnesses',
  'session_upload',
  'required_capabilities',
];

describe('nearest', () => {
  it('finds the key a typo meant: a letter missing, added, changed or two swapped', () => {
    expect(nearest('sesion_upload', POLICY_KEYS)).toBe('session_upload');
    expect(nearest('sessionn_upload', POLICY_KEYS)).toBe('session_upload');
    expect(nearest('session_uplaod', POLICY_KEYS)).toBe('session_upload');
    expect(nearest('allowed_harness', POLICY_KEYS)).toBe('allowed_harnesses');
    expect(nearest('ttl_secs', POLICY_KEYS)).toBe('ttl_seconds');
  });

  it('ignores case and the difference between - and _', () => {
    expect(nearest('Session-Upload', POLICY_KEYS)).toBe('session_upload');
  });

  it('suggests nothing for a name far from every candidate, an empty one, or one too long to be a key', () => {
    expect(nearest('packages_extra', POLICY_KEYS)).toBeUndefined();
    expect(nearest('x', POLICY_KEYS)).toBeUndefined();
    expect(nearest('', POLICY_KEYS)).toBeUndefined();
    expect(nearest(`session_upload${'x'.repeat(200)}`, POLICY_KEYS)).toBeUndefined();
    expect(nearest('anything', [])).toBeUndefined();
  });

  it('prefers the closest candidate, then the earlier one', () => {
    expect(nearest('required_x', ['required', 'required_capabilities'])).toBe('required');
    expect(nearest('cat', ['bat', 'hat'])).toBe('bat');
  });
});

/**
 * What an audit entry of a published policy says changed (pure): top-level keys added, removed and changed (key order
 * alone is no change), harnesses allowed, no longer allowed and reconfigured, each list bounded; and how entries read.
 */
import { describe, expect, it } from 'vitest';
import { actorName, auditSummary, MAX_SUMMARY_CHARS, policyPublished } from '../../src/store/audit.js';
import type { PolicyRevision } from '../../src/store/types.js';

const revision = (id: string, body: Record<string, unknown>): PolicyRevision => ({
  revision: id,
  body: { ...body, revision: id },
  text: null,
  etag: '"x"',
  created_at: 0,
});
const operator = { kind: 'cli' as const, name: 'ops' };

describe('policyPublished', () => {
  it('says which keys and harnesses changed; key order and the revision id are no change', () => {
    const before = revision('r1', {
      allowed_harnesses: ['claude', 'codex'],
      harnesses: { codex: { allow_unverified_versions: true, version_requirement: '>=1' } },
      ttl_seconds: 60,
    });
    const after = revision('r2', {
      ttl_seconds: 60,
      harnesses: { codex: { version_requirement: '>=1', allow_unverified_versions: true } },
      allowed_harnesses: ['claude', 'codex'],
    });
    expect(policyPublished(operator, before, after).details).toEqual({
      revision: 'r2',
      previous_revision: 'r1',
      keys_added: [],
      keys_removed: [],
      keys_changed: [],
      harnesses_allowed: [],
      harnesses_disallowed: [],
      harnesses_configured: [],
    });
    const changed = policyPublished(
      operator,
      before,
      revision('r3', {
        allowed_harnesses: ['gemini'],
        harnesses: { codex: { allow_unverified_versions: false } },
        telemetry: {},
      }),
    );
    expect(changed.details).toMatchObject({
      keys_added: ['telemetry'],
      keys_removed: ['ttl_seconds'],
      keys_changed: ['allowed_harnesses', 'harnesses'],
      harnesses_allowed: ['gemini'],
      harnesses_disallowed: ['claude', 'codex'],
      harnesses_configured: ['codex'],
    });
    expect(auditSummary(changed)).toBe(
      'published policy revision r3 (after r1): keys added: telemetry; keys removed: ttl_seconds; keys changed: ' +
        'allowed_harnesses, harnesses; ' +
        'harnesses now allowed: gemini; harnesses no longer allowed: claude, codex; harness settings changed: codex',
    );
    expect(auditSummary(policyPublished(operator, before, after))).toBe(
      'published policy revision r2 (after r1): nothing changed',
    );
  });

  it('names no harness as allowed or disallowed when either revision leaves allowed_harnesses out', () => {
    const event = policyPublished(
      operator,
      revision('r1', { ttl_seconds: 1 }),
      revision('r2', { allowed_harnesses: ['claude'] }),
    );
    expect(event.details).toMatchObject({
      keys_added: ['allowed_harnesses'],
      harnesses_allowed: [],
      harnesses_disallowed: [],
    });
  });

  it('bounds every list and the sentence, however many keys a policy holds', () => {
    const many = Object.fromEntries(
      Array.from({ length: 500 }, (_, i) => [`key_${String(i).padStart(3, '0')}_${'x'.repeat(100)}`, i]),
    );
    const event = policyPublished(operator, undefined, revision('r1', many));
    const added = event.details.keys_added as string[];
    expect(added).toHaveLength(32);
    expect(added.every((k) => k.length <= 64)).toBe(true);
    expect(auditSummary(event).length).toBeLessThanOrEqual(MAX_SUMMARY_CHARS);
  });
});

describe('actorName', () => {
  it('names a person by e-mail, the operator by OS user, the provider by issuer', () => {
    expect(actorName({ actor_kind: 'user', actor_id: 'u1', actor_email: 'ada@example.com' })).toBe('ada@example.com');
    expect(actorName({ actor_kind: 'cli', actor_id: 'ops', actor_email: null })).toBe('cli (OS user ops)');
    expect(actorName({ actor_kind: 'identity_provider', actor_id: 'https://idp.example', actor_email: null })).toBe(
      'identity provider https://idp.example',
    );
  });
});

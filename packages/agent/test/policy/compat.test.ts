/**
 * Whether this blue-agent may apply a governance document (src/policy/compat.ts), rule by rule: the pin
 * (required_client_version and its header), the contract version, the capabilities, the rollout floor and harness
 * names it does not know. resolve.test.ts covers what each does to the cached policy, against a loopback server.
 */
import { describe, expect, it } from 'vitest';
import { CAPABILITIES, CONTRACT_VERSION } from '../../src/control-api/contract.js';
import { checkCompatibility } from '../../src/policy/compat.js';
import type { GovernancePolicy } from '@blue-agent/contract/schema/index.js';
import { thrown } from '../../../../test/support/errors.js';

const OWN = '1.4.2';
const check = (policy: Partial<GovernancePolicy>, headerPin?: string) =>
  checkCompatibility(
    { revision: 'r1', ...policy },
    { clientVersion: OWN, where: 'https://c.example/governance-config', headerPin },
  );

describe('checkCompatibility', () => {
  it('accepts a document within the contract and capabilities, with no warning', () => {
    expect(
      check(
        {
          contract_version: CONTRACT_VERSION,
          required_capabilities: [...CAPABILITIES],
          required_client_version: OWN,
          minimum_client_version: '1.0.0',
        },
        OWN,
      ),
    ).toEqual([]);
    expect(check({})).toEqual([]);
  });

  it('refuses a newer contract, naming both versions (POLICY_INCOMPATIBLE, with an update hint)', () => {
    const error = thrown(() => check({ contract_version: CONTRACT_VERSION + 1 }));
    expect(error.code).toBe('POLICY_INCOMPATIBLE');
    expect(error.message).toBe(
      `https://c.example/governance-config: revision r1 needs governance contract ${CONTRACT_VERSION + 1}, and ` +
        `this blue-agent speaks ${CONTRACT_VERSION}`,
    );
    expect(error.hint).toContain('Update blue-agent');
  });

  it('refuses a capability it lacks, naming only the missing ones', () => {
    const error = thrown(() =>
      check({ required_capabilities: ['adapter_intervals', 'gateway_inference_jwt', 'dynamic_verified_ceilings'] }),
    );
    expect(error.code).toBe('POLICY_INCOMPATIBLE');
    expect(error.message).toContain(
      'requires client capabilities this blue-agent lacks: gateway_inference_jwt, dynamic_verified_ceilings',
    );
  });

  it('blocks another major of the pin (CLIENT_VERSION_MISMATCH, naming the release) before judging contract', () => {
    const error = thrown(() => check({ required_client_version: '2.0.0', contract_version: 99 }));
    expect(error.code).toBe('CLIENT_VERSION_MISMATCH');
    expect(error.message).toContain('the organisation requires blue-agent 2.0.0, and this is 1.4.2');
    expect(error.hint).toContain('Install blue-agent 2.0.0');
    expect(thrown(() => check({ required_client_version: '0.9.9' })).code).toBe('CLIENT_VERSION_MISMATCH');
  });

  it('warns about another release of the same major, and the policy applies', () => {
    expect(check({ required_client_version: '1.5.0' })).toEqual([
      'the organisation recommends blue-agent 1.5.0; this is 1.4.2 (same major 1: the policy applies)',
    ]);
    expect(check({ required_client_version: '1.0.0' })).toHaveLength(1);
  });

  it('refuses a pin that is not one exact release', () => {
    expect(thrown(() => check({ required_client_version: '^1.4.2' })).code).toBe('POLICY_INVALID');
  });

  it('refuses a pin header that disagrees with the document, or comes without a pin in it', () => {
    const error = thrown(() => check({ required_client_version: '1.4.2' }, '1.4.3'));
    expect(error.code).toBe('POLICY_INVALID');
    expect(error.message).toContain(
      "the X-Blue-Required-Client-Version header (1.4.3) and the document's required_client_version (1.4.2) disagree",
    );
    expect(thrown(() => check({}, '1.4.2')).message).toContain('(absent) disagree');
    // A document pin without the header is fine (older servers send none).
    expect(check({ required_client_version: '1.4.2' })).toEqual([]);
  });

  it('treats minimum_client_version as an informational rollout floor: a warning, never a refusal', () => {
    expect(check({ minimum_client_version: '1.4.2' })).toEqual([]);
    const [warning] = check({ minimum_client_version: '999.0.0' });
    expect(warning).toContain(
      "the organisation's rollout floor is blue-agent 999.0.0, and this is 1.4.2: update when you can",
    );
    expect(check({ minimum_client_version: 'soon' })).toEqual([
      'minimum_client_version "soon" is not a SemVer version; ignored',
    ]);
  });

  it('ignores harness names it does not know, with one warning naming them', () => {
    const warnings = check({
      allowed_harnesses: ['claude', 'claude-code', 'cursor'],
      harnesses: { cursor: {}, codex: {} },
    });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /^revision r1 names harnesses this blue-agent does not know: claude-code, cursor \(ignored; known: .*claude.*\)$/,
    );
  });
});

/**
 * The client status the agent reports after a reconcile (src/daemon/report.ts): Blue's ClientStatusReport, valid by
 * our schema and by the contract's own, with `applied`, `files_ok`, one HarnessInventoryEntry per harness and the
 * failed harness as `reconciliation_attempt` with its `error`, within the size the Control API accepts.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clientStatusBody, type HarnessSummary } from '../../src/daemon/report.js';
import { HARNESSES } from '../../src/harnesses/names.js';
import { validateClientStatusReport } from '@blue-agent/contract/schema/generated/validators.js';
import { MAX_CLIENT_STATUS_BYTES } from '@blue-agent/contract/schema/limits.js';
import { blueValidator } from '../../../../test/support/contract.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';

let t: TestHome;
beforeEach(async () => {
  t = await makeTestHome();
});
afterEach(async () => t.cleanup());

function harness(over: Partial<HarnessSummary> = {}): HarnessSummary {
  return {
    harness: 'claude',
    installed: true,
    path: '/usr/bin/claude',
    raw_version: '2.1.332 (Claude Code)',
    version: '2.1.332',
    profile: 'claude-v2_0_12',
    deprecated: false,
    allowed: true,
    supported: true,
    verified: true,
    state: 'active',
    reason: 'managed Stop capture hook',
    action: 'unchanged',
    files: [],
    file_error: false,
    ...over,
  };
}

function valid(body: unknown): void {
  const ours = validateClientStatusReport as typeof validateClientStatusReport & { errors?: unknown };
  expect(ours(body), JSON.stringify(ours.errors)).toBe(true);
  const blue = blueValidator('ClientStatusReport.json');
  expect(blue?.(body), JSON.stringify(blue?.errors)).toBe(true);
}

describe('clientStatusBody', () => {
  it('reports an applied revision: string config_revision, every harness as an inventory entry', () => {
    const body = clientStatusBody(
      t.ctx,
      'inst-1',
      {
        harnesses: [
          harness(),
          harness({
            harness: 'codex',
            installed: false,
            path: null,
            raw_version: null,
            version: null,
            profile: null,
            state: 'not_installed',
            reason: 'not on PATH',
          }),
        ],
      },
      7,
      new Set(),
    );
    valid(body);
    expect(body).toMatchObject({
      instance_id: 'inst-1',
      client_version: t.ctx.self.version,
      config_revision: '7',
      applied: true,
      files_ok: true,
    });
    expect(body.platform).toBe(process.platform === 'darwin' ? 'macos' : process.platform);
    expect(body.harnesses).toEqual([
      {
        name: 'claude',
        api_allowed: true,
        client_supported: true,
        installed: true,
        reconciled: true,
        path: '/usr/bin/claude',
        raw_version: '2.1.332 (Claude Code)',
        version: '2.1.332',
        compatibility_profile: 'claude-v2_0_12',
        compatibility_deprecated: false,
        state: 'active',
      },
      {
        name: 'codex',
        api_allowed: true,
        client_supported: true,
        installed: false,
        reconciled: true,
        state: 'not_installed',
      },
    ]);
    expect(body).not.toHaveProperty('reconciliation_attempt');
    expect(body).not.toHaveProperty('policy_revision');
  });

  it('a failed harness: not applied, the attempt and its error; a file it could not write: files not ok', () => {
    const failed = harness({
      harness: 'codex',
      state: 'error',
      reason: 'cannot parse ~/.codex/config.toml',
      action: 'error',
      file_error: true,
    });
    const body = clientStatusBody(t.ctx, 'inst-1', { harnesses: [harness(), failed] }, 'r-9', new Set());
    valid(body);
    expect(body).toMatchObject({
      applied: false,
      files_ok: false,
      reconciliation_attempt: { harness: 'codex', revision: 'r-9' },
      error: 'codex: cannot parse ~/.codex/config.toml',
    });
    expect(body.harnesses?.[1]).toMatchObject({
      name: 'codex',
      reconciled: false,
      compatibility_error: 'cannot parse ~/.codex/config.toml',
    });
  });

  it(
    'says what the policy forbids, what this agent cannot capture, deprecated profiles, unverified versions and ' +
      'corrections',
    () => {
      const body = clientStatusBody(
        t.ctx,
        'inst-1',
        {
          harnesses: [
            harness({ allowed: false, state: 'not_allowed', reason: 'not in allowed_harnesses' }),
            harness({
              harness: 'kimi',
              supported: false,
              profile: null,
              state: 'unsupported_version',
              reason: 'Kimi 0.1.0 is outside every compatibility profile',
            }),
            harness({
              harness: 'codex',
              deprecated: true,
              verified: false,
              state: 'active',
              reason: 'managed (unverified 0.200.0 allowed by policy)',
              version: '0.200.0',
              profile: 'codex-v0_145_0',
            }),
          ],
        },
        'r1',
        new Set(['codex']),
      );
      valid(body);
      expect(body.applied).toBe(true);
      expect(body.harnesses).toMatchObject([
        { name: 'claude', api_allowed: false, client_supported: true },
        {
          name: 'kimi',
          client_supported: false,
          compatibility_error: 'Kimi 0.1.0 is outside every compatibility profile',
        },
        {
          name: 'codex',
          compatibility_deprecated: true,
          compatibility_warning: expect.stringContaining(
            '0.200.0 is at or past the certified ceiling of codex-v0_145_0',
          ),
          drift_corrected: true,
        },
      ]);
    },
  );

  it(
    "says each harness's real state: a hook the harness will not run yet is not just reconciled, an error carries " +
      'its code',
    () => {
      const trust =
        'Codex runs the managed Stop hook only once you trust it (hooks.state): open `codex`, run /hooks and trust it';
      const off = 'hooks are turned off in ~/.codex/config.toml (features.codex_hooks = false)';
      // One harness in every state it can report (the report does not mind the same name twice).
      const states: Partial<HarnessSummary>[] = [
        { state: 'awaiting_trust', reason: trust },
        { state: 'hooks_disabled', reason: off },
        { state: 'error', code: 'PARSE_FAILED', reason: 'cannot parse ~/.codex/config.toml', action: 'error' },
        { state: 'capture_disabled', reason: 'policy revision r1 has no session_upload block' },
        { allowed: false, state: 'not_allowed', reason: 'policy revision r1 does not list codex in allowed_harnesses' },
        { verified: false, state: 'unverified_version', reason: 'Codex 9.0.0 is past the certified ceiling' },
        {
          supported: false,
          profile: null,
          state: 'unsupported_version',
          reason: 'Codex 0.0.1 is outside every compatibility profile',
        },
      ];
      const body = clientStatusBody(
        t.ctx,
        'inst-1',
        { harnesses: states.map((over) => harness({ harness: 'codex', ...over })) },
        'r1',
        new Set(),
      );
      valid(body);
      expect(body.harnesses).toEqual([
        expect.objectContaining({ reconciled: true, state: 'awaiting_trust', state_reason: trust }),
        expect.objectContaining({ reconciled: true, state: 'hooks_disabled', state_reason: off }),
        expect.objectContaining({
          reconciled: false,
          state: 'error',
          state_code: 'PARSE_FAILED',
          compatibility_error: 'cannot parse ~/.codex/config.toml',
        }),
        expect.objectContaining({
          state: 'capture_disabled',
          state_reason: 'policy revision r1 has no session_upload block',
        }),
        expect.objectContaining({
          api_allowed: false,
          state: 'not_allowed',
          state_reason: expect.stringContaining('allowed_harnesses'),
        }),
        expect.objectContaining({
          state: 'unverified_version',
          compatibility_warning: 'Codex 9.0.0 is past the certified ceiling',
        }),
        expect.objectContaining({
          client_supported: false,
          state: 'unsupported_version',
          compatibility_error: expect.stringContaining('outside every'),
        }),
      ]);
      // A reason is said once: where a compatibility field carries it, there is no state_reason.
      for (const i of [2, 5, 6]) expect(body.harnesses?.[i]).not.toHaveProperty('state_reason');
      // Only an error's code, and only a code.
      const odd = clientStatusBody(
        t.ctx,
        'inst-1',
        {
          harnesses: [
            harness({ state: 'error', code: 'not a code; rm -rf', reason: 'x', action: 'error' }),
            harness({ code: 'STRAY' }),
          ],
        },
        'r1',
        new Set(),
      );
      valid(odd);
      for (const h of odd.harnesses ?? []) expect(h).not.toHaveProperty('state_code');
    },
  );

  it('stays within what the Control API accepts however long its paths and messages, keeping each state', () => {
    const long = (n: number) => 'é'.repeat(n);
    const names = HARNESSES;
    const harnesses = names.map((name, i) =>
      harness({
        harness: name,
        path: `/${long(5000)}`,
        raw_version: long(300),
        state: i === 0 ? 'error' : 'awaiting_trust',
        code: i === 0 ? 'FILE_UNREADABLE' : undefined,
        reason: long(2000),
        file_error: i === 0,
      }),
    );
    const body = clientStatusBody(t.ctx, 'inst-1', { harnesses }, 'r1', new Set());
    valid(body);
    expect(Buffer.byteLength(JSON.stringify(body))).toBeLessThanOrEqual(MAX_CLIENT_STATUS_BYTES);
    expect(body).toMatchObject({ applied: false, files_ok: false, config_revision: 'r1' });
    expect(
      body.harnesses?.map((h) =>
        typeof h === 'string' ? h : [h.name, h.installed, h.reconciled, h.state, h.state_code],
      ),
    ).toEqual(
      names.map((name, i) => [
        name,
        true,
        i !== 0,
        i === 0 ? 'error' : 'awaiting_trust',
        i === 0 ? 'FILE_UNREADABLE' : undefined,
      ]),
    );
    // An ordinary report is sent whole.
    const ordinary = clientStatusBody(
      t.ctx,
      'inst-1',
      { harnesses: names.map((name) => harness({ harness: name })) },
      'r1',
      new Set(),
    );
    expect(ordinary.harnesses?.every((h) => typeof h !== 'string' && h.path === '/usr/bin/claude')).toBe(true);
  });

  it('masks secrets a reason quotes, by the one masking rule, before it is bounded', () => {
    const reason =
      `cannot parse ~/.claude/settings.json: Unexpected token '}', "{"env": {"ANTHROPIC_API_KEY": ` +
      `"sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe", "DB_PASSWORD": "Zq8vR2kLm9x"}" is not valid JSON`;
    const body = clientStatusBody(
      t.ctx,
      'inst-1',
      { harnesses: [harness({ state: 'error', reason, action: 'error' })] },
      'r1',
      new Set(),
    );
    valid(body);
    const sent = JSON.stringify(body);
    for (const secret of ['sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe', 'Zq8vR2kLm9x'])
      expect(sent).not.toContain(secret);
    expect(body.error).toContain('"ANTHROPIC_API_KEY": "[REDACTED:ANTHROPIC_API_KEY]"');
    expect(body.harnesses?.[0]).toMatchObject({
      compatibility_error: expect.stringContaining('"DB_PASSWORD": "[REDACTED:PASSWORD]"'),
    });
  });

  it('before any revision is known, nothing is claimed applied', () => {
    const body = clientStatusBody(t.ctx, 'inst-1', undefined, undefined, new Set());
    valid(body);
    expect(body).toMatchObject({ config_revision: null, applied: false, files_ok: true, harnesses: [] });
  });
});

/**
 * The doctor's rule that every warning carries a fix, on the agent's checks: a Control API not checked, and a service
 * manager that could not be asked.
 */
import { describe, expect, it } from 'vitest';
import { checkControlApi, checkService, type Check } from '../../src/doctor/checks.js';

describe('doctor', () => {
  const everyProblemHasAFix = (check: Check) => {
    if (check.status !== 'ok') expect(check.fix, `${check.id}: ${check.message}`).toMatch(/\S/);
  };

  it('a Control API that was not checked is a warning with a fix', () => {
    const check = checkControlApi(
      {
        url: 'https://control.example',
        urlSource: 'control_url',
        tokenSource: 'token file',
        token: 'present',
        probe: undefined,
      },
      undefined,
    );
    expect(check.status).toBe('warn');
    everyProblemHasAFix(check);
  });

  it('a service whose manager could not answer is a warning with a fix, not ok', () => {
    for (const manager of ['systemd', 'launchd'] as const) {
      const check = checkService({
        manager,
        unitFile: '/u/blue-agent.service',
        installed: true,
        ours: true,
        current: true,
        enabled: undefined,
        active: undefined,
        detail: 'systemctl --user could not answer: Failed to connect to bus',
      });
      expect(check.status).toBe('warn');
      everyProblemHasAFix(check);
      expect(check.fix).toMatch(
        manager === 'systemd' ? /systemctl --user status blue-agent\.service/ : /launchctl print/,
      );
    }
    // Known states stay as they were.
    expect(
      checkService({
        manager: 'systemd',
        unitFile: '/u',
        installed: true,
        ours: true,
        current: true,
        enabled: true,
        active: true,
        detail: '',
      }).status,
    ).toBe('ok');
  });
});

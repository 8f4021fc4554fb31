/** The doctor's rule that every warning carries a fix, on the service's check: a manager that could not be asked. */
import { describe, expect, it } from 'vitest';
import { checkService } from '../../src/doctor/service-check.js';
import type { Check } from '../../src/doctor/verdict.js';

describe('doctor', () => {
  const everyProblemHasAFix = (check: Check) => {
    if (check.status !== 'ok') expect(check.fix, `${check.id}: ${check.message}`).toMatch(/\S/);
  };

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

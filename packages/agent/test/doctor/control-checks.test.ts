/** The doctor's rule that every warning carries a fix, on the Control API's check: a Control API not checked. */
import { describe, expect, it } from 'vitest';
import { checkControlApi } from '../../src/doctor/control-checks.js';
import type { Check } from '../../src/doctor/verdict.js';

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
});

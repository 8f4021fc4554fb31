/** The doctor's checks of the Control API: where it is, the token it gets, and the policy it serves. */
import type { ErrorInfo } from '../status/policy.js';
import type { ControlFacts, DoctorFacts } from './collect.js';
import { type Check, LOGIN } from './verdict.js';

export function checkControlApi(control: ControlFacts, policyFile: string | undefined): Check {
  const id = 'control-api';
  if (control.urlError !== undefined)
    return { id, status: 'fail', message: control.urlError.message, fix: control.urlError.hint ?? LOGIN };
  if (control.url === undefined) {
    return policyFile === undefined
      ? {
          id,
          status: 'fail',
          message: 'no Control API and no policy file are configured: nothing is captured',
          fix: `${LOGIN} (or set policy_file in the agent config)`,
        }
      : {
          id,
          status: 'warn',
          message: 'no Control API is configured: captured sessions stay in the spool, never uploaded',
          fix: LOGIN,
        };
  }
  const probe = control.probe;
  const origin = safeOrigin(control.url);
  if (probe === undefined) {
    return {
      id,
      status: 'warn',
      message: `the Control API at ${origin} was not checked`,
      fix: 'run `blue-agent reconcile --dry-run` to see what the Control API answers',
    };
  }
  switch (probe.kind) {
    case 'ok':
    case 'refused':
      return { id, status: 'ok', message: `the Control API at ${origin} answers` };
    case 'unavailable':
      return {
        id,
        status: 'fail',
        message: `the Control API at ${origin} cannot be reached: ${probe.reason}`,
        fix:
          `check the network (VPN, proxy) and the URL in ` +
          (control.urlSource === 'BLUE_AGENT_CONTROL_URL'
            ? 'BLUE_AGENT_CONTROL_URL'
            : 'control_url of the agent config') +
          '; ' +
          `to change it: ${LOGIN}`,
      };
    case 'error':
      return {
        id,
        status: 'fail',
        message: probe.error.message,
        fix: probe.error.hint ?? 'check control_url and the Control API logs',
      };
  }
}

export function checkToken(control: ControlFacts): Check {
  const id = 'token';
  if (typeof control.token === 'object')
    return { id, status: 'fail', message: control.token.error.message, fix: control.token.error.hint ?? LOGIN };
  if (control.url === undefined) return { id, status: 'ok', message: 'no Control API configured, no token needed' };
  const probe = control.probe;
  if (probe?.kind === 'refused') {
    const forbidden = /HTTP 403/.test(probe.error.message);
    return {
      id,
      status: 'fail',
      message:
        control.token === 'missing' ? `no token is configured, and the Control API requires one` : probe.error.message,
      fix: forbidden
        ? (probe.error.hint ?? 'ask an administrator for access')
        : `get a new token from your Control API administrator, then: ${LOGIN}`,
    };
  }
  if (probe?.kind === 'ok') {
    return control.token === 'missing'
      ? {
          id,
          status: 'warn',
          message: 'no token is configured (the Control API let an anonymous request read the policy)',
          fix: LOGIN,
        }
      : { id, status: 'ok', message: `the token from ${control.tokenSource} is accepted` };
  }
  if (control.token === 'missing') return { id, status: 'fail', message: 'no token is configured', fix: LOGIN };
  return {
    id,
    status: 'warn',
    message: `the token from ${control.tokenSource} could not be checked: the Control API did not answer`,
    fix: 'fix the control-api check first: the token is checked with the same request',
  };
}

export function checkPolicy(facts: DoctorFacts): Check {
  const id = 'policy';
  const resolved = facts.policy.resolved;
  if (resolved === undefined) {
    const e: ErrorInfo = facts.policy.error ?? { code: 'POLICY_MISSING', message: 'no governance policy is available' };
    // Nothing fetched yet from a configured Control API that did not answer with a policy: the control-api (or token)
    // check says why; once it passes, reconcile (or the agent) fetches the policy and keeps a copy.
    const unfetched =
      e.code === 'POLICY_MISSING' && facts.control.url !== undefined && facts.config.policyFile === undefined;
    const fix = unfetched
      ? 'fix the control-api and token checks, then run `blue-agent reconcile` (or start the agent) to fetch the policy'
      : (e.hint ?? LOGIN);
    return { id, status: 'fail', message: e.message, fix };
  }
  const capture = resolved.policy.session_upload === undefined ? 'capture off' : 'capture on';
  const where =
    resolved.source === 'file'
      ? resolved.location
      : resolved.source === 'fetched'
        ? 'from the Control API'
        : 'last-known-good copy';
  const message = `revision ${resolved.revision} (${resolved.source}: ${where}), ${capture}`;
  if (resolved.warnings.length > 0 || resolved.stale) {
    return {
      id,
      status: 'warn',
      message: `${message}; ${resolved.warnings.join('; ') || 'stale'}`,
      fix:
        resolved.source === 'file'
          ? `fix ${resolved.location}`
          : 'fix the control-api check, then run `blue-agent reconcile` to fetch a fresh policy',
    };
  }
  return { id, status: 'ok', message };
}
function safeOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

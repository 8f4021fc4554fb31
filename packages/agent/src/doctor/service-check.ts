/** The doctor's check of the service: the systemd user unit or launchd agent installed, enabled and running. */
import type { ServiceState } from '../service/index.js';
import { LAUNCHD_LABEL } from '../service/spec.js';
import type { ErrorInfo } from '../status/policy.js';
import type { DoctorFacts } from './collect.js';
import type { Check } from './verdict.js';

export function checkService(
  service: ServiceState | { error: ErrorInfo },
  here: Pick<DoctorFacts, 'serviceHere' | 'agent'> = { agent: { running: false, pid: null } },
): Check {
  const id = 'service';
  if ('error' in service)
    return {
      id,
      status: 'warn',
      message: `cannot read the service state: ${service.error.message}`,
      fix: service.error.hint ?? 'run `blue-agent service status` for details',
    };
  const byHand = here.agent.running
    ? `the agent runs (pid ${here.agent.pid}) without a service manager: it stops when its session ends`
    : undefined;
  if (service.manager === 'none') {
    if (byHand !== undefined)
      return {
        id,
        status: 'ok',
        message: `no service manager here${service.detail === '' ? '' : ` (${service.detail})`}; ${byHand}`,
      };
    return {
      id,
      status: 'warn',
      message:
        `no service manager to run the agent${service.detail === '' ? '' : ` (${service.detail})`}: drift ` +
        `is not repaired and drains are not scheduled`,
      fix: 'run `blue-agent run` from your login session (or start it with your own supervisor)',
    };
  }
  const unit = service.unitFile ?? 'the unit';
  if (here.serviceHere !== undefined) {
    // `service install` cannot work in this session: say why, and what does.
    const { why, fix } = here.serviceHere;
    const leftover = service.installed && service.ours ? `; ${unit} is installed but cannot run` : '';
    if (byHand !== undefined)
      return {
        id,
        status: 'ok',
        message: `the ${service.manager} service cannot run here: ${why}${leftover}; ${byHand}`,
      };
    return {
      id,
      status: 'warn',
      message:
        `the ${service.manager} service cannot run here: ${why}${leftover}; the agent does not run, so ` +
        `drift is not repaired and drains are not scheduled`,
      fix,
    };
  }
  const detail = service.detail === '' ? '' : ` (${service.detail})`;
  const warn = (message: string, fix = 'blue-agent service install'): Check => ({ id, status: 'warn', message, fix });
  if (!service.installed)
    return warn(`the ${service.manager} service is not installed${byHand === undefined ? '' : `; ${byHand}`}`);
  if (!service.ours)
    return warn(
      `${unit} exists but was not written by blue-agent`,
      `move ${unit} aside, then run \`blue-agent service install\``,
    );
  if (!service.current) return warn(`${unit} is out of date${detail}`);
  if (service.enabled === false) return warn(`${unit} is installed but not enabled`);
  if (service.active === false) {
    return warn(
      `${unit} is installed but the agent is not running${detail}`,
      'blue-agent service install (it starts the service); `blue-agent service status` shows why it stopped',
    );
  }
  if (service.enabled === undefined || service.active === undefined) {
    // The manager could not be asked (a timeout, or no answer that says why): nothing says the agent runs.
    const ask =
      service.manager === 'systemd'
        ? 'systemctl --user status blue-agent.service'
        : `launchctl print gui/$(id -u)/${LAUNCHD_LABEL}`;
    return warn(
      `${unit} is installed, but ${service.manager} could not say whether it is enabled and running${detail}`,
      `run \`${ask}\` (from your login session) to see its state; \`blue-agent service install\` enables and starts it`,
    );
  }
  const flags = `${service.enabled === true ? ', enabled' : ''}${service.active === true ? ', running' : ''}`;
  return { id, status: 'ok', message: `${service.manager}: ${unit} installed${flags}` };
}

/**
 * Pure: the doctor's verdicts. Each check turns facts into one line — ok, warn, fail or skip — and every warn or fail
 * carries a concrete command or step that fixes it. A check that cannot be judged because another one failed first
 * (the agent config does not parse) is `skip`: shown and counted, never a failure of its own.
 */
import semver from 'semver';
import { HARNESSES } from '../harnesses/names.js';
import { AT_RISK_DAYS, type SessionsStatus } from '../sweep/status.js';
import type { ErrorInfo } from '../status/policy.js';
import type { DoctorFacts } from './collect.js';
import { checkService } from './service-check.js';
import { checkHarnesses, harnessChecks, HARNESS_CHECK_IDS } from './harness-checks.js';
export { checkService } from './service-check.js';
export { HARNESS_CHECK_IDS, checkHarness } from './harness-checks.js';
import { checkSpool } from './spool-check.js';
export { checkSpool } from './spool-check.js';
import { checkControlApi, checkToken, checkPolicy } from './control-checks.js';
export { checkControlApi } from './control-checks.js';
import type { Check } from './verdict.js';
export type { Check } from './verdict.js';

/** The message of every check skipped because the agent config does not parse. */
export const SKIPPED_CONFIG = 'skipped: the agent config does not parse';

export function runChecks(facts: DoctorFacts): Check[] {
  if (facts.config.error !== undefined) {
    // One cause, one failure: everything read from the config (the Control API, the token, the policy, the harnesses
    // judged against it) is skipped rather than reported as failing for a reason it does not have.
    const skip = (id: string): Check => ({ id, status: 'skip', message: SKIPPED_CONFIG });
    return [
      checkNode(facts.node),
      checkConfig(facts.config),
      skip('control-api'),
      skip('token'),
      skip('policy'),
      checkSpool(facts.spool, facts.platform),
      ...HARNESSES.map((h) => skip(`harness:${h}`)),
      ...HARNESS_CHECK_IDS.map(skip),
      checkService(facts.service, facts),
    ];
  }
  return [
    checkNode(facts.node),
    checkConfig(facts.config),
    checkControlApi(facts.control, facts.config.policyFile),
    checkToken(facts.control),
    checkPolicy(facts),
    checkSpool(facts.spool, facts.platform),
    ...checkHarnesses(facts.harnesses),
    ...harnessChecks(facts.harnesses),
    ...(facts.sessions === undefined ? [] : [checkSessionsAtRisk(facts.sessions)]),
    checkService(facts.service, facts),
  ];
}

/** Sessions a harness deletes by its own cleanup soon that were never uploaded. */
export function checkSessionsAtRisk(sessions: SessionsStatus | { error: ErrorInfo }): Check {
  if ('error' in sessions)
    return {
      id: 'sessions-at-risk',
      status: 'warn',
      message: `local sessions could not be looked at: ${sessions.error.message}`,
      fix: sessions.error.hint ?? 'run `blue-agent status` for details',
    };
  const risky = sessions.harnesses.filter((h) => h.at_risk !== null && h.at_risk.count > 0);
  if (risky.length === 0)
    return {
      id: 'sessions-at-risk',
      status: 'ok',
      message: 'no session a harness is about to delete is missing from the Control API',
    };
  return {
    id: 'sessions-at-risk',
    status: 'warn',
    message: risky
      .map(
        (h) =>
          `${h.at_risk!.count} ${h.harness} session(s) never uploaded will be deleted by ${h.harness} within ` +
          `${AT_RISK_DAYS} days (${h.at_risk!.setting}: ${h.at_risk!.days} days, ${h.at_risk!.file})`,
      )
      .join('; '),
    fix:
      `run ${risky.map((h) => `\`blue-agent backfill --harness ${h.harness}\``).join(' and ')}, or raise the ` +
      `setting`,
  };
}

export function checkNode(node: DoctorFacts['node']): Check {
  const version = semver.coerce(node.version, { includePrerelease: true })?.version;
  const ok = version !== undefined && semver.satisfies(version, node.required, { includePrerelease: true });
  if (ok) return { id: 'node', status: 'ok', message: `Node.js ${node.version} (blue-agent needs ${node.required})` };
  return {
    id: 'node',
    status: 'fail',
    message: `Node.js ${node.version} is older than blue-agent needs (${node.required})`,
    fix:
      `install Node.js ${node.required.replace(/^>=\s*/, '')} or newer (24 LTS recommended), then run ` +
      `\`blue-agent reconcile\` and \`blue-agent service install\` with it so the hooks and the service use it`,
  };
}

function checkConfig(config: DoctorFacts['config']): Check {
  if (config.error !== undefined) {
    // The message names the file, line and column; the fix says what to do there.
    const hint = config.error.hint;
    return {
      id: 'config',
      status: 'fail',
      message: config.error.message,
      fix: hint === undefined ? `fix ${config.file}` : `${hint.replace(/\.$/, '')} (in ${config.file})`,
    };
  }
  return {
    id: 'config',
    status: 'ok',
    message: config.exists ? config.file : `${config.file} (absent: defaults apply)`,
  };
}

/**
 * Pure: the doctor's verdicts. Each check turns facts into one line — ok, warn, fail or skip — and every warn or fail
 * carries a concrete command or step that fixes it. A check that cannot be judged because another one failed first
 * (the agent config does not parse) is `skip`: shown and counted, never a failure of its own.
 */
import semver from 'semver';
import type { ServiceState } from '../service/index.js';
import { LAUNCHD_LABEL } from '../service/spec.js';
import { ADAPTERS } from '../harnesses/index.js';
import { HARNESSES } from '../harnesses/names.js';
import type { HarnessName } from '@blue-agent/contract/schema/index.js';
import type { HarnessStatus } from '../status/collect.js';
import { AT_RISK_DAYS, type SessionsStatus } from '../sweep/status.js';
import type { ErrorInfo } from '../status/policy.js';
import { pendingNote } from '../status/render.js';
import { certifyCommand } from '../reconcile/decide.js';
import type { ControlFacts, DoctorFacts, SpoolFacts } from './collect.js';

/** A check's verdict: every warning and failure carries what to run or do (the type will not let one without). */
export type Check =
  | { id: string; status: 'ok' | 'skip'; message: string; fix?: undefined }
  | { id: string; status: 'warn' | 'fail'; message: string; fix: string };

const LOGIN = 'blue-agent login --control-url URL';

/** The message of every check skipped because the agent config does not parse. */
export const SKIPPED_CONFIG = 'skipped: the agent config does not parse';

/** The checks harnesses add of their own (such as a hook trust), in registry order, each with its harness. */
const HARNESS_CHECKS = Object.values(ADAPTERS).flatMap((adapter) =>
  (adapter.doctorChecks ?? []).map((check) => ({ harness: adapter.name, check })),
);

/** The ids of the checks harnesses add, for the help text. */
export const HARNESS_CHECK_IDS: readonly string[] = HARNESS_CHECKS.map(({ check }) => check.id);

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
          `${control.urlSource === 'BLUE_AGENT_CONTROL_URL' ? 'BLUE_AGENT_CONTROL_URL' : 'control_url of the agent config'}; ` +
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

function checkToken(control: ControlFacts): Check {
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

function checkPolicy(facts: DoctorFacts): Check {
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

export function checkSpool(spool: SpoolFacts, platform: NodeJS.Platform): Check {
  const id = 'spool';
  if (spool.error !== undefined)
    return { id, status: 'fail', message: spool.error.message, fix: spool.error.hint ?? `check ${spool.stateDir}` };
  if (!spool.stateDirExists)
    return { id, status: 'ok', message: `${spool.stateDir} not created yet (made private on first use)` };
  if (platform === 'win32') return { id, status: 'ok', message: spool.root };
  const foreign = spool.entries.filter((e) => spool.uid !== undefined && e.uid !== spool.uid);
  const linkedDirs = spool.entries.filter(
    (e) => e.kind === 'dir' && e.path !== spool.stateDir && (e.isSymbolicLink || !e.isDirectory),
  );
  const looseDirs = spool.entries.filter((e) => e.kind === 'dir' && e.isDirectory && (e.mode & 0o077) !== 0);
  const looseFiles = spool.entries.filter(
    (e) => e.kind === 'file' && !e.isSymbolicLink && !e.isDirectory && (e.mode & 0o077) !== 0,
  );
  const problems: string[] = [];
  const fixes: string[] = [];
  if (foreign.length > 0) {
    problems.push(
      `${foreign.map((e) => e.path).join(', ')} ${foreign.length === 1 ? 'is' : 'are'} owned by another user`,
    );
    fixes.push(`chown -R "$(id -un)" ${quote(spool.stateDir)}`);
  }
  if (linkedDirs.length > 0) {
    problems.push(
      `${linkedDirs.map((e) => e.path).join(', ')} ` +
        `${linkedDirs.length === 1 ? 'is not a real directory' : 'are not real directories'}`,
    );
    fixes.push(
      `remove ${linkedDirs.map((e) => quote(e.path)).join(' ')} (blue-agent recreates ` +
        `${linkedDirs.length === 1 ? 'it' : 'them'})`,
    );
  }
  if (looseDirs.length > 0) {
    problems.push(`${describeModes(looseDirs)} open to group or others`);
    fixes.push(`chmod 700 ${looseDirs.map((e) => quote(e.path)).join(' ')}`);
  }
  if (looseFiles.length > 0) {
    problems.push(`${looseFiles.length} spool file${looseFiles.length === 1 ? '' : 's'} readable by group or others`);
    fixes.push(
      `chmod 600 ` +
        `${looseFiles.length <= 3 ? looseFiles.map((e) => quote(e.path)).join(' ') : `${quote(spool.root)}/*/*`}`,
    );
  }
  if (problems.length === 0 && spool.unsafe !== undefined) {
    problems.push(spool.unsafe.message);
    fixes.push(spool.unsafe.hint ?? `chmod 700 ${quote(spool.root)}`);
  }
  if (problems.length > 0)
    return {
      id,
      status: 'fail',
      message: `${problems.join('; ')}: captured sessions are not private`,
      fix: fixes.join(' && '),
    };
  return { id, status: 'ok', message: `${spool.root} is private to you` };
}

function describeModes(entries: readonly { path: string; mode: number }[]): string {
  return (
    entries.map((e) => `${e.path} (mode ${e.mode.toString(8).padStart(4, '0')})`).join(', ') +
    (entries.length === 1 ? ' is' : ' are')
  );
}

function checkHarnesses(harnesses: DoctorFacts['harnesses']): Check[] {
  if ('error' in harnesses) {
    return [
      {
        id: 'harnesses',
        status: 'fail',
        message: harnesses.error.message,
        fix: harnesses.error.hint ?? 'run `blue-agent reconcile --dry-run` for details',
      },
    ];
  }
  return harnesses.map(checkHarness);
}

export function checkHarness(h: HarnessStatus): Check {
  const id = `harness:${h.harness}`;
  const what = h.version === null ? h.harness : `${h.harness} ${h.version}`;
  const profile = h.profile === null ? '' : `, profile ${h.profile}`;
  const certify = h.version === null ? '' : certifyCommand(h.harness, h.version);
  switch (h.state) {
    case 'not_installed':
      return { id, status: 'ok', message: `not installed (${h.reason})` };
    case 'error':
      return {
        id,
        status: 'fail',
        message: h.reason,
        fix:
          h.hint ??
          `run \`blue-agent reconcile --dry-run --harness ${h.harness}\` for details, fix what it names, then ` +
            `\`blue-agent reconcile\``,
      };
    case 'unverified_version':
      return {
        id,
        status: 'warn',
        message:
          `${what} is unverified: at or past ${h.profile ?? 'its profile'}'s certified ceiling ` +
          `${h.verified_before ?? '?'}, so capture is off`,
        fix:
          `certify it in a checkout of blue-agent: ${certify}; or let the policy allow it (harnesses.` +
          `${h.harness}.allow_unverified_versions: true); or install a version of ${h.harness} below ` +
          `${h.verified_before ?? 'the ceiling'}`,
      };
    case 'hooks_disabled':
      return {
        id,
        status: 'warn',
        message: `${what}${profile}: the managed hook is in place, but ${h.reason}`,
        fix: `turn hooks back on where the message says, then check with \`blue-agent status\``,
      };
    case 'unsupported_version':
      return {
        id,
        status: 'warn',
        message: `${h.reason}: capture is off`,
        fix:
          `install a version of ${h.harness} that a profile covers (\`blue-agent profiles list\`) and the ` +
          `policy's version_requirement allows`,
      };
    default:
      break;
  }
  if (h.pending !== null) {
    return {
      id,
      status: 'warn',
      message: `${what}${profile}, ${h.state}: ${pendingNote(h.pending)}`,
      fix: 'blue-agent reconcile',
    };
  }
  if (h.verified === false && (h.state === 'active' || h.state === 'awaiting_trust')) {
    return {
      id,
      status: 'warn',
      message:
        `${what}${profile}: capturing with an unverified version (allowed by the policy; ceiling ` +
        `${h.verified_before ?? '?'})`,
      fix: `certify it in a checkout of blue-agent: ${certify}`,
    };
  }
  const certified = h.verified === true && h.verified_before !== null ? `, certified below ${h.verified_before}` : '';
  return { id, status: 'ok', message: `${what}${profile}${certified}: ${h.state}` };
}

function harnessChecks(harnesses: DoctorFacts['harnesses']): Check[] {
  const statusOf = (harness: HarnessName) =>
    'error' in harnesses ? undefined : harnesses.find((h) => h.harness === harness);
  return HARNESS_CHECKS.map(({ harness, check }): Check => ({ id: check.id, ...check.judge(statusOf(harness)) }));
}

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

function safeOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

function quote(file: string): string {
  return /^[\w@%+=:,./-]+$/.test(file) ? file : `'${file.replace(/'/g, `'\\''`)}'`;
}

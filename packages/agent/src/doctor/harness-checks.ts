/** The doctor's checks of each harness: its state under the policy, and the checks it adds of its own. */
import { ADAPTERS } from '../harnesses/index.js';
import type { HarnessName } from '@blue-agent/contract/schema/index.js';
import type { HarnessStatus } from '../status/collect.js';
import { pendingNote } from '../status/render.js';
import { certifyCommand } from '../reconcile/decide.js';
import type { DoctorFacts } from './collect.js';
import type { Check } from './verdict.js';

/** The checks harnesses add of their own (such as a hook trust), in registry order, each with its harness. */
const HARNESS_CHECKS = Object.values(ADAPTERS).flatMap((adapter) =>
  (adapter.doctorChecks ?? []).map((check) => ({ harness: adapter.name, check })),
);

/** The ids of the checks harnesses add, for the help text. */
export const HARNESS_CHECK_IDS: readonly string[] = HARNESS_CHECKS.map(({ check }) => check.id);
export function checkHarnesses(harnesses: DoctorFacts['harnesses']): Check[] {
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

export function harnessChecks(harnesses: DoctorFacts['harnesses']): Check[] {
  const statusOf = (harness: HarnessName) =>
    'error' in harnesses ? undefined : harnesses.find((h) => h.harness === harness);
  return HARNESS_CHECKS.map(({ harness, check }): Check => ({ id: check.id, ...check.judge(statusOf(harness)) }));
}

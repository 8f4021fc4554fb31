/**
 * What the agent tells the Control API after each reconcile (`POST /client-status`, body per
 * schemas/control-client-status.schema.json), and the instance id that names this machine and user there.
 */
import { randomUUID } from 'node:crypto';
import { arch, hostname } from 'node:os';
import type { Context } from '../context.js';
import type { ClientStatusReport } from '../schema/generated/control-client-status.js';
import type { HarnessName } from '../schema/index.js';
import { readTextIfExists, writeStateFile } from '../util/fs.js';

/** What the run loop keeps of one harness from a reconcile report. */
export interface HarnessSummary {
  harness: HarnessName;
  installed: boolean;
  version: string | null;
  profile: string | null;
  state: string;
  reason: string;
  action: string;
  /** Files the reconcile changed (or failed on). */
  files: string[];
}
const INSTANCE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The id of this agent installation: made once, kept in the state directory (one per machine and user). */
export async function instanceId(ctx: Context): Promise<string> {
  const file = ctx.paths.instanceIdFile;
  const existing = (await readTextIfExists(file))?.trim();
  if (existing !== undefined && INSTANCE_ID.test(existing)) return existing;
  const id = randomUUID();
  await writeStateFile(file, `${id}\n`);
  return id;
}

function capture(state: string): 'active' | 'inactive' | 'error' {
  return state === 'active' ? 'active' : state === 'error' ? 'error' : 'inactive';
}

export function clientStatusBody(
  ctx: Context,
  id: string,
  report: { harnesses: readonly HarnessSummary[] } | undefined,
  revision: number | string | undefined,
  corrected: ReadonlySet<string>,
): ClientStatusReport {
  const harnesses: NonNullable<ClientStatusReport['harnesses']> = {};
  for (const h of report?.harnesses ?? []) {
    const note = corrected.has(h.harness) ? ' (drift corrected: the managed hook was restored)' : '';
    harnesses[h.harness] = {
      installed: h.installed,
      version: h.version === null ? null : h.version.slice(0, 64),
      profile: h.profile,
      capture: capture(h.state),
      detail: `${h.state}: ${h.reason}${note}`.slice(0, 1024),
    };
  }
  return {
    instance_id: id,
    hostname: hostname().slice(0, 255),
    client_version: ctx.self.version.slice(0, 64),
    platform: `${ctx.platform}-${arch()}`.slice(0, 32),
    policy_revision: revision === undefined ? null : revision,
    harnesses,
  };
}

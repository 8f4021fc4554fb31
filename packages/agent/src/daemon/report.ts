/**
 * What the agent tells the Control API after each reconcile (`POST /client-status`, Blue's ClientStatusReport:
 * schemas/control-client-status.schema.json), and the instance id that names this machine and user there.
 */
import { arch, hostname } from 'node:os';
import type { Context } from '../context.js';
import type {
  ClientStatusReport,
  HarnessInventoryEntry,
} from '@blue-agent/contract/schema/generated/control-client-status.js';
import type { HarnessName } from '@blue-agent/contract/schema/index.js';
import { MAX_CLIENT_STATUS_BYTES } from '@blue-agent/contract/schema/limits.js';
import { readTextIfExists, writeStateFile } from '@blue-agent/contract/util/fs.js';
import { randomUuid } from '@blue-agent/contract/util/startup/fs-light.js';
import { maskSecrets } from '@blue-agent/contract/util/secrets.js';

/** What the run loop keeps of one harness from a reconcile report (made in the task child: plain JSON). */
export interface HarnessSummary {
  harness: HarnessName;
  installed: boolean;
  path: string | null;
  raw_version: string | null;
  version: string | null;
  profile: string | null;
  /** The profile's interval is deprecated. */
  deprecated: boolean;
  /** The policy lets it capture: allowed_harnesses is absent or names it. */
  allowed: boolean;
  /**
   * This blue-agent can capture it: not installed (nothing to judge), or a profile with session capture covers the
   * installed version. False when the version is outside every profile or could not be read.
   */
  supported: boolean;
  /** False: the version is at or past its profile's certified ceiling. */
  verified: boolean | null;
  state: string;
  reason: string;
  /** With state error: the error's code. */
  code?: string;
  action: string;
  /** Files the reconcile changed (or failed on). */
  files: string[];
  /** A managed file it could not read or write safely. */
  file_error: boolean;
}

const INSTANCE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The id of this agent installation: made once, kept in the state directory (one per machine and user). */
export async function instanceId(ctx: Context): Promise<string> {
  const file = ctx.paths.instanceIdFile;
  const existing = (await readTextIfExists(file))?.trim();
  if (existing !== undefined && INSTANCE_ID.test(existing)) return existing;
  const id = randomUuid();
  await writeStateFile(file, `${id}\n`);
  return id;
}

/** Blue's client names platforms as Rust's `std::env::consts::OS` does; the server compares them. */
const PLATFORMS: Partial<Record<NodeJS.Platform, string>> = { darwin: 'macos', win32: 'windows' };
/** And architectures as `std::env::consts::ARCH` does. */
const ARCHITECTURES: Record<string, string> = { x64: 'x86_64', arm64: 'aarch64', ia32: 'x86' };

const STATE_CODE = /^[A-Z][A-Z0-9_]{0,63}$/;

/**
 * One harness as the contract's HarnessInventoryEntry. The contract's fields say only whether it is installed and
 * reconciled; its real state (`awaiting_trust`: the hook is written but the harness will not run it yet) is in the
 * extensions `state`, `state_code` (an error's code) and `state_reason` (the reason no compatibility field carries).
 * `drift_corrected`, another extension (the contract's entries are open, and Blue's server keeps `harnesses` as
 * sent), says this report follows a reconcile that put back a managed hook somebody had changed or removed.
 */
export function inventoryEntry(
  h: HarnessSummary,
  corrected: boolean,
): HarnessInventoryEntry & { drift_corrected?: true } {
  const text = (value: string, max: number) => reportText(value, max);
  const failed = h.state === 'error';
  const warning =
    h.state === 'unverified_version'
      ? h.reason
      : h.verified === false && h.state === 'active'
        ? `${h.version ?? 'this version'} is at or past the certified ceiling of ${h.profile ?? 'its profile'}; ` +
          `captured because the policy allows unverified versions`
        : undefined;
  const error = failed || (h.installed && !h.supported);
  const explained = error || warning !== undefined || h.state === 'active' || h.state === 'not_installed';
  return {
    name: h.harness,
    api_allowed: h.allowed,
    client_supported: h.supported,
    installed: h.installed,
    reconciled: !failed,
    ...(h.path === null ? {} : { path: text(h.path, 4096) }),
    ...(h.raw_version === null ? {} : { raw_version: text(h.raw_version, 256) }),
    ...(h.version === null ? {} : { version: text(h.version, 64) }),
    ...(h.profile === null ? {} : { compatibility_profile: text(h.profile, 256) }),
    ...(h.profile === null ? {} : { compatibility_deprecated: h.deprecated }),
    ...(error ? { compatibility_error: text(h.reason, 1024) } : {}),
    ...(warning === undefined ? {} : { compatibility_warning: text(warning, 1024) }),
    state: h.state.slice(0, 32),
    ...(failed && h.code !== undefined && STATE_CODE.test(h.code) ? { state_code: h.code } : {}),
    ...(explained ? {} : { state_reason: text(h.reason, 1024) }),
    ...(corrected ? { drift_corrected: true as const } : {}),
  };
}

type Report = ClientStatusReport & { architecture: string };

/**
 * The report after a reconcile of `revision`: `applied` when every harness reconciled without error, `files_ok` when
 * no managed file was left unreadable or unwritten, and the first failed harness as `reconciliation_attempt` with its
 * reason as `error` (the contract pairs them).
 */
export function clientStatusBody(
  ctx: Context,
  id: string,
  report: { harnesses: readonly HarnessSummary[] } | undefined,
  revision: number | string | undefined,
  corrected: ReadonlySet<string>,
): Report {
  const harnesses = report?.harnesses ?? [];
  const configRevision = revision === undefined ? null : String(revision).slice(0, 128);
  const failed = harnesses.find((h) => h.state === 'error');
  return withinBound({
    instance_id: id,
    hostname: hostname().slice(0, 255),
    client_version: ctx.self.version.slice(0, 64),
    platform: (PLATFORMS[ctx.platform] ?? ctx.platform).slice(0, 32),
    // Not in the contract; Blue's own client sends it and its server keeps it.
    architecture: ARCHITECTURES[arch()] ?? arch(),
    config_revision: configRevision,
    applied: configRevision !== null && report !== undefined && failed === undefined,
    files_ok: harnesses.every((h) => !h.file_error),
    harnesses: harnesses.map((h) => inventoryEntry(h, corrected.has(h.harness))),
    ...(failed === undefined || configRevision === null
      ? {}
      : {
          reconciliation_attempt: { harness: failed.harness, revision: configRevision },
          error: reportText(`${failed.harness}: ${failed.reason}`, 4096),
        }),
  });
}

/**
 * The report within what the Control API accepts (MAX_CLIENT_STATUS_BYTES), however long the paths and messages it
 * carries: without the harnesses' paths, then with their messages cut, then with only what each harness's state needs
 * (the contract's flags, the state and an error's code).
 */
function withinBound(body: Report): Report {
  const entries = (body.harnesses ?? []).filter((h) => typeof h !== 'string');
  type Message = 'compatibility_error' | 'compatibility_warning' | 'state_reason';
  const short = (text: string | undefined, key: Message) => (text === undefined ? {} : { [key]: text.slice(0, 128) });
  const smaller: (() => Report)[] = [
    () => ({ ...body, harnesses: entries.map(({ path: _path, ...rest }) => rest) }),
    () => ({
      ...body,
      ...(body.error == null ? {} : { error: body.error.slice(0, 256) }),
      harnesses: entries.map(
        ({
          path: _path,
          raw_version: _raw,
          compatibility_error: error,
          compatibility_warning: warning,
          state_reason: reason,
          ...rest
        }) => ({
          ...rest,
          ...short(error, 'compatibility_error'),
          ...short(warning, 'compatibility_warning'),
          ...short(reason, 'state_reason'),
        }),
      ),
    }),
    () => {
      const { error: _error, reconciliation_attempt: _attempt, hostname, ...rest } = body;
      const state = (h: HarnessInventoryEntry) => ({
        name: h.name,
        api_allowed: h.api_allowed,
        client_supported: h.client_supported,
        installed: h.installed,
        reconciled: h.reconciled,
        ...(h.state === undefined ? {} : { state: h.state }),
        ...(h.state_code === undefined ? {} : { state_code: h.state_code }),
      });
      return { ...rest, hostname: hostname?.slice(0, 64) ?? null, harnesses: entries.map(state) };
    },
  ];
  let fitted = body;
  for (const next of smaller) {
    if (Buffer.byteLength(JSON.stringify(fitted)) <= MAX_CLIENT_STATUS_BYTES) return fitted;
    fitted = next();
  }
  return fitted;
}

/**
 * A text of the report, masked by the one masking rule and bounded: a reason may quote what it could not read (a
 * parser's message shows the start of a settings file, keys and all), and the report is kept on the Control API.
 */
function reportText(value: string, max: number): string {
  return maskSecrets(value).slice(0, max);
}

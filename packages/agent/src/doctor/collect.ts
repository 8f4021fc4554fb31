/**
 * The facts `doctor` judges, gathered in one place: the Node.js version and what package.json asks for, the agent
 * config, one bounded GET /governance-config (reachability, token, policy), the spool's permissions, each harness as
 * a dry-run reconcile sees it, and the service. Nothing is written: no policy cache, no spool folder, no harness file.
 */
import { lstat, readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { loadAgentConfig } from '../config.js';
import { controlSettings } from '../control-api/settings.js';
import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { fetchGovernanceConfig, governanceConfigUrl } from '../control-api/governance-config.js';
import { fetchedPolicy, type ResolvedPolicy } from '../policy/index.js';
import { MAX_POLICY_BYTES } from '@blue-agent/contract/schema/limits.js';
import type { AgentConfig } from '@blue-agent/contract/schema/index.js';
import { serviceStatus, unavailableReason, type ServiceState } from '../service/index.js';
import { SpoolView } from '../spool/index.js';
import { collectSessions, inspectHarnesses, readAgentStatus, type HarnessStatus } from '../status/collect.js';
import type { SessionsStatus } from '../sweep/status.js';
import { errorInfo, readPolicyOffline, type ErrorInfo } from '../status/policy.js';

export interface DoctorOptions {
  /** The Node.js version to judge; defaults to the one running. */
  nodeVersion?: string;
  /** Bound on the Control API request; defaults to 5 s. */
  timeoutMs?: number;
}

export const DEFAULT_PROBE_TIMEOUT_MS = 5_000;
/** What package.json's engines asks for, should it be unreadable. */
export const FALLBACK_NODE_RANGE = '>=22.22';

export type Probe =
  /** The Control API answered with the policy (valid or not). */
  | { kind: 'ok'; policy?: ResolvedPolicy; policyError?: ErrorInfo }
  | { kind: 'unavailable'; reason: string }
  /** 401/403. */
  | { kind: 'refused'; error: ErrorInfo }
  /** Reached, but the answer means a wrong URL or a broken server (404, an oversize body). */
  | { kind: 'error'; error: ErrorInfo };

export interface ControlFacts {
  url: string | undefined;
  urlSource: string | undefined;
  /** control_url (or BLUE_AGENT_CONTROL_URL) is malformed. */
  urlError?: ErrorInfo;
  tokenSource: string;
  token: 'present' | 'missing' | { error: ErrorInfo };
  probe: Probe | undefined;
}

export interface PathFact {
  path: string;
  kind: 'dir' | 'file';
  /** Missing entries are not listed. */
  mode: number;
  uid: number;
  isDirectory: boolean;
  isSymbolicLink: boolean;
}

export interface SpoolFacts {
  stateDir: string;
  root: string;
  stateDirExists: boolean;
  /** The state dir, the spool and its folders, and the record and bundle files in them. */
  entries: PathFact[];
  /** The spool's own safety check refused it. */
  unsafe?: ErrorInfo;
  error?: ErrorInfo;
  uid: number | undefined;
}

export interface DoctorFacts {
  platform: NodeJS.Platform;
  node: { version: string; required: string };
  config: { file: string; exists: boolean; policyFile: string | undefined; error?: ErrorInfo };
  control: ControlFacts;
  policy: { resolved: ResolvedPolicy | undefined; error?: ErrorInfo };
  spool: SpoolFacts;
  harnesses: HarnessStatus[] | { error: ErrorInfo };
  /** Sessions the harnesses' own cleanup will delete before they are uploaded (undefined: not looked at). */
  sessions?: SessionsStatus | { error: ErrorInfo };
  service: ServiceState | { error: ErrorInfo };
  /** Why the service cannot run in this session, and what works instead (undefined: nothing says it cannot). */
  serviceHere?: { why: string; fix: string };
  /** The agent as its state file tells: running (by the service or by hand), and its pid. */
  agent: { running: boolean; pid: number | null };
}

export async function collectDoctorFacts(ctx: Context, options: DoctorOptions = {}): Promise<DoctorFacts> {
  let config: AgentConfig = {};
  let exists = false;
  let configError: ErrorInfo | undefined;
  try {
    const loaded = await loadAgentConfig(ctx);
    config = loaded.config;
    exists = loaded.exists;
  } catch (error) {
    configError = errorInfo(error);
  }

  // A config that does not parse says nothing about the Control API or the token: they are not probed (the checks
  // that read them are skipped).
  const [control, spool, service, required, agent] = await Promise.all([
    configError === undefined
      ? controlFacts(ctx, config, options.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS)
      : unreadControl(),
    spoolFacts(ctx),
    serviceStatus(ctx).catch((error: unknown) => ({ error: errorInfo(error) })),
    requiredNode(ctx),
    readAgentStatus(ctx),
  ]);
  const serviceHere = 'error' in service ? undefined : unavailableReason(ctx, service.availability);

  // The policy the harnesses are judged by: a configured file, else what the Control API just answered, else the
  // last-known-good copy.
  let policy: DoctorFacts['policy'];
  if (configError !== undefined) policy = { resolved: undefined, error: configError };
  else if (config.policy_file === undefined && control.probe?.kind === 'ok') {
    policy =
      control.probe.policy !== undefined
        ? { resolved: control.probe.policy }
        : { resolved: undefined, ...(control.probe.policyError ? { error: control.probe.policyError } : {}) };
  } else {
    const offline = await readPolicyOffline(ctx, config);
    policy = { resolved: offline.resolved, ...(offline.error === undefined ? {} : { error: offline.error }) };
  }

  let harnesses: DoctorFacts['harnesses'];
  if (configError !== undefined) harnesses = { error: configError };
  else {
    try {
      harnesses = await inspectHarnesses(ctx, policy.resolved);
    } catch (error) {
      harnesses = { error: errorInfo(error) };
    }
  }

  return {
    platform: ctx.platform,
    node: { version: options.nodeVersion ?? process.versions.node, required },
    config: {
      file: ctx.paths.configFile,
      exists,
      policyFile: config.policy_file,
      ...(configError === undefined ? {} : { error: configError }),
    },
    control,
    policy,
    spool,
    harnesses,
    ...(Array.isArray(harnesses)
      ? { sessions: await collectSessions(ctx, harnesses).catch((error: unknown) => ({ error: errorInfo(error) })) }
      : {}),
    service,
    ...(serviceHere === undefined ? {} : { serviceHere }),
    agent: { running: agent.state === 'running', pid: agent.pid },
  };
}

/** Control facts left unread: the agent config does not parse. */
async function unreadControl(): Promise<ControlFacts> {
  return { url: undefined, urlSource: undefined, tokenSource: '-', token: 'missing', probe: undefined };
}

/** `engines.node` of blue-agent's own package.json. */
async function requiredNode(ctx: Context): Promise<string> {
  try {
    const pkg = JSON.parse(await readFile(ctx.paths.packageFile, 'utf8')) as { engines?: { node?: unknown } };
    return typeof pkg.engines?.node === 'string' ? pkg.engines.node : FALLBACK_NODE_RANGE;
  } catch {
    return FALLBACK_NODE_RANGE;
  }
}

async function controlFacts(ctx: Context, config: AgentConfig, timeoutMs: number): Promise<ControlFacts> {
  let settings;
  try {
    settings = controlSettings(ctx, config);
  } catch (error) {
    return {
      url: undefined,
      urlSource: undefined,
      urlError: errorInfo(error),
      tokenSource: '-',
      token: 'missing',
      probe: undefined,
    };
  }
  const base = { url: settings.controlUrl, urlSource: settings.controlUrlSource, tokenSource: settings.tokenSource };
  let token: string | undefined;
  let tokenState: ControlFacts['token'];
  try {
    token = await settings.readToken();
    tokenState = token === undefined ? 'missing' : 'present';
  } catch (error) {
    tokenState = { error: errorInfo(error) };
  }
  if (settings.controlUrl === undefined) return { ...base, token: tokenState, probe: undefined };

  const url = governanceConfigUrl(settings.controlUrl);
  let probe: Probe;
  try {
    const outcome = await fetchGovernanceConfig({
      url,
      token,
      tokenSource: settings.tokenSource,
      etag: undefined,
      timeoutMs,
      maxBytes: MAX_POLICY_BYTES,
      userAgent: `blue-agent/${ctx.self.version}`,
      clientVersion: ctx.self.version,
      env: ctx.env,
    });
    if (outcome.kind === 'unavailable') probe = { kind: 'unavailable', reason: outcome.reason };
    else if (outcome.kind === 'not-modified')
      probe = {
        kind: 'error',
        error: {
          code: 'POLICY_UNREACHABLE',
          message: `GET ${url.href} answered 304 Not Modified to an unconditional request`,
        },
      };
    else
      probe = {
        kind: 'ok',
        ...probedPolicy(
          ctx,
          config,
          settings.controlUrl,
          url.href,
          outcome.text,
          outcome.etag,
          outcome.requiredClientVersion,
        ),
      };
  } catch (error) {
    const info = errorInfo(error);
    if (
      error instanceof BlueError &&
      (error.code === 'POLICY_INCOMPATIBLE' || error.code === 'CLIENT_VERSION_MISMATCH')
    ) {
      // A 426: the Control API answers and took the token; it is the policy this blue-agent may not apply.
      probe = { kind: 'ok', policyError: info };
    } else {
      probe =
        error instanceof BlueError && error.code === 'AUTH_FAILED'
          ? { kind: 'refused', error: info }
          : { kind: 'error', error: info };
    }
  }
  return { ...base, token: tokenState, probe };
}

/** The policy the probe fetched, judged as `resolvePolicy` judges it (nothing is cached). */
function probedPolicy(
  ctx: Context,
  config: AgentConfig,
  controlUrl: string,
  location: string,
  text: string,
  etag: string | undefined,
  headerPin: string | undefined,
): { policy?: ResolvedPolicy; policyError?: ErrorInfo } {
  try {
    const originRules = { controlUrl, allowedOrigins: config.allowed_upload_origins };
    return {
      policy: fetchedPolicy(text, {
        location,
        etag,
        now: ctx.clock.now(),
        originRules,
        clientVersion: ctx.self.version,
        headerPin,
      }),
    };
  } catch (error) {
    return { policyError: errorInfo(error) };
  }
}

/** How many files inside the spool are looked at, at most: enough to catch a loose mode, bounded in time. */
const MAX_SPOOL_FILES = 2_000;

async function spoolFacts(ctx: Context): Promise<SpoolFacts> {
  const view = new SpoolView(ctx.paths);
  const { stateDir, root } = view;
  const facts: SpoolFacts = { stateDir, root, stateDirExists: false, entries: [], uid: process.getuid?.() };
  try {
    const state = await pathFact(stateDir, 'dir', true);
    if (state === undefined) return facts;
    facts.stateDirExists = true;
    facts.entries.push(state);
    const spool = await pathFact(root, 'dir', false);
    if (spool === undefined) return facts;
    facts.entries.push(spool);
    let complete = true;
    let files = 0;
    for (const folder of view.folders()) {
      const dir = folder.path;
      const fact = await pathFact(dir, 'dir', false);
      if (fact === undefined) {
        complete = false;
        continue;
      }
      facts.entries.push(fact);
      if (!fact.isDirectory || folder.transient) continue;
      for (const name of await readdir(dir).catch(() => [] as string[])) {
        if (files++ >= MAX_SPOOL_FILES) break;
        const file = await pathFact(path.join(dir, name), 'file', false);
        if (file !== undefined) facts.entries.push(file);
      }
    }
    // The spool's own check (what capture and drain enforce); a spool that lacks folders fails it, and capture and
    // drain make them.
    if (complete) await view.checkSafe();
  } catch (error) {
    if (error instanceof BlueError && error.code === 'SPOOL_UNSAFE') facts.unsafe = errorInfo(error);
    else facts.error = errorInfo(error);
  }
  return facts;
}

async function pathFact(file: string, kind: 'dir' | 'file', follow: boolean): Promise<PathFact | undefined> {
  let info;
  try {
    info = await lstat(file);
    if (follow && info.isSymbolicLink()) info = await stat(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return {
    path: file,
    kind,
    mode: info.mode & 0o7777,
    uid: info.uid,
    isDirectory: info.isDirectory(),
    isSymbolicLink: info.isSymbolicLink(),
  };
}

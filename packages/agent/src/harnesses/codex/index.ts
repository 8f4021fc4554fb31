/**
 * Codex CLI. Hooks live in `$CODEX_HOME/config.toml` (`[[hooks.<Event>]]` / `[[hooks.<Event>.hooks]]`) or in
 * `$CODEX_HOME/hooks.json`; Codex loads both (hooks.json first) and warns when both hold hooks
 * (codex-rs/hooks/src/engine/discovery.rs). Hooks are on by default from the `hooks` feature (stable in 0.171); the
 * managed hook still needs the user's trust, which only Codex's `/hooks` records.
 */
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { parse as parseLenientJson } from 'jsonc-parser';
import type { Context } from '../../context.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';
import { readBytesIfExistsSync, readNativeText } from '@blue-agent/contract/util/fs.js';
import { decodeLossless } from '@blue-agent/contract/util/lossless.js';
import { HARNESS_DISPLAY_NAMES } from '../names.js';
import type { HarnessAdapter, HarnessDoctorCheck, ManagedHook } from '../types.js';
import { planCodexHook } from './plan.js';
import { parseJsonText } from './plan-json.js';
import { isRecord, listHandlers, own } from './model.js';
import { codexTranscriptReader } from '@blue-agent/contract/harnesses/codex/transcript.js';
import { parseTomlText } from './plan-toml.js';
import { hookStateKey, hookStates, hooksFeatureOff, hookTrustHash } from './trust.js';

export const CONFIG_TOML = 'config.toml';
export const HOOKS_JSON = 'hooks.json';

function configRoot(ctx: Context): string {
  const home = ctx.env.CODEX_HOME;
  return home !== undefined && home !== '' && path.isAbsolute(home) ? home : path.join(ctx.paths.home, '.codex');
}

/** The directory as Codex names it in hook-state keys: CODEX_HOME is canonicalised, `~/.codex` is not. */
function keyRoot(ctx: Context): string {
  const root = configRoot(ctx);
  const home = ctx.env.CODEX_HOME;
  if (home === undefined || home === '' || !path.isAbsolute(home)) return root;
  try {
    return realpathSync(root);
  } catch {
    return root;
  }
}

/** Whether hooks.json holds hooks. A file that cannot be read safely does not; planning then reports why. */
async function holdsHooks(file: string): Promise<boolean> {
  let text: string | null;
  try {
    text = await readNativeText(file);
  } catch {
    return false;
  }
  if (text === null) return false;
  try {
    const value: unknown = parseLenientJson(text, [], { allowTrailingComma: true });
    return isRecord(value) && Object.hasOwn(value, 'hooks');
  } catch {
    return false;
  }
}

function readConfig(file: string): Record<string, unknown> {
  try {
    const bytes = readBytesIfExistsSync(file);
    return bytes === null ? {} : parseTomlText(decodeLossless(bytes), file);
  } catch {
    return {};
  }
}

/** How the trust reason says that hooks are off altogether (the doctor check tells the two fixes apart by it). */
const HOOKS_OFF = '[features] hooks = false';
const TRUST_STEP = 'open `codex`, run /hooks and trust the blue-agent capture hook';

function pendingState(
  ctx: Context,
  text: string,
  hook: ManagedHook,
): { state: 'awaiting_trust'; reason: string } | undefined {
  const root = keyRoot(ctx);
  try {
    const isJson = text.trimStart().startsWith('{');
    const source = path.join(root, isJson ? HOOKS_JSON : CONFIG_TOML);
    const configFile = path.join(configRoot(ctx), CONFIG_TOML);
    const document = isJson ? parseJsonText(text, source).value : parseTomlText(text, source);
    // Trust state always lives in the user's config.toml, whichever file holds the hook.
    const config = isJson ? readConfig(configFile) : document;
    const hooks = own(document, 'hooks');
    const target = listHandlers(hooks).find((h) => h.managed && h.event === hook.event);
    if (target === undefined || !isRecord(hooks)) return undefined;
    const groups = own(hooks, hook.event) as unknown[];
    const group = isRecord(groups[target.group]) ? (groups[target.group] as Record<string, unknown>) : {};
    const key = hookStateKey(source, hook.event, target.group, target.handler);
    // Named as the TOML key Codex keeps its trust under: bare, `/path/config.toml:session_end:0:0` reads as a line and
    // column.
    const where = `hooks.state."${key}"`;
    const hash = hookTrustHash(hook.event, group, target.value);
    if (hooksFeatureOff(config)) {
      return {
        state: 'awaiting_trust',
        reason: `hooks are turned off in ${configFile} (${HOOKS_OFF}); Codex runs no hook until they are on`,
      };
    }
    const state = hookStates(config).get(key);
    const how = TRUST_STEP;
    if (state?.enabled === false) {
      return {
        state: 'awaiting_trust',
        reason:
          `the managed ${hook.event} hook is disabled in Codex (${where}); open \`codex\`, run /hooks and ` +
          `enable it`,
      };
    }
    if (state?.trustedHash === hash) return undefined;
    if (state?.trustedHash !== undefined) {
      return {
        state: 'awaiting_trust',
        reason:
          `the managed ${hook.event} hook changed since it was trusted (${where}); Codex skips it until you ` +
          `${how} again`,
      };
    }
    return {
      state: 'awaiting_trust',
      reason: `Codex runs the managed ${hook.event} hook only once you trust it (${where}): ${how}`,
    };
  } catch (error) {
    const what = error instanceof Error ? error.message : String(error);
    return { state: 'awaiting_trust', reason: `could not confirm that Codex trusts the managed hook: ${what}` };
  }
}

/** `codex-trust`: Codex runs the managed hook only once the user trusts it in /hooks (and only with hooks on). */
const trustCheck: HarnessDoctorCheck = {
  id: 'codex-trust',
  judge(facts) {
    if (facts === undefined) return { status: 'ok', message: 'Codex not inspected' };
    if (facts.state === 'awaiting_trust') {
      const step = facts.reason.includes(HOOKS_OFF)
        ? "set `hooks = true` under [features] in Codex's config.toml"
        : TRUST_STEP;
      return {
        status: 'warn',
        message: facts.reason,
        fix: facts.pending === null ? step : `run \`blue-agent reconcile\`, then ${step}`,
      };
    }
    if (facts.state === 'active') return { status: 'ok', message: 'Codex trusts the managed hook' };
    return { status: 'ok', message: `no managed Codex hook to trust (${facts.state})` };
  },
};

// Session code (capture, listing, restore) loads when first used: reconcile plans hooks without it.
export const codex: HarnessAdapter = {
  name: 'codex',
  displayName: HARNESS_DISPLAY_NAMES.codex,
  environment: ['CODEX_HOME'],
  hookFormat: 'codex-config-toml',
  transcript: codexTranscriptReader,
  doctorChecks: [trustCheck],
  configRoot,
  async hookFile(ctx: Context, interval: Interval): Promise<string> {
    const root = configRoot(ctx);
    const json = path.join(root, HOOKS_JSON);
    if (await holdsHooks(json)) return json;
    return path.join(root, interval.capture?.hook.file ?? CONFIG_TOML);
  },
  knownHookFiles(ctx: Context): string[] {
    const root = configRoot(ctx);
    return [path.join(root, CONFIG_TOML), path.join(root, HOOKS_JSON)];
  },
  planHook: planCodexHook,
  async collectSession(ctx, input) {
    const { collectCodexSession } = await import('./session.js');
    return collectCodexSession(ctx, input, configRoot(ctx));
  },
  async listSessions(ctx, interval, limit) {
    const { listCodexSessions } = await import('./listing.js');
    return listCodexSessions(configRoot(ctx), interval, limit);
  },
  async planRestore(ctx, input) {
    const { planCodexRestore } = await import('./restore.js');
    return planCodexRestore(ctx, input, configRoot(ctx));
  },
  pendingState,
};

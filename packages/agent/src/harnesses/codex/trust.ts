/**
 * Codex hook trust, read only. A non-managed hook runs only when `[hooks.state."<key>"]` in the user's config.toml
 * carries `trusted_hash` equal to the hook's current hash (and `enabled` is not false).
 *
 * Sources: codex-rs/hooks/src/lib.rs (`hook_key`, `hook_event_key_label`), codex-rs/hooks/src/engine/discovery.rs
 * (`command_hook_hash`, `NormalizedHookIdentity`, `hook_trust_status`), codex-rs/config/src/fingerprint.rs
 * (`version_for_toml`: sha256 of key-sorted compact JSON), codex-rs/hooks/src/config_rules.rs
 * (`hook_states_from_stack`).
 * Key and hash were checked against `hooks/list` of the codex-cli 0.171.0 app server.
 */
import { sha256Hex } from '@blue-agent/contract/util/startup/sha256.js';
import { isRecord, own, SESSION_END_MAX_TIMEOUT } from './model.js';

/** Events whose `matcher` Codex keeps (and hashes); for the others it is ignored. */
const EVENTS_WITH_MATCHERS = new Set([
  'PreToolUse',
  'PermissionRequest',
  'PostToolUse',
  'PreCompact',
  'PostCompact',
  'SessionStart',
  'SessionEnd',
  'SubagentStart',
  'SubagentStop',
]);

/** `SessionEnd` -> `session_end`, the label in persisted hook-state keys. */
export function eventKeyLabel(event: string): string {
  return event.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}

/** `<absolute source file>:<event label>:<group index>:<handler index>`. */
export function hookStateKey(sourceFile: string, event: string, group: number, handler: number): string {
  return `${sourceFile}:${eventKeyLabel(event)}:${group}:${handler}`;
}

/** The timeout Codex runs (and hashes) a command hook with. */
export function effectiveTimeout(event: string, timeout: unknown): number {
  const given = typeof timeout === 'number' && Number.isInteger(timeout) && timeout >= 0 ? timeout : undefined;
  if (event === 'SessionEnd') return Math.max(1, Math.min(given ?? 1, SESSION_END_MAX_TIMEOUT));
  return Math.max(1, given ?? 600);
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (isRecord(value)) {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, sortKeys(value[key])]),
    );
  }
  return value;
}

/**
 * The hash Codex compares with `trusted_hash`: the event label plus the group with only this handler, normalised
 * (timeout resolved, absent optional fields dropped), as key-sorted compact JSON, sha256, `sha256:<hex>`.
 */
export function hookTrustHash(event: string, group: Record<string, unknown>, handler: Record<string, unknown>): string {
  const normalized: Record<string, unknown> = {
    type: 'command',
    command: own(handler, 'command'),
    timeout: effectiveTimeout(event, own(handler, 'timeout')),
    async: own(handler, 'async') === true,
  };
  const statusMessage = own(handler, 'statusMessage');
  if (typeof statusMessage === 'string') normalized.statusMessage = statusMessage;
  const identity: Record<string, unknown> = { event_name: eventKeyLabel(event), hooks: [normalized] };
  const matcher = own(group, 'matcher');
  if (EVENTS_WITH_MATCHERS.has(event) && typeof matcher === 'string') identity.matcher = matcher;
  const json = JSON.stringify(sortKeys(identity));
  return `sha256:${sha256Hex(json)}`;
}

export interface HookState {
  enabled?: boolean;
  trustedHash?: string;
}

/** `[hooks.state]` of a parsed config.toml; malformed entries are skipped, as Codex does. */
export function hookStates(config: Record<string, unknown>): Map<string, HookState> {
  const states = new Map<string, HookState>();
  const hooks = own(config, 'hooks');
  const table = isRecord(hooks) ? own(hooks, 'state') : undefined;
  if (!isRecord(table)) return states;
  for (const [rawKey, value] of Object.entries(table)) {
    const key = rawKey.trim();
    if (key === '' || !isRecord(value)) continue;
    const enabled = own(value, 'enabled');
    const trusted = own(value, 'trusted_hash');
    if (
      (enabled !== undefined && typeof enabled !== 'boolean') ||
      (trusted !== undefined && typeof trusted !== 'string')
    )
      continue;
    const state: HookState = states.get(key) ?? {};
    if (typeof enabled === 'boolean') state.enabled = enabled;
    if (typeof trusted === 'string') state.trustedHash = trusted;
    states.set(key, state);
  }
  return states;
}

/** `[features] hooks = false` (or its old name `codex_hooks`) turns every hook off. */
export function hooksFeatureOff(config: Record<string, unknown>): boolean {
  const features = own(config, 'features');
  return isRecord(features) && (own(features, 'hooks') === false || own(features, 'codex_hooks') === false);
}

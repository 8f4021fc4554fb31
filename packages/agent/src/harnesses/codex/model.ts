/**
 * What the Codex hook files mean, independent of their syntax: where handlers sit, which are managed, what the
 * managed handler should look like, and the user's entries with the managed ones taken out.
 */
import { BlueError, errorAt, lineColumnAt } from '@blue-agent/contract/errors.js';
import { isTomlTable } from '../../harness-kit/toml-text.js';
import { isManagedCommand } from '../../harness-kit/signature.js';
import type { ManagedHook } from '../types.js';

/**
 * Codex clamps a SessionEnd hook's timeout to 1..3 seconds (default 1; codex-rs/hooks/src/events/session_end.rs,
 * seen as "clamping SessionEnd hook timeout to 3s" from codex-cli 0.171.0); other events default to 600 s.
 */
export const SESSION_END_MAX_TIMEOUT = 3;

/** A table of config.toml or an object of hooks.json. */
export const isRecord = isTomlTable;

export function own(obj: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(obj, key) ? obj[key] : undefined;
}

export function desiredTimeout(hook: ManagedHook): number {
  const raw = Number.isFinite(hook.timeoutSeconds) ? Math.round(hook.timeoutSeconds) : 1;
  const capped = hook.event === 'SessionEnd' ? Math.min(raw, SESSION_END_MAX_TIMEOUT) : raw;
  return Math.max(1, capped);
}

export function isManagedHandler(handler: unknown): boolean {
  if (!isRecord(handler)) return false;
  const command = own(handler, 'command');
  return typeof command === 'string' && isManagedCommand(command, 'codex');
}

/** True when a managed handler already says exactly what `desired` wants. */
export function handlerIsRight(handler: Record<string, unknown>, desired: ManagedHook): boolean {
  return (
    own(handler, 'type') === 'command' &&
    own(handler, 'command') === desired.command &&
    own(handler, 'timeout') === desiredTimeout(desired)
  );
}

/** The handler value the agent writes. */
export function managedHandlerValue(desired: ManagedHook): Record<string, unknown> {
  return { type: 'command', command: desired.command, timeout: desiredTimeout(desired) };
}

/** Event arrays of a parsed `hooks` value; `state` holds trust state, not events. */
export function eventNames(hooks: Record<string, unknown>): string[] {
  return Object.keys(hooks).filter((name) => name !== 'state' && Array.isArray(hooks[name]));
}

export interface ParsedHandler {
  event: string;
  group: number;
  handler: number;
  value: Record<string, unknown>;
  managed: boolean;
  /** Every handler of its group is managed: the group is the agent's. */
  ownGroup: boolean;
}

/** Every handler of every event, in the order Codex numbers them. */
export function listHandlers(hooks: unknown): ParsedHandler[] {
  const out: ParsedHandler[] = [];
  if (!isRecord(hooks)) return out;
  for (const event of eventNames(hooks)) {
    const groups = hooks[event] as unknown[];
    groups.forEach((group, g) => {
      const handlers = isRecord(group) ? own(group, 'hooks') : undefined;
      if (!Array.isArray(handlers)) return;
      const ownGroup = handlers.length > 0 && handlers.every(isManagedHandler);
      handlers.forEach((handler, h) => {
        if (!isRecord(handler)) return;
        out.push({ event, group: g, handler: h, value: handler, managed: isManagedHandler(handler), ownGroup });
      });
    });
  }
  return out;
}

/** A plain, key-sorted copy for comparisons (dates become strings). */
export function canonical(value: unknown): unknown {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? String(value) : value.toISOString();
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value === 'object' && value !== null) {
    const source = value as Record<string, unknown>;
    const entries = Object.keys(source)
      .sort()
      .map((key) => [key, canonical(source[key])] as const);
    return Object.fromEntries(entries);
  }
  if (typeof value === 'number' && Number.isNaN(value)) return 'NaN';
  if (typeof value === 'bigint') return value.toString();
  return value;
}

/**
 * The user's part of a hooks document: managed handlers removed, groups that held only managed handlers removed,
 * then event arrays and a `hooks` table left empty removed (on both sides of a comparison alike).
 */
export function userView(doc: Record<string, unknown>): string {
  const copy = canonical(doc) as Record<string, unknown>;
  const hooks = own(copy, 'hooks');
  if (isRecord(hooks)) {
    for (const event of eventNames(hooks)) {
      const groups = (hooks[event] as unknown[]).flatMap((group) => {
        if (!isRecord(group)) return [group];
        const handlers = own(group, 'hooks');
        if (!Array.isArray(handlers)) return [group];
        if (handlers.length > 0 && handlers.every(isManagedHandler)) return [];
        return [{ ...group, hooks: handlers.filter((handler) => !isManagedHandler(handler)) }];
      });
      if (groups.length === 0) delete hooks[event];
      else hooks[event] = groups;
    }
    if (Object.keys(hooks).length === 0) delete copy.hooks;
  }
  return JSON.stringify(copy);
}

/**
 * Checks a planned text before it is returned: it must hold exactly the intended managed handler and leave every
 * user entry as it was.
 */
export function checkOutcome(
  file: string,
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  desired: ManagedHook | null,
): void {
  const handlers = listHandlers(own(after, 'hooks')).filter((h) => h.managed);
  const wanted = desired === null ? 0 : 1;
  const right =
    desired === null ||
    (handlers.length === 1 && handlers[0]!.event === desired.event && handlerIsRight(handlers[0]!.value, desired));
  if (handlers.length !== wanted || !right || userView(before) !== userView(after)) {
    throw new BlueError(
      'NATIVE_CONFIG_CONFLICT',
      `${file}: the managed hook cannot be written without changing your own entries`,
      {
        file,
        hint:
          'Check the hooks in this file for an unusual layout (nested tables under a hook, inline arrays); ' +
          'move them to the usual form or remove the blue-agent entry by hand, then run reconcile again.',
      },
    );
  }
}

export function parseError(
  file: string,
  text: string,
  offset: number | undefined,
  what: string,
  hint: string,
): BlueError {
  return errorAt(
    'NATIVE_CONFIG_PARSE',
    file,
    offset === undefined ? undefined : lineColumnAt(text, offset),
    what,
    hint,
  );
}

export function conflictError(file: string, text: string, offset: number, what: string, hint: string): BlueError {
  return errorAt('NATIVE_CONFIG_CONFLICT', file, lineColumnAt(text, offset), what, hint);
}

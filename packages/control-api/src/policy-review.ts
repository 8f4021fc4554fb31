/**
 * What a new policy revision would do that takes an explicit confirmation to publish (`policy publish --confirm`, the
 * dashboard's checkbox): stop session capture on every machine. A policy without `session_upload`, or one that allows
 * no harness blue-agent captures, makes every agent remove its capture hooks at its next reconcile; a typo or a slip
 * must not do that unnoticed.
 */
import { HARNESSES } from '@blue-agent/contract/schema/generated/harness-names.js';

export interface CaptureStop {
  /** Why capture stops, each in words ("it drops session_upload, which the current revision has"). */
  reasons: string[];
  /** What it does to the machines. */
  effect: string;
}

export const CAPTURE_STOP_EFFECT =
  'every machine removes its capture hooks at its next reconcile, and sessions are no longer captured';

/** Whether publishing `next` over `current` (undefined: no revision yet) stops capture everywhere, and why. */
export function captureStops(
  current: Record<string, unknown> | undefined,
  next: Record<string, unknown>,
): CaptureStop | undefined {
  if (current === undefined || !captures(current)) return undefined;
  const reasons: string[] = [];
  if (next.session_upload === undefined) reasons.push('it drops session_upload, which the current revision has');
  else if (allowedHarnesses(next).length === 0)
    reasons.push(`its allowed_harnesses allows none of the harnesses blue-agent captures (${HARNESSES.join(', ')})`);
  return reasons.length === 0 ? undefined : { reasons, effect: CAPTURE_STOP_EFFECT };
}

function captures(body: Record<string, unknown>): boolean {
  return body.session_upload !== undefined && allowedHarnesses(body).length > 0;
}

/** The known harnesses a revision allows (all when it names none). */
function allowedHarnesses(body: Record<string, unknown>): string[] {
  const known: readonly string[] = HARNESSES;
  if (!Array.isArray(body.allowed_harnesses)) return [...known];
  return body.allowed_harnesses.filter((h): h is string => typeof h === 'string' && known.includes(h));
}

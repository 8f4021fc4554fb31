/** A JSON object (not null, not an array): the shape check every reader of parsed JSON makes first. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

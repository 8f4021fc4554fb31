/**
 * The one rule for a native session id, wherever one arrives: a hook payload (capture), a manifest (bundle verify,
 * restore), a presign request (the Control API). Verification accepts only what a restore can place, so the rule is
 * what every harness's restore can use as a file name and as a command-line argument:
 *
 *   - 1 to 512 characters of [A-Za-z0-9._-] (the Control API's bound): no separator, NUL, control or white space;
 *   - a letter or digit first: never `.` or `..`, never a hidden name, never read as an option (`-x`) by
 *     a harness's resume or export command;
 *   - never `.blue-agent-restore` anywhere: restore's own temporary files are named so, and it refuses such paths.
 *
 * schemas/bundle-manifest.schema.json and schemas/control-presign.schema.json carry SESSION_ID_PATTERN_SOURCE as
 * their `pattern` (a test holds them to it). No imports: the capture hook loads this.
 */

export const SESSION_ID_MAX_LENGTH = 512;
export const SESSION_ID_PATTERN_SOURCE = '^(?!.*\\.blue-agent-restore)[A-Za-z0-9][A-Za-z0-9._-]{0,511}$';
export const SESSION_ID_PATTERN = new RegExp(SESSION_ID_PATTERN_SOURCE, 'u');
export const SESSION_ID_RULE = '1 to 512 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit';

/** Which part of the rule `id` breaks (never echoing it), or undefined for a valid id. */
export function sessionIdProblem(id: unknown): string | undefined {
  if (typeof id !== 'string') return 'is not a string';
  if (id.length === 0 || id.length > SESSION_ID_MAX_LENGTH)
    return `must be 1 to ${SESSION_ID_MAX_LENGTH} characters long (it has ${id.length})`;
  if (!/^[A-Za-z0-9._-]*$/.test(id)) return 'may only hold the characters A-Z a-z 0-9 . _ -';
  if (!/^[A-Za-z0-9]/.test(id)) return 'must start with a letter or digit (not ".", "..", "-" or "_")';
  if (id.includes('.blue-agent-restore'))
    return 'must not contain ".blue-agent-restore" (the name of restore\'s temporary files)';
  // The parts above are the pattern, spelled out for messages; the pattern is what decides.
  if (!SESSION_ID_PATTERN.test(id)) return `must be ${SESSION_ID_RULE}`;
  return undefined;
}

export function isSessionId(id: unknown): id is string {
  return sessionIdProblem(id) === undefined;
}

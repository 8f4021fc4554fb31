/** http(s) URLs as the agent and the server both judge them: the one place an origin is worked out. */

/** `scheme://host[:port]` of an http(s) URL (default ports dropped, host lower-cased), or '' when it is not one. */
export function originOf(value: string): string {
  const url = parseHttpUrl(value);
  return url === undefined ? '' : url.origin;
}

/** The URL when `value` is an absolute http: or https: URL, else undefined. */
export function parseHttpUrl(value: string): URL | undefined {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined;
  }
}

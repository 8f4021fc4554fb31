/**
 * Secrets out of log lines and messages, for the agent and the Control API alike: bearer tokens, signed-URL query
 * parameters and `key=value` secrets are masked.
 */
const secretPatterns: RegExp[] = [
  /(authorization\s*[:=]\s*)(bearer\s+)?[^\s",]+/gi,
  /\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi,
  /([?&](?:x-amz-signature|x-amz-credential|x-amz-security-token|signature|sig|token|expires)=)[^&\s"]+/gi,
  /(\b(?:token|secret|password|api[_-]?key)\b\s*[:=]\s*"?)[^\s",]+/gi,
];

/** Masks bearer tokens, signed-URL query parameters and `key=value` secrets in a string. */
export function redact(text: string): string {
  let out = text;
  for (const pattern of secretPatterns) {
    out = out.replace(pattern, (_match, prefix: string, second?: string) =>
      typeof second === 'string' ? `${prefix}${second}[redacted]` : `${prefix}[redacted]`,
    );
  }
  return out;
}

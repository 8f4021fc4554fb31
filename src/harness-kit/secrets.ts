/**
 * Masks obvious secrets in short texts that leave the machine as metadata (a session's title and preview). The
 * captured transcript itself is never altered: this only keeps a pasted key from showing up in a session list.
 *
 * The patterns are deliberately specific (known token prefixes, PEM armour, credentials inside URLs, explicit
 * `password=` style assignments); a generic "long random string" rule would mask commit hashes and ids.
 */

export const REDACTED = '[redacted]';

interface Rule {
  pattern: RegExp;
  /** Replacement; `$1`.. keep the parts around the secret that make the text readable. */
  replace: string;
}

const RULES: readonly Rule[] = [
  // PEM private keys, with or without their END line (a preview may end in the middle of one).
  {
    pattern: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|$)/g,
    replace: REDACTED,
  },
  // Passwords in URLs: scheme://user:password@host. The user name stays, the password goes.
  { pattern: /\b([a-z][a-z0-9+.-]*:\/\/[^\s/:@]*):[^\s/@]+@/gi, replace: `$1:${REDACTED}@` },
  // Bearer tokens; the value must look like a token (long, with a digit), so prose such as "bearer of news" stays.
  { pattern: /\b(Bearer)(\s+)(?=[A-Za-z0-9\-._~+/]*\d)[A-Za-z0-9\-._~+/]{16,}=*/gi, replace: `$1$2${REDACTED}` },
  // OpenAI / Anthropic style keys (sk-..., sk-proj-..., sk-ant-api03-...).
  { pattern: /\bsk-[A-Za-z0-9_-]{16,}/g, replace: REDACTED },
  // Stripe keys.
  { pattern: /\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}/g, replace: REDACTED },
  // GitHub tokens.
  { pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})/g, replace: REDACTED },
  // GitLab, npm, Hugging Face tokens.
  { pattern: /\b(?:glpat-[A-Za-z0-9_-]{20,}|npm_[A-Za-z0-9]{30,}|hf_[A-Za-z0-9]{30,})/g, replace: REDACTED },
  // AWS access key ids.
  { pattern: /\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b/g, replace: REDACTED },
  // Slack tokens (xoxb-, xoxp-, xoxa-, xoxo-, xoxr-, xoxs-) and app-level tokens.
  { pattern: /\b(?:xox[abposr]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,})/g, replace: REDACTED },
  // Google API keys.
  { pattern: /\bAIza[0-9A-Za-z_-]{35}\b/g, replace: REDACTED },
  // JSON Web Tokens.
  { pattern: /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, replace: REDACTED },
  // Explicit assignments: password=..., api_key: "...". Words that also read as prose (secret, token, pwd) count
  // only with `=`, so "the secret: caching" stays readable.
  {
    pattern:
      /\b((?:password|passwd|client[_-]?secret|secret[_-]?key|api[_-]?key|apikey|access[_-]?key|access[_-]?token|auth[_-]?token|refresh[_-]?token|private[_-]?key)["']?\s*[:=]\s*)(["']?)[^\s"',;]{4,}\2/gi,
    replace: `$1$2${REDACTED}$2`,
  },
  { pattern: /\b((?:secret|token|pwd)["']?\s*=\s*)(["']?)[^\s"',;]{4,}\2/gi, replace: `$1$2${REDACTED}$2` },
];

/** The text with every obvious secret replaced by `[redacted]`. */
export function maskSecrets(text: string): string {
  let out = text;
  for (const rule of RULES) out = out.replace(rule.pattern, rule.replace);
  return out;
}

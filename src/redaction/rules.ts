/**
 * Rules of blue-agent's own, for what secretlint's recommended preset leaves to people: PEM private keys of every type,
 * JSON Web Tokens, bearer
 * credentials in headers, credentials assigned in code or configuration (`password=`, `api_key: ...`), and
 * high-entropy values in key-like contexts. Each rule is a pattern whose `secret` group is what gets replaced, and
 * a check that keeps ordinary text (type names, placeholders, variables) out.
 */

export interface Finding {
  start: number;
  end: number;
  kind: string;
}

/** Three base64url parts, the first two JSON objects (`eyJ` is `{"`). */
/**
 * A PEM private key block of any type (secretlint's rule knows only bodies that open with `MI`, which misses SEC1 EC
 * and Ed25519 keys): a base64 body of 40 characters or more, so placeholders (`...`, `<key>`) are left.
 */
const PEM_PRIVATE_KEY = /-----BEGIN (?<type>[A-Z0-9 ]{0,40})PRIVATE KEY(?: BLOCK)?-----(?<body>[A-Za-z0-9+/=\s\\:,-]{40,20000}?)-----END \k<type>PRIVATE KEY(?: BLOCK)?-----/g;
const JWT = /\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/g;
const BEARER = /\b(?:Bearer|Token)\s+(?<secret>[A-Za-z0-9._~+/-]{20,}=*)/g;
const BASIC = /\bBasic\s+(?<secret>[A-Za-z0-9+/]{16,}={0,2})(?![A-Za-z0-9+/=])/g;
/** A credential's name, then `=` or `:`, then its value, optionally quoted. */
const ASSIGNMENT =
  /(?<name>[A-Za-z0-9_.-]*(?:password|passwd|passphrase|pwd|secret|api[_-]?key|apikey|access[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|client[_-]?secret|private[_-]?key|credentials?)[A-Za-z0-9_.-]*)["']?\s*(?:=|:=|:)\s*(?<quote>["'`]?)(?<secret>[^\s"'`,;)}\]]{8,200})\k<quote>/gi;

/** Values that name a secret instead of being one. */
const PLACEHOLDER = /^(?:string|number|boolean|undefined|null|none|true|false|required|optional|password|secret|changeme|example|placeholder|redacted|xxx+|\*+|\.\.\.+|<[^>]*>|\{[^}]*\}|\[REDACTED[^\]]*\])$/i;
const REFERENCE = /^(?:\$|%|process\.|os\.|env\b|ENV\[|getenv|secrets\.|vars\.|self\.|this\.|config\.|settings\.|args\.|options\.|req\.|input\.|data\.|params\.|[A-Za-z_][A-Za-z0-9_]*\(|[A-Z_][A-Z0-9_]*$)/;

/** Bits per character of `value` (Shannon entropy of its characters). */
export function entropy(value: string): number {
  const counts = new Map<string, number>();
  for (const c of value) counts.set(c, (counts.get(c) ?? 0) + 1);
  let bits = 0;
  for (const n of counts.values()) {
    const p = n / value.length;
    bits -= p * Math.log2(p);
  }
  return bits;
}

/** Looks like a credential: letters with digits or symbols (not a word, not a number), or random enough. */
/** A path of identifiers (`credentials.refresh_token!`, `cfg.db.password`): code naming a value, not the value. */
const IDENTIFIER_PATH = /^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+[!?]?$/;

function credentialLike(value: string): boolean {
  if (PLACEHOLDER.test(value) || REFERENCE.test(value) || IDENTIFIER_PATH.test(value)) return false;
  if (/^[a-z]+$/i.test(value) || /^\d+$/.test(value)) return false;
  if (/^[a-z][a-z0-9]*(?:[._-][a-z0-9]+)*$/i.test(value) && entropy(value) < 3.5) return false;
  return /[a-z]/i.test(value) && /[^a-z]/i.test(value);
}

export function ownFindings(text: string): Finding[] {
  const found: Finding[] = [];
  for (const m of text.matchAll(PEM_PRIVATE_KEY)) {
    if ((m.groups!.body!.match(/[A-Za-z0-9+/]/g) ?? []).length >= 40) found.push({ start: m.index, end: m.index + m[0].length, kind: 'PRIVATE_KEY' });
  }
  for (const m of text.matchAll(JWT)) found.push({ start: m.index, end: m.index + m[0].length, kind: 'JWT' });
  for (const [pattern, kind] of [[BEARER, 'BEARER_TOKEN'], [BASIC, 'BASIC_AUTH']] as const) {
    for (const m of text.matchAll(pattern)) {
      const secret = m.groups!.secret!;
      if (PLACEHOLDER.test(secret) || REFERENCE.test(secret) || entropy(secret) < 3) continue;
      const start = m.index + m[0].length - secret.length;
      found.push({ start, end: start + secret.length, kind });
    }
  }
  for (const m of text.matchAll(ASSIGNMENT)) {
    const { name, quote, secret } = m.groups as { name: string; quote: string; secret: string };
    if (!credentialLike(secret)) continue;
    const start = m.index + m[0].length - quote.length - secret.length;
    const password = /pass|pwd/i.test(name);
    found.push({ start, end: start + secret.length, kind: password ? 'PASSWORD' : 'SECRET' });
  }
  return found;
}

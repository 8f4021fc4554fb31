/**
 * The one set of secret rules blue-agent applies to text of a session: what `maskSecrets` masks in every text that
 * leaves the machine beside a session (titles, previews, working folders, remotes, tags, search text), and what the
 * redactor (src/redaction/) adds secretlint's preset to when the policy says `session_upload.redact: secrets`. Each
 * rule finds the span of a secret and names its kind; a secret becomes `[REDACTED:<KIND>]` wherever it is replaced.
 *
 * The rules: PEM private keys of every type (a cut one too), JSON Web Tokens, bearer and basic credentials, passwords
 * in URLs, service tokens by their published prefixes, and credentials assigned to a name that says so (`password=`,
 * `api_key: ...`). A value assigned to such a name is a secret whatever its entropy, unless it is code naming a value
 * (`process.env.X`, `config.password`, `getPassword()`, `hashedPassword`), a type or a placeholder.
 */

export interface Finding {
  start: number;
  end: number;
  kind: string;
}

/** What replaces a secret of `kind`. */
export function marker(kind: string): string {
  return `[REDACTED:${kind}]`;
}

/** A PEM private key block with its END line, and one cut before it (a preview may end inside a key). */
const PEM_BODY = String.raw`(?<body>[A-Za-z0-9+/=\s\\:,-]{40,20000}?)`;
const PEM_PRIVATE_KEY = new RegExp(
  `-----BEGIN (?<type>[A-Z0-9 ]{0,40})PRIVATE KEY(?: BLOCK)?-----${PEM_BODY}` +
    String.raw`-----END \k<type>PRIVATE KEY(?: BLOCK)?-----`,
  'g',
);
const PEM_CUT = /-----BEGIN (?:[A-Z0-9]+ ){0,4}PRIVATE KEY(?: BLOCK)?-----(?:\s|\\n)+[A-Za-z0-9+/=]{8}[\s\S]*$/;
/** Three base64url parts, the first two JSON objects (`eyJ` is `{"`). */
const JWT = /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g;
const BEARER = /\b(?:[Bb]earer|BEARER|Token)\s+(?<secret>[A-Za-z0-9._~+/-]{16,}=*)/g;
const BASIC = /\bBasic\s+(?<secret>[A-Za-z0-9+/]{16,}={0,2})(?![A-Za-z0-9+/=])/g;
/** `scheme://user:password@host`: the user name stays, the password goes. */
const URL_PASSWORD = /(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{0,40}:\/\/[^\s/:@]*:(?<secret>[^\s/@]+)@/gi;

/** Service tokens by their published prefixes. */
const PREFIXED: readonly [RegExp, string][] = [
  [/\bsk-ant-[A-Za-z0-9_-]{16,}/g, 'ANTHROPIC_API_KEY'],
  [/\bsk-(?!ant-)[A-Za-z0-9_-]{16,}/g, 'OPENAI_TOKEN'],
  [/\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}/g, 'STRIPE_KEY'],
  [/\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})/g, 'GITHUB_TOKEN'],
  [/\bglpat-[A-Za-z0-9_-]{20,}/g, 'GITLAB_TOKEN'],
  [/\bnpm_[A-Za-z0-9]{30,}/g, 'NPM_ACCESS_TOKEN'],
  [/\bhf_[A-Za-z0-9]{30,}/g, 'HUGGING_FACE_TOKEN'],
  [/\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b/g, 'AWS_ACCESS_KEY_ID'],
  [/\b(?:xox[abposr]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,})/g, 'SLACK_TOKEN'],
  [/\bAIza[0-9A-Za-z_-]{35}\b/g, 'GOOGLE_API_KEY'],
];

/** Names of credentials: a value assigned to one is a secret. */
const CREDENTIAL = [
  'password',
  'passwd',
  'passphrase',
  'pwd',
  'secret',
  'api[_-]?key',
  'apikey',
  'access[_-]?key',
  'auth[_-]?token',
  'access[_-]?token',
  'refresh[_-]?token',
  'client[_-]?secret',
  'private[_-]?key',
  'secret[_-]?key',
  'credentials?',
].join('|');
/**
 * A credential's name, then `=` or `:`, then its value, optionally quoted. `token` alone, and `_PASS`, count with `=`
 * only, or at the end of an upper-case name. A name starts where a run of name characters starts, and is bounded: the
 * pattern is tried once per run, never again inside one (a long run would otherwise cost its length squared).
 */
const ASSIGNED_NAME = `(?<name>[A-Za-z0-9_.-]{0,80}?(?:${CREDENTIAL}|token|_PASS)[A-Za-z0-9_.-]{0,80})`;
const ASSIGNED_VALUE = `(?<quote>["'\`]?)(?<secret>[^\\s"'\`,;)}\\]]{6,200})\\k<quote>`;
const ASSIGNMENT = new RegExp(
  String.raw`(?<![A-Za-z0-9_.-])${ASSIGNED_NAME}["']?\s*(?<op>=|:=|:)\s*${ASSIGNED_VALUE}`,
  'gi',
);
const MENTIONS_CREDENTIAL = new RegExp(CREDENTIAL, 'i');
/** The name ends in what it holds: `DB_PASSWORD`, `PGPASSWORD`, `stripe_api_key`, `GITHUB_TOKEN`, `DB_PASS`. */
const HOLDS_CREDENTIAL = new RegExp(`(?:${CREDENTIAL.replace('|credentials?', '')})$`, 'i');
const HOLDS_CREDENTIAL_ENV = /[A-Z0-9]_(?:TOKEN|PASS)$/;
/** A JSON key whose string value is judged as assigned to it. */
const CREDENTIAL_KEY = new RegExp(`${CREDENTIAL}|[A-Z0-9]_TOKEN$`, 'i');
/** The shell's working folders, not passwords. */
const NOT_CREDENTIAL_NAME = /^(?:OLD)?PWD$/;

/** Values that name a secret instead of being one. */
const PLACEHOLDER_WORDS =
  'string|number|boolean|undefined|null|none|true|false|required|optional|' +
  'password|passwd|pass|pwd|secret|token|changeme|example|placeholder|redacted';
const PLACEHOLDER_SHAPES = String.raw`xxx+|\*+|\.\.\.+|\u2026+|<[^>]*>|\{[^}]*\}|\[REDACTED[^\]]*\]?`;
const PLACEHOLDER = new RegExp(`^(?:${PLACEHOLDER_WORDS}|${PLACEHOLDER_SHAPES})$`, 'i');
const REFERENCE_PREFIXES =
  String.raw`\$|%|process\.|os\.|env\b|ENV\[|getenv|secrets\.|vars\.|self\.|this\.|config\.|settings\.|` +
  String.raw`args\.|options\.|req\.|input\.|data\.|params\.`;
const REFERENCE = new RegExp(String.raw`^(?:${REFERENCE_PREFIXES}|[A-Za-z_][A-Za-z0-9_]*\(|[A-Z_][A-Z0-9_]*$)`);
/** A path of identifiers (`credentials.refresh_token!`, `cfg.db.password`): code naming a value, not the value. */
const IDENTIFIER_PATH = /^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+[!?]?$/;
/** A call or an expression (`z.string().min(8`, `(await read(f`), a file path, a URL: not a credential's value. */
const CODE_OR_PLACE = /^(?:[\w$.]*\(|\.{0,2}\/|~\/|[a-z][a-z0-9+.-]*:\/\/)/i;
/**
 * What code calls a value: lower-case words joined by `_`, `-` or `.` (`hashed_password`, `db-creds`), or camelCase
 * (`newPassword`), with at most one digit at the end. Passwords people choose mix digits in (`Summer2024x`).
 */
const IDENTIFIER = /^(?:[a-z]+(?:[_.-][a-z]+)*|[a-z]+(?:[A-Z][a-z]+)+)[0-9]?[!?]?$/;

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

/** Code, a type, a placeholder, a word or a number: never a credential, whatever its name. */
function namesAValue(value: string): boolean {
  return (
    PLACEHOLDER.test(value) ||
    REFERENCE.test(value) ||
    IDENTIFIER_PATH.test(value) ||
    CODE_OR_PLACE.test(value) ||
    /^[a-z]+$/i.test(value)
  );
}

/**
 * Whether `value`, assigned to `name`, is a credential. A name that ends in what it holds (`DB_PASSWORD`) makes any
 * value a secret that is not code, a word or a placeholder; a name that only mentions one (`password_hash`,
 * `secretName`) needs a value that looks like a credential: letters with digits or symbols, random enough.
 */
export function credentialValue(name: string, value: string): boolean {
  if (value.length < 6 || value.length > 200 || /\s/.test(value) || NOT_CREDENTIAL_NAME.test(name)) return false;
  if (namesAValue(value)) return false;
  if (HOLDS_CREDENTIAL.test(name) || HOLDS_CREDENTIAL_ENV.test(name)) return !IDENTIFIER.test(value);
  if (value.length < 8 || /^\d+$/.test(value)) return false;
  if (/^[a-z][a-z0-9]*(?:[._-][a-z0-9]+)*$/i.test(value) && entropy(value) < 3.5) return false;
  return /[a-z]/i.test(value) && /[^a-z]/i.test(value);
}

/** Whether a JSON key names a credential: its string value is then judged as assigned to it. */
export function credentialName(name: string): boolean {
  return name.length <= 200 && CREDENTIAL_KEY.test(name);
}

/** What every rule's match holds: a text without any of these holds no secret the rules know (one scan, not all
 * rules'). */
const ANY_RULE = new RegExp(
  'PRIVATE KEY|eyJ|earer|EARER|Token|Basic|://|' +
    'sk-|_live_|_test_|gh[pousr]_|github_pat_|glpat-|npm_|hf_|A[KSGIRNP][A-Z]{2}[A-Z0-9]{16}|xox|xapp-|AIza|' +
    `${CREDENTIAL}|token|_PASS`,
  'i',
);

/** Every secret the rules find in `text`, unsorted and possibly overlapping. */
export function findSecrets(text: string): Finding[] {
  const found: Finding[] = [];
  if (!ANY_RULE.test(text)) return found;
  for (const m of text.matchAll(PEM_PRIVATE_KEY)) {
    if ((m.groups!.body!.match(/[A-Za-z0-9+/]/g) ?? []).length >= 40)
      found.push({ start: m.index, end: m.index + m[0].length, kind: 'PRIVATE_KEY' });
  }
  const after = found.reduce((end, f) => Math.max(end, f.end), 0);
  const cut = PEM_CUT.exec(text.slice(after));
  if (cut !== null) found.push({ start: after + cut.index, end: text.length, kind: 'PRIVATE_KEY' });
  for (const m of text.matchAll(JWT)) found.push({ start: m.index, end: m.index + m[0].length, kind: 'JWT' });
  for (const [pattern, kind] of PREFIXED)
    for (const m of text.matchAll(pattern)) found.push({ start: m.index, end: m.index + m[0].length, kind });
  for (const [pattern, kind] of [
    [BEARER, 'BEARER_TOKEN'],
    [BASIC, 'BASIC_AUTH'],
    [URL_PASSWORD, 'PASSWORD'],
  ] as const) {
    for (const m of text.matchAll(pattern)) {
      const secret = m.groups!.secret!;
      // A credential is random enough and not letters only ("Bearer AuthenticationHandler" is a name).
      if (
        PLACEHOLDER.test(secret) ||
        REFERENCE.test(secret) ||
        (kind !== 'PASSWORD' && (entropy(secret) < 3 || !/[^A-Za-z]/.test(secret)))
      )
        continue;
      const start = m.index + m[0].length - secret.length - (kind === 'PASSWORD' ? 1 : 0);
      found.push({ start, end: start + secret.length, kind });
    }
  }
  for (const m of text.matchAll(ASSIGNMENT)) {
    const { name, op, quote, secret } = m.groups as { name: string; op: string; quote: string; secret: string };
    // `token` alone reads as prose too ("the token: ..."): with `=` only, unless the name ends in one (`NPM_TOKEN`).
    if (op !== '=' && !MENTIONS_CREDENTIAL.test(name) && !HOLDS_CREDENTIAL_ENV.test(name)) continue;
    if (!credentialValue(name, secret)) continue;
    const start = m.index + m[0].length - quote.length - secret.length;
    found.push({ start, end: start + secret.length, kind: /pass|pwd/i.test(name) ? 'PASSWORD' : 'SECRET' });
  }
  return found;
}

/**
 * Kinds that say only where a value stood (an assignment), not what it is: a rule that knows the format names it.
 * PASSWORD still says more than SECRET.
 */
const GENERIC: Record<string, number> = { PASSWORD: 100, SECRET: 200 };

/**
 * Findings sorted, overlapping ones joined. The joined span takes the kind of the earliest finding that names a
 * format, by `rank` first (a higher rank's kind wins: the redactor ranks secretlint's names above these rules').
 */
export function mergeFindings(findings: readonly (Finding & { rank?: number })[]): Finding[] {
  const sorted = [...findings].sort((a, b) => a.start - b.start || b.end - a.end);
  const out: (Finding & { rank: number })[] = [];
  const rankOf = (f: Finding & { rank?: number }) => (f.rank ?? 0) - (GENERIC[f.kind] ?? 0);
  for (const f of sorted) {
    const last = out.at(-1);
    if (last === undefined || f.start >= last.end) {
      out.push({ start: f.start, end: f.end, kind: f.kind, rank: rankOf(f) });
      continue;
    }
    last.end = Math.max(last.end, f.end);
    if (rankOf(f) > last.rank) {
      last.kind = f.kind;
      last.rank = rankOf(f);
    }
  }
  return out.map(({ start, end, kind }) => ({ start, end, kind }));
}

/** `text` with each of the sorted, disjoint `spans` replaced by its marker. */
export function replaceSpans(text: string, spans: readonly Finding[]): string {
  let out = '';
  let at = 0;
  for (const span of spans) {
    out += `${text.slice(at, span.start)}${marker(span.kind)}`;
    at = span.end;
  }
  return out + text.slice(at);
}

/** The text with every secret the rules find replaced by `[REDACTED:<KIND>]`. */
export function maskSecrets(text: string): string {
  const spans = mergeFindings(findSecrets(text));
  return spans.length === 0 ? text : replaceSpans(text, spans);
}

/**
 * The one redactor of session content (policy `session_upload.redact: secrets`): every text file of a bundle goes
 * through it before it is packed, and every text sent beside it (the manifest's title, summary, folders and remote).
 * Secrets are found by secretlint's recommended rule preset (`@secretlint/core` and
 * `@secretlint/secretlint-rule-preset-recommend`: cloud keys, GitHub, GitLab, Slack, npm, OpenAI, Anthropic, Stripe
 * and other service tokens, private keys, credentials in URLs and database connection strings) and by the secret rules
 * every masking shares (src/util/secrets.ts: PEM keys, JWTs, bearer and basic credentials, service token prefixes,
 * credentials assigned to a name that says so), and each is replaced by `[REDACTED:<KIND>]`.
 *
 * Each file stays valid in its own format: in JSON, and in each JSONL line that parses, only strings are looked at —
 * values and keys — and only a changed one is re-encoded in place (every other byte is kept, so every such line still
 * parses); a line that does not parse (the last one, cut off by a crash) and any other text is redacted as it is.
 * Beside each string alone, the values of one chain (json-strings.ts) are scanned joined, so a secret streamed in
 * parts is found, and a value under a credential's key is judged as assigned to it. Bytes that are not UTF-8 text (or
 * hold NUL) are not text and are packed as they are.
 */
import type { BundleRedaction, Redacted } from '@blue-agent/contract/bundle/index.js';
import { mergeFindings, replaceSpans, type Finding } from '@blue-agent/contract/util/secrets.js';
import { jsonPieces, textPiece, type JsonPiece } from './json-strings.js';
import { ALONE, findIn, type Ranked } from './scan.js';

/** Recorded in every redacted bundle's manifest: the rule sets, and secretlint's version with our rules' revision. */
export const REDACTION_RULES = 'secretlint-recommend.blue-agent';
export const REDACTION_VERSION = '13.1.0-2';

export interface RedactedText {
  text: string;
  replaced: number;
  kinds: string[];
}

/** Finds and replaces the secrets of `text`: JSON and JSONL line by line (string values and keys), other text as it is.
 * */
export async function redactText(text: string): Promise<RedactedText> {
  return redactPieces(text, jsonPieces(text));
}

/** Finds and replaces the secrets of a short text read as plain text (a title, a folder, a remote, a tag). */
export async function redactPlain(text: string): Promise<RedactedText> {
  return redactPieces(text, text === '' ? [] : [textPiece(text)]);
}

async function redactPieces(text: string, pieces: readonly JsonPiece[]): Promise<RedactedText> {
  const findings = await findIn(pieces);
  let replaced = 0;
  const kinds: string[] = [];
  const redacted = pieces.map((piece, i) => {
    const found = findings[i];
    if (found === undefined || found.length === 0) return piece.value;
    const spans = spansOf(found);
    replaced += spans.length;
    for (const span of spans) kinds.push(span.kind);
    return replaceSpans(piece.value, spans);
  });
  if (replaced === 0) return { text, replaced, kinds };
  distinctKeys(pieces, redacted);
  let out = '';
  let at = 0;
  pieces.forEach((piece, i) => {
    if (redacted[i] === piece.value) return;
    out += text.slice(at, piece.start) + (piece.kind === 'text' ? redacted[i] : JSON.stringify(redacted[i]));
    at = piece.end;
  });
  return { text: out + text.slice(at), replaced, kinds };
}

/**
 * A piece's spans: what was found in it alone, each named by its own kind; then what a join adds around them (the part
 * of a secret streamed across values that falls in this one), named by the join's finding.
 */
function spansOf(found: readonly Ranked[]): Finding[] {
  const alone = mergeFindings(found.filter((f) => f.rank >= ALONE));
  const added: Ranked[] = [];
  for (const f of found) {
    if (f.rank >= ALONE) continue;
    let at = f.start;
    for (const a of alone) {
      if (a.end <= at || a.start >= f.end) continue;
      if (a.start > at) added.push({ ...f, start: at, end: a.start });
      at = Math.max(at, a.end);
    }
    if (at < f.end) added.push({ ...f, start: at, end: f.end });
  }
  return added.length === 0 ? alone : [...alone, ...mergeFindings(added)].sort((a, b) => a.start - b.start);
}

/**
 * Keys of one object stay distinct once redacted (two secrets as keys would otherwise become one key, and a reader
 * would keep only the last): a redacted key that meets another key of its object is numbered.
 */
function distinctKeys(pieces: readonly JsonPiece[], redacted: string[]): void {
  const objects = new Set<number>();
  pieces.forEach((p, i) => {
    if (p.kind === 'key' && redacted[i] !== p.value) objects.add(p.object);
  });
  if (objects.size === 0) return;
  const keys = new Map<number, number[]>();
  pieces.forEach((p, i) => {
    if (p.kind !== 'key' || !objects.has(p.object)) return;
    const list = keys.get(p.object);
    if (list === undefined) keys.set(p.object, [i]);
    else list.push(i);
  });
  for (const indexes of keys.values()) {
    const used = new Set(indexes.filter((i) => redacted[i] === pieces[i]!.value).map((i) => redacted[i]!));
    for (const i of indexes) {
      if (redacted[i] === pieces[i]!.value) continue;
      let name = redacted[i]!;
      for (let n = 2; used.has(name); n++) name = `${redacted[i]} (${n})`;
      redacted[i] = name;
      used.add(name);
    }
  }
}

/** A file's bytes, redacted when they are UTF-8 text. */
export async function redactBytes(bytes: Buffer): Promise<Redacted> {
  if (bytes.includes(0)) return { bytes, replaced: 0 };
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return { bytes, replaced: 0 };
  }
  const out = await redactText(text);
  return out.replaced === 0 ? { bytes, replaced: 0 } : { bytes: Buffer.from(out.text, 'utf8'), replaced: out.replaced };
}

/** The bundle writer's redactor for `redact: secrets`. */
export function secretsRedaction(): BundleRedaction {
  return {
    rules: REDACTION_RULES,
    version: REDACTION_VERSION,
    redact: (bytes) => redactBytes(bytes),
    redactText: (text) => redactPlain(text),
  };
}

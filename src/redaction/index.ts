/**
 * The one redactor of session content (policy `session_upload.redact: secrets`): every text file of a bundle goes
 * through it before it is packed. Secrets are found by secretlint's recommended rule preset (`@secretlint/core` and
 * `@secretlint/secretlint-rule-preset-recommend`: cloud keys, GitHub, GitLab, Slack, npm, OpenAI, Anthropic, Stripe
 * and other service tokens, private keys, credentials in URLs and database connection strings) and by the secret rules
 * every masking shares (src/util/secrets.ts: PEM keys, JWTs, bearer and basic credentials, service token prefixes,
 * credentials assigned to a name that says so), and each is replaced by `[REDACTED:<KIND>]`.
 *
 * Each file stays valid in its own format: in JSON and JSONL only string values are looked at and only a changed value
 * is re-encoded in place (every other byte is kept, so every line still parses); other text is redacted as it is.
 * Bytes that are not UTF-8 text (or hold NUL) are not text and are packed as they are.
 */
import { lintSource } from '@secretlint/core';
import { rules as recommendedRules } from '@secretlint/secretlint-rule-preset-recommend';
import type { BundleRedaction, Redacted } from '../bundle/index.js';
import { jsonStrings } from './json-strings.js';
import { findSecrets as ruleFindings, mergeFindings, replaceSpans, type Finding } from '../util/secrets.js';

/** Recorded in every redacted bundle's manifest: the rule sets, and secretlint's version with our rules' revision. */
export const REDACTION_RULES = 'secretlint-recommend.blue-agent';
export const REDACTION_VERSION = '13.1.0-2';

const SEPARATOR = '\n\n';

/**
 * The preset's rules, registered one by one: a rule disabled inside a preset is still run (secretlint 13), and the
 * comment filter must not run — nothing in a transcript may switch a rule off (`secretlint-disable` comments are text
 * like any other). AWS access key ids are identifiers rather than secrets, but they name an account: replaced too.
 */
const RULES = recommendedRules
  .filter((rule) => rule.meta.id !== '@secretlint/secretlint-rule-filter-comments')
  .map((rule) => ({ id: rule.meta.id, rule, ...(rule.meta.id === '@secretlint/secretlint-rule-aws' ? { options: { enableIDScanRule: true } } : {}) }));
const KIND = /^[A-Z0-9_]{1,64}$/;

/** Finds and replaces the secrets of `text`, read as JSON/JSONL string values when it is that, else as a whole. */
export async function redactText(text: string): Promise<{ text: string; replaced: number; kinds: string[] }> {
  const strings = jsonStrings(text);
  const values = strings === undefined ? [text] : strings.map((s) => s.value);
  const findings = await findSecrets(values);
  let replaced = 0;
  const kinds: string[] = [];
  const redacted = values.map((value, i) => {
    const spans = mergeFindings(findings[i]!);
    if (spans.length === 0) return value;
    replaced += spans.length;
    for (const span of spans) kinds.push(span.kind);
    return replaceSpans(value, spans);
  });
  if (replaced === 0) return { text, replaced, kinds };
  if (strings === undefined) return { text: redacted[0]!, replaced, kinds };
  let out = '';
  let at = 0;
  strings.forEach((s, i) => {
    if (redacted[i] === s.value) return;
    out += text.slice(at, s.start) + JSON.stringify(redacted[i]);
    at = s.end;
  });
  return { text: out + text.slice(at), replaced, kinds };
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
  return { rules: REDACTION_RULES, version: REDACTION_VERSION, redact: (bytes) => redactBytes(bytes) };
}

/** Per value, what secretlint (run once over all values) and the shared rules find in it; secretlint's names win. */
async function findSecrets(values: readonly string[]): Promise<(Finding & { rank: number })[][]> {
  const found: (Finding & { rank: number })[][] = values.map((v) => ruleFindings(v).map((f) => ({ ...f, rank: 0 })));
  const starts: number[] = [];
  let joined = '';
  for (const v of values) {
    starts.push(joined.length);
    joined += v + SEPARATOR;
  }
  if (joined.trim() === '') return found;
  const result = await lintSource({
    source: { filePath: 'session.txt', content: joined, contentType: 'text', ext: '.txt' },
    options: {
      noPhysicFilePath: true,
      config: { rules: RULES },
    },
  });
  for (const m of result.messages) {
    const [from, to] = m.range;
    let i = upperBound(starts, from) - 1;
    if (i < 0) continue;
    // A match may run over the separator into the next value: each value gets its own part.
    for (; i < values.length && starts[i]! < to; i++) {
      const start = Math.max(0, from - starts[i]!);
      const end = Math.min(values[i]!.length, to - starts[i]!);
      if (end > start) found[i]!.push({ start, end, kind: kindOf(m.messageId, m.ruleId), rank: 1 });
    }
  }
  return found;
}

/** `GITHUB_TOKEN` as it is; `AWSSecretAccessKey` -> `AWS_SECRET_ACCESS_KEY`; else the rule's name. */
function kindOf(messageId: string, ruleId: string): string {
  const snake = messageId.replace(/([a-z0-9])([A-Z])/g, '$1_$2').replace(/([A-Z])([A-Z][a-z])/g, '$1_$2').toUpperCase();
  if (KIND.test(snake)) return snake;
  const name = ruleId.replace(/^.*secretlint-rule-/, '').replace(/[^A-Za-z0-9]+/g, '_').toUpperCase();
  return KIND.test(name) ? name : 'SECRET';
}

function upperBound(sorted: readonly number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

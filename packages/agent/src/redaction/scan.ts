/**
 * Where the redactor looks for secrets, and what it finds in each piece of a text (json-strings.ts):
 *
 *   - each piece alone, by the shared rules (src/util/secrets.ts) and by secretlint's preset (run once over every
 *     piece, joined);
 *   - each chain's values joined as one text (a message streamed in parts, tool-call arguments in deltas): the rules
 *     read the whole run (a PEM key split in many parts is still one key), secretlint the stretch around each place
 *     where one value meets the next. Only a secret that crosses from one value into the next is taken from a join
 *     (the rest each piece's own scan finds), and each value gets its share of it;
 *   - a value under a key that names a credential (`{"password": "..."}`), judged as if written `password=...`.
 */
import { lintSource } from '@secretlint/core';
import { rules as recommendedRules } from '@secretlint/secretlint-rule-preset-recommend';
import { credentialName, credentialValue, findSecrets, type Finding } from '@blue-agent/contract/util/secrets.js';
import { PLAIN_NAME, type JsonPiece } from './json-strings.js';

/**
 * A finding with the rank of its source: found in the piece alone (`ALONE`) or only in a join; by secretlint, whose
 * names win over the rules' (`SECRETLINT`).
 */
export type Ranked = Finding & { rank: number };
export const ALONE = 2;
const SECRETLINT = 1;

const SEPARATOR = '\n\n';
/**
 * Of a long value, only this much of its head and of its tail is joined with its neighbours: a secret streamed across
 * values lies within this distance of where they meet (the longest, a PEM key, is shorter).
 */
const JOIN_EDGE = 8192;
/** Secretlint reads this much on either side of where two joined values meet (its longest token is shorter). */
const MEET_WINDOW = 512;

/**
 * The preset's rules, registered one by one: a rule disabled inside a preset is still run (secretlint 13), and the
 * comment filter must not run — nothing in a transcript may switch a rule off (`secretlint-disable` comments are text
 * like any other). AWS access key ids are identifiers rather than secrets, but they name an account: replaced too.
 */
const RULES = recommendedRules
  .filter((rule) => rule.meta.id !== '@secretlint/secretlint-rule-filter-comments')
  .map((rule) => ({
    id: rule.meta.id,
    rule,
    ...(rule.meta.id === '@secretlint/secretlint-rule-aws' ? { options: { enableIDScanRule: true } } : {}),
  }));
const KIND = /^[A-Z0-9_]{1,64}$/;

/** A run of one chain's values joined; `slices` (in order) say which piece each stretch of `text` is from. */
interface Join {
  text: string;
  slices: { piece: number; from: number; at: number; length: number }[];
}

/** Per piece (by index), what is found in it; undefined where nothing is. */
export async function findIn(pieces: readonly JsonPiece[]): Promise<(Ranked[] | undefined)[]> {
  const found: (Ranked[] | undefined)[] = new Array(pieces.length);
  const add = (piece: number, start: number, end: number, kind: string, rank: number): void => {
    if (end > start) (found[piece] ??= []).push({ start, end, kind, rank });
  };
  // Placed once everything found in the pieces alone is known (placeJoined asks).
  const inJoins: { join: Join; from: number; to: number; kind: string; rank: number }[] = [];
  const addJoined = (join: Join, from: number, to: number, kind: string, rank: number): void =>
    void inJoins.push({ join, from, to, kind, rank });

  pieces.forEach((p, i) => {
    if (p.kind === 'value' && p.key !== undefined && credentialName(p.key) && credentialValue(p.key, p.value)) {
      add(i, 0, p.value.length, /pass|pwd/i.test(p.key) ? 'PASSWORD' : 'SECRET', ALONE);
    }
    // A short identifier (`assistant`, `tool_use`) holds nothing the rules find alone; it is still joined with its
    // chain.
    if (PLAIN_NAME.test(p.value)) return;
    for (const f of findSecrets(p.value)) add(i, f.start, f.end, f.kind, ALONE);
  });
  const joins = joinChains(pieces);
  for (const join of joins) for (const f of findSecrets(join.text)) addJoined(join, f.start, f.end, f.kind, 0);

  // Secretlint, once over every piece and every stretch where joined values meet.
  const segments: { piece: number; join?: Join; offset: number; length: number }[] = [];
  const texts: string[] = [];
  pieces.forEach((p, i) => {
    if (PLAIN_NAME.test(p.value)) return;
    segments.push({ piece: i, offset: 0, length: p.value.length });
    texts.push(p.value);
  });
  for (const join of joins) {
    for (const [from, to] of meetings(join)) {
      segments.push({ piece: -1, join, offset: from, length: to - from });
      texts.push(join.text.slice(from, to));
    }
  }
  const starts: number[] = [];
  let at = 0;
  for (const t of texts) {
    starts.push(at);
    at += t.length + SEPARATOR.length;
  }
  const joined = texts.join(SEPARATOR);
  const messages =
    joined.trim() === ''
      ? []
      : (
          await lintSource({
            source: { filePath: 'session.txt', content: joined, contentType: 'text', ext: '.txt' },
            options: { noPhysicFilePath: true, config: { rules: RULES } },
          })
        ).messages;
  for (const m of messages) {
    const [from, to] = m.range;
    const kind = kindOf(m.messageId, m.ruleId);
    // A match may run over the separator into the next segment: each segment gets its own part.
    for (let u = upperBound(starts, from) - 1; u >= 0 && u < segments.length && starts[u]! < to; u++) {
      const seg = segments[u]!;
      const start = Math.max(0, from - starts[u]!);
      const end = Math.min(seg.length, to - starts[u]!);
      if (end <= start) continue;
      if (seg.join === undefined) add(seg.piece, start, end, kind, ALONE + SECRETLINT);
      else addJoined(seg.join, seg.offset + start, seg.offset + end, kind, SECRETLINT);
    }
  }
  for (const f of inJoins) placeJoined(f.join, f.from, f.to, f.kind, f.rank, found, add);
  return found;
}

/**
 * Gives each value its share of a secret found in a join, when it crosses from one value into the next. Not when the
 * first value holds, alone, a secret of a known format (a token, by its prefix) that runs to its end and covers its
 * share: that one is whole, and the next value is another message that merely starts with a letter. (A PEM key cut
 * short goes on by its nature; an assigned credential of no known format may go on, and is taken across.)
 */
function placeJoined(
  join: Join,
  from: number,
  to: number,
  kind: string,
  rank: number,
  found: readonly (Ranked[] | undefined)[],
  add: (piece: number, start: number, end: number, kind: string, rank: number) => void,
): void {
  const first = firstSliceEndingAfter(join, from);
  let last = first;
  while (last + 1 < join.slices.length && join.slices[last + 1]!.at < to) last++;
  if (last === first) return;
  const head = join.slices[first]!;
  const start = head.from + Math.max(0, from - head.at);
  const end = head.from + head.length;
  const whole = (f: Ranked) =>
    f.rank >= ALONE &&
    f.start <= start &&
    f.end >= end &&
    f.kind !== 'PRIVATE_KEY' &&
    f.kind !== 'PASSWORD' &&
    f.kind !== 'SECRET';
  if (found[head.piece]?.some(whole) === true) return;
  for (let i = first; i <= last; i++) {
    const s = join.slices[i]!;
    add(s.piece, s.from + Math.max(0, from - s.at), s.from + Math.min(s.length, to - s.at), kind, rank);
  }
}

/** Each chain's non-empty values, in order, joined; a long value ends one run with its head and starts the next with
 * its tail. */
function joinChains(pieces: readonly JsonPiece[]): Join[] {
  const joins: Join[] = [];
  const open = new Map<number, Join>();
  const close = (chain: number): void => {
    const join = open.get(chain);
    if (join !== undefined && join.slices.length > 1) joins.push(join);
    open.delete(chain);
  };
  const append = (chain: number, piece: number, from: number, length: number): void => {
    let join = open.get(chain);
    if (join === undefined) open.set(chain, (join = { text: '', slices: [] }));
    join.slices.push({ piece, from, at: join.text.length, length });
    join.text +=
      from === 0 && length === pieces[piece]!.value.length
        ? pieces[piece]!.value
        : pieces[piece]!.value.slice(from, from + length);
  };
  pieces.forEach((p, i) => {
    if (p.chain < 0 || p.value === '') return;
    const length = p.value.length;
    if (length <= 2 * JOIN_EDGE) {
      append(p.chain!, i, 0, length);
      return;
    }
    append(p.chain!, i, 0, JOIN_EDGE);
    close(p.chain!);
    append(p.chain!, i, length - JOIN_EDGE, JOIN_EDGE);
  });
  for (const chain of [...open.keys()]) close(chain);
  return joins;
}

/** The stretches of a join around each place where two values meet, overlapping ones merged. */
function meetings(join: Join): [number, number][] {
  const out: [number, number][] = [];
  for (let k = 1; k < join.slices.length; k++) {
    const meet = join.slices[k]!.at;
    const from = Math.max(0, meet - MEET_WINDOW);
    const to = Math.min(join.text.length, meet + MEET_WINDOW);
    const last = out.at(-1);
    if (last !== undefined && from <= last[1]) last[1] = to;
    else out.push([from, to]);
  }
  return out;
}

/** The first slice of `join` that ends after `offset`. */
function firstSliceEndingAfter(join: Join, offset: number): number {
  let lo = 0;
  let hi = join.slices.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const s = join.slices[mid]!;
    if (s.at + s.length > offset) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** `GITHUB_TOKEN` as it is; `AWSSecretAccessKey` -> `AWS_SECRET_ACCESS_KEY`; else the rule's name. */
function kindOf(messageId: string, ruleId: string): string {
  const snake = messageId
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z])([A-Z][a-z])/g, '$1_$2')
    .toUpperCase();
  if (KIND.test(snake)) return snake;
  const name = ruleId
    .replace(/^.*secretlint-rule-/, '')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .toUpperCase();
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

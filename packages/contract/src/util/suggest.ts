/**
 * "Did you mean …?": the known name nearest to a mistyped one, by edit distance (a swap of two neighbouring letters
 * counts one edit), ignoring case and the difference between `-` and `_`. Close enough means at most a third of the
 * longer name's letters (at least one) differ; names longer than any sensible key are not compared at all.
 */

const MAX_COMPARED = 128;

/** The candidate nearest to `word`, or undefined when none is close enough; ties go to the earlier candidate. */
export function nearest(word: string, candidates: readonly string[]): string | undefined {
  if (word.length === 0 || word.length > MAX_COMPARED) return undefined;
  const typed = fold(word);
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    if (candidate === word || candidate.length > MAX_COMPARED) continue;
    const known = fold(candidate);
    const limit = Math.max(1, Math.floor(Math.max(typed.length, known.length) / 3));
    if (Math.abs(typed.length - known.length) > limit) continue;
    const distance = editDistance(typed, known);
    if (distance <= limit && distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

function fold(name: string): string {
  return name.toLowerCase().replace(/-/g, '_');
}

/** Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours. */
function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[] = new Array<number>(rows * cols).fill(0);
  for (let i = 0; i < rows; i++) d[i * cols] = i;
  for (let j = 0; j < cols; j++) d[j] = j;
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(d[(i - 1) * cols + j]! + 1, d[i * cols + j - 1]! + 1, d[(i - 1) * cols + j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        value = Math.min(value, d[(i - 2) * cols + j - 2]! + 1);
      d[i * cols + j] = value;
    }
  }
  return d[rows * cols - 1]!;
}

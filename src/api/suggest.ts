/**
 * "Did you mean": the known name closest to a misspelt one, for unknown fields of an object and
 * unknown flags of a command alike, so both read the same.
 */

/** Edits (insert, delete, replace, swap two neighbours) that turn `a` into `b`, at most `limit + 1`. */
function distance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let before: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d = Math.min(d, before[j - 2] + 1);
      }
      row.push(d);
    }
    before = prev;
    prev = row;
  }
  return prev[b.length];
}

/**
 * The candidate `word` most likely misspells: the same but for letter case, else the one fewest
 * edits away when that is at most a third of the longer name's length; undefined when none is that
 * close, so a wholly different (or a one-letter) name gets no guess.
 */
export function closest(word: string, candidates: Iterable<string>): string | undefined {
  const lower = word.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    if (candidate === word) continue;
    if (candidate.toLowerCase() === lower) return candidate;
    const limit = Math.floor(Math.max(word.length, candidate.length) / 3);
    if (limit === 0) continue;
    const d = distance(lower, candidate.toLowerCase(), limit);
    if (d <= limit && d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/** `; did you mean X?` when a candidate is close to `word`, else nothing. */
export function didYouMean(word: string, candidates: Iterable<string>): string {
  const guess = closest(word, candidates);
  return guess === undefined ? "" : `; did you mean ${guess}?`;
}

/**
 * Ordering helpers shared by the scoring strategies (`least_cost`, `least_latency`,
 * `least_busy`): a score per candidate, lowest first. Ties keep declaration order, or — when the
 * strategy passes its request's `rng` (`least_busy`, `least_latency`) — are broken by a seeded
 * draw, so that at low load traffic does not all go to the first of several idle targets. Draws
 * happen only when scores tie, and `rankBy`'s first draw is the one `argMin` makes, so
 * `order()[0]` equals `pick()` for the same stream. Scores are pure functions of the candidate
 * and the planner's signals (STYLE 4: pure scoring, thin orchestration).
 */
import type { Rng } from '../rng.ts';

/**
 * Indices 0..n-1 sorted by `score` ascending. Equal scores keep index order (stable) without
 * `rng`; with it, each group of equal scores is shuffled (one `rng.int(k)` per place but the last).
 */
export function rankBy(n: number, score: (i: number) => number, rng?: Rng): number[] {
  const scores = new Array<number>(n);
  const order = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    scores[i] = score(i);
    order[i] = i;
  }
  order.sort((a, b) => scores[a]! - scores[b]! || a - b);
  if (rng === undefined) return order;
  for (let start = 0; start < n; ) {
    let end = start + 1;
    while (end < n && scores[order[end]!] === scores[order[start]!]) end++;
    // Selection shuffle of [start, end): the j-th remaining (in index order) takes the next place.
    for (let pos = start; pos < end - 1; pos++) {
      const j = pos + rng.int(end - pos);
      const picked = order[j]!;
      for (let k = j; k > pos; k--) order[k] = order[k - 1]!;
      order[pos] = picked;
    }
    start = end;
  }
  return order;
}

/** `argMin`'s scratch scores (grown on demand; a decision allocates nothing). */
let scores = new Float64Array(16);

/**
 * Index of the lowest `score` over 0..n-1 (n ≥ 1): the first one on ties without `rng`; with
 * it, the j-th of the k tied indices for j = `rng.int(k)` (no draw when there is no tie).
 */
export function argMin(n: number, score: (i: number) => number, rng?: Rng): number {
  if (scores.length < n) scores = new Float64Array(2 * n);
  const sc = scores; // each score computed once: the tie pass reads them back
  let best = 0;
  let bestScore = (sc[0] = score(0));
  let ties = 1;
  for (let i = 1; i < n; i++) {
    const s = (sc[i] = score(i));
    if (s < bestScore) {
      best = i;
      bestScore = s;
      ties = 1;
    } else if (s === bestScore) ties++;
  }
  if (rng === undefined || ties === 1) return best;
  let j = rng.int(ties);
  for (let i = best; i < n; i++) {
    if (sc[i] === bestScore && j-- === 0) return i;
  }
  return best;
}

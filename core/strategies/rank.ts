/**
 * Ordering helpers shared by the scoring strategies (`least_cost`, `least_latency`,
 * `least_busy`): a score per candidate, lowest first. Ties keep declaration order, or — when the
 * strategy passes its request's `rng` (`least_busy`, `least_latency`) — are broken by a seeded
 * draw, so that at low load traffic does not all go to the first of several idle targets. Draws
 * happen only when scores tie, and `rankBy`'s first draw is the one `argMin` makes, so
 * `order()[0]` equals `pick()` for the same stream. Scores are pure functions of the candidate
 * and the planner's signals (STYLE 4: pure scoring, thin orchestration); each is computed once
 * per call.
 */
import type { Rng } from '../rng.ts';

/**
 * Indices 0..items.length-1 sorted by `score` ascending. Equal scores keep index order (stable)
 * without `rng`; with it, each group of equal scores is shuffled (one `rng.int(k)` per place but
 * the last, k the number of that group's members not yet placed).
 */
export function rankBy<T>(items: readonly T[], score: (item: T) => number, rng?: Rng): number[] {
  const n = items.length;
  const scores = new Array<number>(n);
  const order = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    scores[i] = score(items[i]!);
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

/**
 * `argMin`'s indices of the candidates tying for the lowest score so far, in index order (grown
 * on demand; the core is single-threaded and a score never calls `argMin`, so one buffer serves
 * every call and a decision allocates nothing).
 */
let tied = new Int32Array(16);

/**
 * Index of the lowest `score` over `items` (non-empty): the first one on ties without `rng`;
 * with it, the j-th of the k tied indices for j = `rng.int(k)`. One pass; no draw when the
 * minimum is unique.
 */
export function argMin<T>(items: readonly T[], score: (item: T) => number, rng?: Rng): number {
  const n = items.length;
  if (tied.length < n) tied = new Int32Array(2 * n);
  const ties = tied;
  let bestScore = score(items[0]!);
  let k = 1;
  ties[0] = 0;
  for (let i = 1; i < n; i++) {
    const s = score(items[i]!);
    if (s < bestScore) {
      bestScore = s;
      ties[0] = i;
      k = 1;
    } else if (s === bestScore) ties[k++] = i;
  }
  return k === 1 || rng === undefined ? ties[0]! : ties[rng.int(k)]!;
}

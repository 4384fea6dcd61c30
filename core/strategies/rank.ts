/**
 * Ordering helpers shared by the scoring strategies (`least_cost`, `least_latency`,
 * `least_busy`): a score per candidate, lowest first, ties in declaration order. Scores are pure
 * functions of the candidate and the planner's signals (STYLE 4: pure scoring, thin orchestration).
 */

/** Indices 0..n-1 sorted by `score` ascending; equal scores keep index order (stable). */
export function rankBy(n: number, score: (i: number) => number): number[] {
  const scores = new Array<number>(n);
  const order = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    scores[i] = score(i);
    order[i] = i;
  }
  return order.sort((a, b) => scores[a]! - scores[b]! || a - b);
}

/** Index of the lowest `score` over 0..n-1 (n ≥ 1); the first one on ties. */
export function argMin(n: number, score: (i: number) => number): number {
  let best = 0;
  let bestScore = score(0);
  for (let i = 1; i < n; i++) {
    const s = score(i);
    if (s < bestScore) {
      best = i;
      bestScore = s;
    }
  }
  return best;
}

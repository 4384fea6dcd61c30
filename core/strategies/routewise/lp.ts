/**
 * The exact budgeted-latency LP of RouteWise (RouteWise paper §4):
 *
 *   minimise Σ π_j·T̄_j   subject to   Σ π_j·c_j ≤ B,   Σ π_j = 1,   π ≥ 0
 *
 * over routes j with mean TTFT T̄_j (ms) and effective cost c_j (USD). With two constraints every
 * vertex of the feasible set has at most two non-zero weights, so the optimum is found exactly,
 * without an LP library, by enumerating
 * - single routes within the budget (c_j ≤ B), and
 * - two-route mixes on the budget line: a route i below the budget and a faster route j above
 *   it, mixed so the expected cost is exactly B (π_j = (B − c_i)/(c_j − c_i)).
 * Candidates compare by objective, then by expected cost (so equal latencies go to the cheaper
 * choice), then by position. If no route is within the budget the cheapest route is returned
 * with `feasible = false`. O(n²) time, no allocation when an output object is passed in.
 */

/** The optimal mix: one route, or two with weights summing to 1. */
export interface LpSolution {
  /** Index of the route with weight `firstWeight` (the cheaper one of a mix), or −1 when n = 0. */
  first: number;
  /** Index of the second route of a mix, or −1 for a single route. */
  second: number;
  /** π of `first`, in (0, 1]. */
  firstWeight: number;
  /** π of `second` (1 − firstWeight), 0 for a single route. */
  secondWeight: number;
  /** Σ π_j·T̄_j, ms. */
  expectedLatencyMs: number;
  /** Σ π_j·c_j, USD. */
  expectedCostUsd: number;
  /** False when every route costs more than the budget (the cheapest is returned). */
  feasible: boolean;
}

/** A fresh, empty solution object (to reuse across calls on a hot path). */
export function emptyLpSolution(): LpSolution {
  return { first: -1, second: -1, firstWeight: 0, secondWeight: 0, expectedLatencyMs: Number.NaN, expectedCostUsd: Number.NaN, feasible: false };
}

/** Relative tolerance of latency ties (the cost tie-break applies within it). */
const LATENCY_TIE_REL = 1e-9;

/**
 * Solves the LP exactly. Entries `i < count` whose latency or cost is not finite are ignored.
 * @param latencyMs T̄_j per route, ms (finite ≥ 0 for routes that take part).
 * @param costUsd c_j per route, USD.
 * @param count number of routes to read from the arrays.
 * @param budgetUsdValue B, USD. Costs within 1e-9·|B| (+1e-15) of B count as within budget.
 * @param out optional object to fill (returned).
 * @returns the optimum; `first = −1` when no route takes part.
 */
export function solveLatencyLp(latencyMs: ArrayLike<number>, costUsd: ArrayLike<number>, count: number, budgetUsdValue: number, out: LpSolution = emptyLpSolution()): LpSolution {
  const B = budgetUsdValue;
  const tolCost = 1e-9 * Math.abs(B) + 1e-15;
  out.first = -1;
  out.second = -1;
  out.firstWeight = 0;
  out.secondWeight = 0;
  out.expectedLatencyMs = Number.NaN;
  out.expectedCostUsd = Number.NaN;
  out.feasible = false;
  let bestT = Number.POSITIVE_INFINITY;
  let bestC = Number.POSITIVE_INFINITY;
  // Singles within budget.
  for (let j = 0; j < count; j++) {
    const t = latencyMs[j]!;
    const c = costUsd[j]!;
    if (!Number.isFinite(t) || !Number.isFinite(c) || c > B + tolCost) continue;
    if (better(t, c, bestT, bestC, tolCost)) {
      bestT = t;
      bestC = c;
      out.first = j;
    }
  }
  if (out.first >= 0) {
    out.feasible = true;
    out.firstWeight = 1;
    // Two-route mixes on the budget line: i strictly below B, j strictly above and faster.
    for (let i = 0; i < count; i++) {
      const ti = latencyMs[i]!;
      const ci = costUsd[i]!;
      if (!Number.isFinite(ti) || !Number.isFinite(ci) || !(ci < B - tolCost)) continue;
      for (let j = 0; j < count; j++) {
        const tj = latencyMs[j]!;
        const cj = costUsd[j]!;
        // NaN fails both comparisons, so entries that take no part drop out here too.
        if (!(cj > B + tolCost) || !(tj < ti) || cj === Number.POSITIVE_INFINITY) continue;
        const w = (B - ci) / (cj - ci); // π_j ∈ (0, 1)
        const t = ti + w * (tj - ti);
        if (better(t, B, bestT, bestC, tolCost)) {
          bestT = t;
          bestC = B;
          out.first = i;
          out.second = j;
          out.firstWeight = 1 - w;
          out.secondWeight = w;
        }
      }
    }
    out.expectedLatencyMs = bestT;
    out.expectedCostUsd = out.second < 0 ? bestC : out.firstWeight * costUsd[out.first]! + out.secondWeight * costUsd[out.second]!;
    return out;
  }
  // Infeasible: the cheapest route (ties: faster, then earlier).
  for (let j = 0; j < count; j++) {
    const t = latencyMs[j]!;
    const c = costUsd[j]!;
    if (!Number.isFinite(t) || !Number.isFinite(c)) continue;
    if (out.first < 0 || c < bestC - tolCost || (c <= bestC + tolCost && t < bestT)) {
      bestT = t;
      bestC = c;
      out.first = j;
    }
  }
  if (out.first >= 0) {
    out.firstWeight = 1;
    out.expectedLatencyMs = bestT;
    out.expectedCostUsd = bestC;
  }
  return out;
}

/** Is (t, c) strictly better than the best (bestT, bestC) so far? Ties keep the earlier candidate. */
function better(t: number, c: number, bestT: number, bestC: number, tolCost: number): boolean {
  if (bestT === Number.POSITIVE_INFINITY) return true;
  const tol = LATENCY_TIE_REL * Math.max(1, Math.abs(bestT));
  if (t < bestT - tol) return true;
  if (t > bestT + tol) return false;
  return c < bestC - tolCost;
}

/**
 * Draws one route from a solution with a uniform `u` ∈ [0, 1): `first` when u < π_first, else
 * `second`. A single route is returned whatever `u` is.
 */
export function drawFromMix(solution: LpSolution, u: number): number {
  if (solution.second < 0) return solution.first;
  return u < solution.firstWeight ? solution.first : solution.second;
}

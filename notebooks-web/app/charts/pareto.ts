/**
 * The Pareto front of points where lower is better on both axes (cost and latency): a point is
 * on the front when no other point is at least as good on both and strictly better on one.
 * Pure.
 */

/** A candidate point; `null` coordinates are never on the front. */
export interface ParetoPoint {
  x: number | null;
  y: number | null;
}

/**
 * Indices of the non-dominated points, ordered by x ascending (then y). Equal points are all
 * kept. O(n log n): sort by x then y, keep each point whose y is below every y seen at a
 * smaller x.
 */
export function paretoFront(points: readonly ParetoPoint[]): number[] {
  const idx = points
    .map((p, i) => ({ i, x: p.x, y: p.y }))
    .filter((p): p is { i: number; x: number; y: number } => p.x !== null && p.y !== null && Number.isFinite(p.x) && Number.isFinite(p.y))
    .sort((a, b) => a.x - b.x || a.y - b.y);
  const out: number[] = [];
  let bestY = Infinity;
  let last: { x: number; y: number } | null = null;
  for (const p of idx) {
    if (p.y < bestY) {
      out.push(p.i);
      bestY = p.y;
      last = p;
    } else if (last !== null && p.x === last.x && p.y === last.y) {
      out.push(p.i); // a duplicate of a front point is just as undominated
    }
  }
  return out;
}

/**
 * Breaker transitions and fault edges (points in time) turned into intervals (bands to draw).
 * Pure.
 */
import type { BreakerEvent, FaultEdge } from '../../shared/api-types.ts';

/** A state held by one endpoint from `fromMs` to `toMs`. */
export interface StateInterval {
  row: string;
  fromMs: number;
  toMs: number;
  state: string;
}

/**
 * Per-endpoint breaker states over [startMs, endMs]: each endpoint starts in the `from` state
 * of its first transition (`closed` without transitions) and holds each `to` state until the
 * next transition. Events are taken in the given order (the server sorts by time, then
 * insertion); zero-length intervals (two transitions at one instant) are dropped.
 */
export function breakerIntervals(events: readonly BreakerEvent[], endpoints: readonly string[], startMs: number, endMs: number): StateInterval[] {
  const out: StateInterval[] = [];
  const rows = [...new Set([...endpoints, ...events.map((e) => e.endpointId)])];
  for (const row of rows) {
    const evs = events.filter((e) => e.endpointId === row);
    let state = evs[0]?.from ?? 'closed';
    let since = startMs;
    for (const e of evs) {
      const at = Math.min(Math.max(e.atMs, startMs), endMs);
      if (at > since) out.push({ row, fromMs: since, toMs: at, state });
      state = e.to;
      since = at;
    }
    if (endMs > since) out.push({ row, fromMs: since, toMs: endMs, state });
  }
  return out;
}

/** A fault window of one endpoint. */
export interface FaultWindow {
  endpointId: string;
  fromMs: number;
  toMs: number;
  /** HTTP status the endpoint answered with, when recorded. */
  status: number | null;
}

/**
 * Pairs fault `start` / `end` edges per endpoint. A start without an end lasts until `endMs`;
 * an end without a start is ignored; a second start before an end is ignored (windows on one
 * endpoint do not nest).
 */
export function faultWindows(edges: readonly FaultEdge[], endMs: number): FaultWindow[] {
  const open = new Map<string, FaultEdge>();
  const out: FaultWindow[] = [];
  for (const e of edges) {
    const started = open.get(e.endpointId);
    if (e.phase === 'start') {
      if (!started) open.set(e.endpointId, e);
    } else if (started) {
      out.push({ endpointId: e.endpointId, fromMs: started.atMs, toMs: e.atMs, status: started.status });
      open.delete(e.endpointId);
    }
  }
  for (const s of open.values()) out.push({ endpointId: s.endpointId, fromMs: s.atMs, toMs: Math.max(s.atMs, endMs), status: s.status });
  return out.sort((a, b) => a.fromMs - b.fromMs || (a.endpointId < b.endpointId ? -1 : 1));
}

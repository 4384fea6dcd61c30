/** Tiny event loops that drive `EngineModel`s in tests (the real loop lives elsewhere). */
import type { EngineEvent, EngineModel, EngineRequest } from '../../../simulator/engine/engine-model.ts';

/** A request arriving at `atMs`. */
export interface Arrival {
  atMs: number;
  req: EngineRequest;
}

/** An event plus the replica index that emitted it. */
export type Logged = EngineEvent & { replica: number };

/**
 * Replay arrivals (sorted by time) over replicas, round-robin, until every replica is idle.
 * Arrivals at the same time as a step end are enqueued first. Replicas that coalesce decode steps
 * are interrupted before each enqueue, as `EngineModel.interrupt` requires. `afterEach` runs after every
 * enqueue and every completed step (for invariant checks).
 */
export function drive(
  replicas: EngineModel[],
  arrivals: readonly Arrival[],
  afterEach: (r: EngineModel) => void = () => {},
): Logged[] {
  const log: Logged[] = [];
  const next: (number | null)[] = replicas.map(() => null);
  let ai = 0;
  let rr = 0;
  for (;;) {
    let best = -1;
    for (let i = 0; i < replicas.length; i++) {
      const t = next[i];
      if (t !== null && t !== undefined && (best < 0 || t < next[best]!)) best = i;
    }
    const a = arrivals[ai];
    if (a !== undefined && (best < 0 || a.atMs <= next[best]!)) {
      const i = rr++ % replicas.length;
      const r = replicas[i]!;
      // A coalesced run in flight is cut first (EngineModel.interrupt); a no-op otherwise.
      const cut = r.interrupt?.(a.atMs) ?? null;
      if (cut !== null) next[i] = cut;
      const end = r.enqueue(a.req, a.atMs, (e) => log.push({ ...e, replica: i }));
      if (end !== null) next[i] = end;
      afterEach(r);
      ai++;
      continue;
    }
    if (best < 0) return log;
    const r = replicas[best]!;
    next[best] = r.completeStep(next[best]!, (e) => log.push({ ...e, replica: best }));
    afterEach(r);
  }
}

/** Single request on an idle replica: enqueue at t, then `t = completeStep(t)` until null. */
export function runAlone(replica: EngineModel, req: EngineRequest, t0 = 0): EngineEvent[] {
  const ev: EngineEvent[] = [];
  const emit = (e: EngineEvent): void => void ev.push(e);
  let t: number | null = replica.enqueue(req, t0, emit);
  while (t !== null) t = replica.completeStep(t, emit);
  return ev;
}

/**
 * Fault windows in the loop: at each edge of a window the fault plan changes an endpoint's
 * state; the loop records the edge as an `events` row and applies what the state change means
 * now — a crash loses everything in flight (the core sees connection resets), a slow window
 * moves the replica's step end. Faults met by individual dispatches are applied in dispatch.ts.
 */
import { faultParams } from '../faults/fault-config.ts';
import { failAttempt, RESET } from './actions.ts';
import type { ReplayState } from './state.ts';

/** Edge `start` (true: the window opens) of fault `fi`, now. */
export function onFaultEdge(s: ReplayState, fi: number, start: boolean): void {
  const f = s.faults!.faults[fi]!;
  const effect = s.faults!.applyEdge(fi, start);
  const ep = s.endpoints[effect.endpoint]!;
  s.result.events.push({
    runId: s.runId,
    atMs: s.now,
    kind: 'fault',
    endpointId: ep.endpointId,
    detailJson: JSON.stringify({ phase: start ? 'start' : 'end', fault: f.kind, index: fi, from_ms: f.from_ms, to_ms: f.to_ms, ...faultParams(f) }),
  });
  if (effect.kind === 'crash_start') {
    if (ep.engine) {
      ep.engine.crash(s.now);
      s.q.disarm(effect.endpoint); // the lost engine's step never ends
    }
    for (const gid of [...s.liveByEp[effect.endpoint]!]) failAttempt(s, gid, RESET);
  } else if (effect.kind === 'slow_change' && ep.engine) {
    const t = ep.engine.setSlowFactor(effect.factor, s.now);
    if (t !== null) s.q.arm(effect.endpoint, t);
  }
}

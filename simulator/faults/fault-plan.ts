/**
 * The faults of one run, in action: which windows are open, which endpoints are down or slow,
 * and what happens to an attempt sent to an endpoint now. The loop schedules `edges` (window
 * starts before window ends at equal times, all before any arrival, so a window [from, to) covers
 * dispatches at from_ms and not at to_ms), calls `applyEdge` when one fires and asks `onDispatch`
 * for every attempt. Draws are keyed by (fault, request, client try) — see simulator/crn.ts.
 */
import { classifyStatus, type Outcome } from '../../core/index.ts';
import { keyedBase, keyedUniform } from '../crn.ts';
import type { Fault } from './fault-config.ts';
import { PER_ATTEMPT_KINDS } from './fault-config.ts';

/** What faults do to one attempt. Timing fields are neutral (1, 0, null) when nothing applies. */
export interface AttemptFaultEffect {
  /** The attempt fails without reaching the endpoint: `outcome` after `delayMs`. */
  reply: { delayMs: number; outcome: Outcome } | null;
  /** Delivered TTFT = endpoint TTFT × ttftFactor + ttftAddMs. */
  ttftFactor: number;
  ttftAddMs: number;
  /** Extra delay of the last token after the first, ms. */
  midStallMs: number;
  /** The connection drops this long after the delivered first token (null: it does not). */
  disconnectAfterMs: number | null;
}

/** A window edge to schedule. */
export interface FaultEdge {
  atMs: number;
  fault: number;
  start: boolean;
}

/** What an edge changed, for the loop to act on. */
export type EdgeEffect =
  | { kind: 'crash_start'; endpoint: number }
  | { kind: 'crash_end'; endpoint: number }
  | { kind: 'slow_change'; endpoint: number; factor: number }
  | { kind: 'window'; endpoint: number };

/** Fault state of one run. */
export class FaultPlan {
  /** Window edges in schedule order: by time, starts before ends, then declaration order. */
  readonly edges: readonly FaultEdge[];
  private readonly endpointOf: number[];
  private readonly crashed: number[];
  private readonly slow: number[][];
  private readonly active: number[][];
  private readonly base: number;

  /**
   * @param endpointIndex maps an endpoint name to its index (0..endpointCount-1).
   * @param seed run seed; draws come from the keyed stream `faults`.
   * @throws Error naming `faults[i].endpoint` when a target is unknown.
   */
  constructor(
    readonly faults: readonly Fault[],
    endpointIndex: ReadonlyMap<string, number>,
    endpointCount: number,
    seed: number,
  ) {
    this.endpointOf = faults.map((f, i) => {
      const ep = endpointIndex.get(f.endpoint);
      if (ep === undefined) throw new Error(`faults[${i}].endpoint: no endpoint '${f.endpoint}'; endpoints are ${[...endpointIndex.keys()].join(', ')}`);
      return ep;
    });
    this.crashed = new Array<number>(endpointCount).fill(0);
    this.slow = Array.from({ length: endpointCount }, () => []);
    this.active = Array.from({ length: endpointCount }, () => []);
    this.base = keyedBase(seed, 'faults');
    const edges: FaultEdge[] = [];
    faults.forEach((f, i) => {
      edges.push({ atMs: f.from_ms, fault: i, start: true });
      edges.push({ atMs: f.to_ms, fault: i, start: false });
    });
    edges.sort((a, b) => a.atMs - b.atMs || Number(b.start) - Number(a.start) || a.fault - b.fault);
    this.edges = edges;
  }

  /** Endpoint index a fault targets. */
  endpointOfFault(fault: number): number {
    return this.endpointOf[fault]!;
  }

  /** Whether any crash window is open on `endpoint`. */
  isCrashed(endpoint: number): boolean {
    return this.crashed[endpoint]! > 0;
  }

  /** Product of the open `slow` factors on `endpoint` (1 when none). */
  slowFactor(endpoint: number): number {
    let k = 1;
    for (const fi of this.slow[endpoint]!) k *= (this.faults[fi] as Extract<Fault, { kind: 'slow' }>).factor;
    return k;
  }

  /** Opens or closes fault `fault`'s window; returns what the loop must do about it. */
  applyEdge(fault: number, start: boolean): EdgeEffect {
    const f = this.faults[fault]!;
    const ep = this.endpointOf[fault]!;
    const toggle = (list: number[]) => {
      if (start) list.push(fault);
      else list.splice(list.indexOf(fault), 1);
    };
    switch (f.kind) {
      case 'crash':
        this.crashed[ep]! += start ? 1 : -1;
        if (start) return { kind: 'crash_start', endpoint: ep };
        return this.crashed[ep] === 0 ? { kind: 'crash_end', endpoint: ep } : { kind: 'window', endpoint: ep };
      case 'slow':
        toggle(this.slow[ep]!);
        return { kind: 'slow_change', endpoint: ep, factor: this.slowFactor(ep) };
      default:
        if (PER_ATTEMPT_KINDS.has(f.kind)) toggle(this.active[ep]!);
        return { kind: 'window', endpoint: ep };
    }
  }

  /** @throws Error when a crash count is negative or an open window is filed under the wrong endpoint or kind. */
  invariants(): void {
    this.crashed.forEach((c, ep) => {
      if (c < 0) throw new Error(`FaultPlan: endpoint ${ep} has ${c} open crash windows`);
    });
    const check = (lists: number[][], ok: (f: Fault) => boolean) =>
      lists.forEach((list, ep) => {
        for (const fi of list) {
          if (this.endpointOf[fi] !== ep || !ok(this.faults[fi]!)) throw new Error(`FaultPlan: fault ${fi} filed under endpoint ${ep} wrongly`);
        }
        if (new Set(list).size !== list.length) throw new Error(`FaultPlan: endpoint ${ep} lists a window twice`);
      });
    check(this.slow, (f) => f.kind === 'slow');
    check(this.active, (f) => PER_ATTEMPT_KINDS.has(f.kind));
  }

  /**
   * The fault effect on an attempt sent now to `endpoint` for request `reqIndex`, client try
   * `tryNo`; null when no fault touches it (the common case, kept cheap). A crashed endpoint
   * refuses; otherwise the open per-attempt faults are consulted in declaration order: the first
   * error or 429 that hits decides the reply, timing effects accumulate.
   */
  onDispatch(endpoint: number, reqIndex: number, tryNo: number): AttemptFaultEffect | null {
    if (this.crashed[endpoint]! > 0) {
      let latency = Infinity;
      for (let i = 0; i < this.faults.length; i++) {
        const f = this.faults[i]!;
        if (f.kind === 'crash' && this.endpointOf[i] === endpoint) latency = Math.min(latency, f.latency_ms);
      }
      return { ...neutral(), reply: { delayMs: latency, outcome: { kind: 'transport', cause: 'refused' } } };
    }
    const open = this.active[endpoint]!;
    if (open.length === 0) return null;
    let effect: AttemptFaultEffect | null = null;
    for (const fi of [...open].sort((a, b) => a - b)) {
      const f = this.faults[fi]!;
      if (f.kind === 'crash' || f.kind === 'slow') continue;
      if (f.rate <= 0 || (f.rate < 1 && keyedUniform(this.base, fi, reqIndex, tryNo) >= f.rate)) continue;
      effect ??= neutral();
      switch (f.kind) {
        case 'error_burst':
          effect.reply = {
            delayMs: f.latency_ms,
            outcome: { kind: 'http_status', status: f.status, errorClass: classifyStatus(f.status), retryAfterMs: f.retry_after_ms ?? null },
          };
          return effect;
        case 'rate_limit_storm':
          effect.reply = { delayMs: f.latency_ms, outcome: { kind: 'http_status', status: 429, errorClass: 'rate_limited', retryAfterMs: f.retry_after_ms } };
          return effect;
        case 'stall_first_token':
          effect.ttftAddMs += f.stall_ms;
          break;
        case 'latency_spike':
          effect.ttftFactor *= f.factor;
          effect.ttftAddMs += f.add_ms;
          break;
        case 'stall_mid_stream':
          effect.midStallMs += f.stall_ms;
          break;
        case 'disconnect_mid_stream':
          effect.disconnectAfterMs = Math.min(effect.disconnectAfterMs ?? Infinity, f.after_ms);
          break;
      }
    }
    return effect;
  }
}

function neutral(): AttemptFaultEffect {
  return { reply: null, ttftFactor: 1, ttftAddMs: 0, midStallMs: 0, disconnectAfterMs: null };
}

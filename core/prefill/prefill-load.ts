/**
 * Prefill load per endpoint (seed 000, "prefill 感知的选路"): uncached prompt tokens and
 * elephant prompts currently in prefill, plus the prompt-size hints that turn a prompt's size
 * into an estimate of its *uncached* part.
 *
 * Leases: the lifecycle takes one lease per dispatched attempt and releases it exactly once, at
 * the attempt's first token (decode is cheap next to prefill, so it is not prefill pressure) or
 * when the attempt ends first. A lease carries the tokens it added, so release is exact.
 *
 * Hints: after a caller's request completes on an endpoint, the endpoint has that prompt's KV
 * cached, and the caller's next turn re-sends it as a prefix. So a later prompt of that caller
 * on that endpoint is estimated to cost only what it adds beyond the hint. A prompt shorter than
 * the hint cannot be a continuation of it and counts in full. Hints live
 * `prefillHintTtlSec`; expired ones are swept lazily.
 *
 * No clock: every time-dependent call takes `nowMs`.
 */
import type { RoutingSettings } from '../config/routing-settings.ts';
import { IntrusiveList, type ListLinks } from '../intrusive-list.ts';

/**
 * Hint-table size above which an insert sweeps expired hints. Hints are (caller × endpoint), so
 * this is larger than the affinity table's threshold; the sweep threshold then doubles with the
 * live count so sweeping stays amortised O(1) per insert.
 */
export const PROMPT_HINT_SWEEP_THRESHOLD = 4_096;

declare const leaseBrand: unique symbol;

/**
 * One attempt's share of an endpoint's prefill load, from `PrefillLoad.acquire` until its one
 * `release`. `uncachedTokens` is the estimate added to the backlog; `elephant` whether it counts
 * against the endpoint's elephant limit. Opaque: only a `PrefillLoad` creates one.
 */
export interface PrefillLease {
  readonly endpointId: string;
  /**
   * The caller whose own backlog this lease counts in (`callerBacklogTokens`), or null when the
   * lease was taken without `trackOwn` (no session affinity) or without a caller identity.
   */
  readonly callerId: string | null;
  readonly uncachedTokens: number;
  readonly elephant: boolean;
  readonly [leaseBrand]: true;
}

/** What a planner may read: loads and this request's uncached estimate. */
export interface PrefillLoadView {
  /** Uncached prompt tokens in prefill on `endpointId` (0 for an unknown endpoint). */
  backlogTokens(endpointId: string): number;
  /** Elephant prompts in prefill on `endpointId`. */
  elephantsInFlight(endpointId: string): number;
  /** Estimated uncached tokens of a `inputTokens` prompt from `callerId` on `endpointId` at `nowMs`. */
  uncachedTokens(endpointId: string, callerId: string | null, inputTokens: number, nowMs: number): number;
}

/** One endpoint's numbers, as data (for logs, tests and the simulator). */
export interface EndpointPrefillSnapshot {
  readonly endpointId: string;
  readonly backlogTokens: number;
  readonly elephantsInFlight: number;
  readonly leasesInFlight: number;
  readonly hints: number;
}

/** The concrete lease: the public fields plus the live-leases list's links. */
/** A lease as the load keeps it: linked into the live list, and holding its endpoint's state (entries are never replaced). */
type LiveLease = PrefillLease & ListLinks<LiveLease> & { readonly entry: EndpointPrefill };

interface PromptHint {
  promptTokens: number;
  atMs: number;
}

interface EndpointPrefill {
  backlogTokens: number;
  elephantsInFlight: number;
  leasesInFlight: number;
  readonly hints: Map<string, PromptHint>;
  /** Uncached tokens in prefill per caller with identity (entries dropped at 0). */
  readonly byCaller: Map<string, number>;
}

/**
 * The uncached part of a prompt: `inputTokens − hintPromptTokens` when a live hint exists and
 * the prompt is at least as long as the hinted one (a continuation), else `inputTokens`. Pure.
 */
export function estimateUncachedTokens(inputTokens: number, hintPromptTokens: number | null): number {
  if (hintPromptTokens === null || inputTokens < hintPromptTokens) return inputTokens;
  return inputTokens - hintPromptTokens;
}

/** Prefill leases and prompt hints of one process (gateway) or one run (simulator). */
export class PrefillLoad implements PrefillLoadView {
  private readonly endpoints = new Map<string, EndpointPrefill>();
  /** Leases not yet released (an intrusive list: no hashing on the decision path). */
  private readonly live = new IntrusiveList<LiveLease>();
  private readonly hintTtlMs: number;
  private readonly elephantTokens: number;
  private hintCount = 0;
  private nextSweepAt = PROMPT_HINT_SWEEP_THRESHOLD;

  /** `settings` must be validated (`resolveRoutingSettings`); uses the hint TTL and elephant size. */
  constructor(settings: Pick<RoutingSettings, 'prefillHintTtlSec' | 'prefillElephantTokens'>) {
    this.hintTtlMs = settings.prefillHintTtlSec * 1000;
    this.elephantTokens = settings.prefillElephantTokens;
  }

  /** Uncached prompt tokens leased on `endpointId` and not yet released (0 when unknown). */
  backlogTokens(endpointId: string): number {
    return this.endpoints.get(endpointId)?.backlogTokens ?? 0;
  }

  /**
   * Uncached prompt tokens in prefill on `endpointId` that `callerId`'s own leases hold (0 for a
   * null caller): session affinity subtracts them, so a caller's own prefill does not count
   * against its own backlog ceiling.
   */
  callerBacklogTokens(endpointId: string, callerId: string | null): number {
    if (callerId === null) return 0;
    return this.endpoints.get(endpointId)?.byCaller.get(callerId) ?? 0;
  }

  /** Elephant leases on `endpointId` not yet released (0 when unknown). */
  elephantsInFlight(endpointId: string): number {
    return this.endpoints.get(endpointId)?.elephantsInFlight ?? 0;
  }

  /**
   * Uncached estimate (see `estimateUncachedTokens`) with the (caller, endpoint) hint if it is
   * younger than the TTL at `nowMs`. A null caller (no identity) never uses hints: the shared
   * anonymous caller's last prompt says nothing about this one.
   */
  uncachedTokens(endpointId: string, callerId: string | null, inputTokens: number, nowMs: number): number {
    const e = this.endpoints.get(endpointId);
    return e === undefined ? inputTokens : this.uncachedOn(e, callerId, inputTokens, nowMs);
  }

  private uncachedOn(e: EndpointPrefill, callerId: string | null, inputTokens: number, nowMs: number): number {
    if (callerId === null) return inputTokens;
    const h = e.hints.get(callerId);
    if (h === undefined || nowMs - h.atMs >= this.hintTtlMs) return inputTokens;
    return estimateUncachedTokens(inputTokens, h.promptTokens);
  }

  /**
   * Takes a lease for a prompt of `inputTokens` from `callerId` dispatched to `endpointId` at
   * `nowMs`: adds its uncached estimate to the backlog and, when that reaches the elephant size,
   * one elephant. With `trackOwn` (the request uses session affinity) the tokens also count in
   * `callerId`'s own backlog on the endpoint. Release it exactly once with `release`.
   */
  acquire(endpointId: string, callerId: string | null, inputTokens: number, nowMs: number, trackOwn = false): PrefillLease {
    const e = this.entry(endpointId);
    const uncachedTokens = this.uncachedOn(e, callerId, inputTokens, nowMs);
    const elephant = uncachedTokens >= this.elephantTokens;
    e.backlogTokens += uncachedTokens;
    e.leasesInFlight += 1;
    if (elephant) e.elephantsInFlight += 1;
    const own = trackOwn && uncachedTokens > 0 ? callerId : null;
    if (own !== null) e.byCaller.set(own, (e.byCaller.get(own) ?? 0) + uncachedTokens);
    const lease = { endpointId, callerId: own, uncachedTokens, elephant, entry: e, prev: null, next: null, list: null } as unknown as LiveLease;
    this.live.add(lease);
    return lease;
  }

  /**
   * Ends a lease: its tokens and elephant leave the endpoint's load.
   * @throws Error when the lease was already released or came from another `PrefillLoad`.
   */
  release(lease: PrefillLease): void {
    if (!this.live.remove(lease as LiveLease)) {
      throw new Error(`prefill lease for '${lease.endpointId}' (${lease.uncachedTokens} tokens) released twice or foreign`);
    }
    const e = (lease as LiveLease).entry;
    e.backlogTokens -= lease.uncachedTokens;
    e.leasesInFlight -= 1;
    if (lease.elephant) e.elephantsInFlight -= 1;
    const c = lease.callerId;
    if (c !== null) {
      const left = e.byCaller.get(c)! - lease.uncachedTokens;
      if (left === 0) e.byCaller.delete(c);
      else e.byCaller.set(c, left);
    }
  }

  /**
   * Remembers that `callerId`'s prompt of `inputTokens` completed on `endpointId` at `nowMs`
   * (the lifecycle calls this on a successful finish). No-op for a null caller or a TTL of 0.
   */
  recordCompletedPrompt(endpointId: string, callerId: string | null, inputTokens: number, nowMs: number): void {
    if (callerId === null || this.hintTtlMs <= 0) return;
    const hints = this.entry(endpointId).hints;
    const h = hints.get(callerId);
    if (h !== undefined) {
      h.promptTokens = inputTokens;
      h.atMs = nowMs;
      return;
    }
    hints.set(callerId, { promptTokens: inputTokens, atMs: nowMs });
    if (++this.hintCount > this.nextSweepAt) this.sweepHints(nowMs);
  }

  /** Drops every hint expired at `nowMs`; returns how many. Called lazily by inserts. */
  sweepHints(nowMs: number): number {
    let dropped = 0;
    for (const e of this.endpoints.values()) {
      for (const [caller, h] of e.hints) {
        if (nowMs - h.atMs >= this.hintTtlMs) {
          e.hints.delete(caller);
          dropped++;
        }
      }
    }
    this.hintCount -= dropped;
    this.nextSweepAt = Math.max(PROMPT_HINT_SWEEP_THRESHOLD, 2 * this.hintCount);
    return dropped;
  }

  /** Leases not yet released, all endpoints. */
  get leasesInFlight(): number {
    return this.live.size;
  }

  /** Hints held (expired ones included until swept). */
  get hints(): number {
    return this.hintCount;
  }

  /** Every known endpoint's numbers, sorted by endpoint id. Pure. */
  snapshot(): EndpointPrefillSnapshot[] {
    return [...this.endpoints.keys()].sort().map((id) => {
      const e = this.endpoints.get(id)!;
      return { endpointId: id, backlogTokens: e.backlogTokens, elephantsInFlight: e.elephantsInFlight, leasesInFlight: e.leasesInFlight, hints: e.hints.size };
    });
  }

  /**
   * @throws Error describing the first violation: a count below 0; an endpoint's backlog,
   *   elephant or lease count different from the sum over its unreleased leases; the hint
   *   count different from the hints held; the hint table above its sweep bound.
   */
  invariants(): void {
    const sums = new Map<string, { tokens: number; elephants: number; leases: number }>();
    for (const l of this.live) {
      const s = sums.get(l.endpointId) ?? { tokens: 0, elephants: 0, leases: 0 };
      s.tokens += l.uncachedTokens;
      s.leases += 1;
      if (l.elephant) s.elephants += 1;
      sums.set(l.endpointId, s);
    }
    let hints = 0;
    for (const [id, e] of this.endpoints) {
      const s = sums.get(id) ?? { tokens: 0, elephants: 0, leases: 0 };
      if (e.backlogTokens < 0 || e.elephantsInFlight < 0 || e.leasesInFlight < 0) {
        throw new Error(`prefill '${id}': negative load (backlog ${e.backlogTokens}, elephants ${e.elephantsInFlight}, leases ${e.leasesInFlight})`);
      }
      if (e.backlogTokens !== s.tokens || e.elephantsInFlight !== s.elephants || e.leasesInFlight !== s.leases) {
        throw new Error(`prefill '${id}': load (${e.backlogTokens} tok, ${e.elephantsInFlight} elephants, ${e.leasesInFlight} leases) != its live leases (${s.tokens}, ${s.elephants}, ${s.leases})`);
      }
      let own = 0;
      for (const t of e.byCaller.values()) {
        if (t <= 0) throw new Error(`prefill '${id}': a caller's own backlog is ${t}`);
        own += t;
      }
      if (own > e.backlogTokens) throw new Error(`prefill '${id}': callers' own backlogs ${own} > backlog ${e.backlogTokens}`);
      hints += e.hints.size;
    }
    if (hints !== this.hintCount) throw new Error(`prefill hints: counted ${this.hintCount}, held ${hints}`);
    if (this.hintCount > this.nextSweepAt) throw new Error(`prefill hints: ${this.hintCount} above the sweep bound ${this.nextSweepAt}`);
  }

  private entry(endpointId: string): EndpointPrefill {
    let e = this.endpoints.get(endpointId);
    if (e === undefined) {
      e = { backlogTokens: 0, elephantsInFlight: 0, leasesInFlight: 0, hints: new Map(), byCaller: new Map() };
      this.endpoints.set(endpointId, e);
    }
    return e;
  }
}

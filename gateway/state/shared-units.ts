/**
 * The request path's side of the limits replicas share through Redis: RouteWise quota windows
 * and concurrency slots, and multi-target per-target rate limits. The core reserves these
 * synchronously while it routes (sans-I/O, no awaits) and keeps its own ledgers as this
 * replica's mirror; the gateway then takes the same unit replica-wide *before* the attempt's
 * request leaves, and tells the core what Redis said:
 *
 * 1. the core dispatches attempt A to route R (its local ledger already reserved R's unit);
 * 2. when R has a shared limit, the exchange holds the upstream call and asks `acquire`: one
 *    script per limit (`SharedQuotas.takeRolling` / `reserveCounted` / `takeBucket`), waiting at
 *    most `state.acquire_timeout_ms`, then the local share (a counted fallback);
 * 3. the answer is fed back into the core as plain data applied deterministically: replica-wide
 *    use per quota window and "spent until" (`ResourceLedger.applySharedQuota`), slots other
 *    replicas hold (`applySharedConcurrency`), the shared bucket's level
 *    (`TargetRateLimit.applyShared`), each valid for `state.max_staleness_ms`;
 * 4. taken: the upstream call goes out and the grant is released exactly once when the attempt
 *    ends (success, failure, cancel, client gone); refused: the exchange reports the attempt as
 *    failed with `shared_unit_refused` (no upstream call, not a health failure) and the core
 *    falls to its next candidate, as the local limit would have made it.
 *
 * So no unit is spent replica-wide beyond its limit while Redis answers (the local-share bound of
 * `quota-sync.ts` applies while it does not). Pools of the local daily counter
 * (`local_quota_fallback`) stay per process, as the seed defines them.
 */
import type { ResolvedModel } from '../../core/model/resolved-model.ts';
import type { Outcome } from '../../core/lifecycle/outcome.ts';
import { RouteWisePlanner } from '../../core/strategies/routewise/routewise.ts';
import type { SharedQuotas, SharedTake } from './quota-sync.ts';

/** Options of `SharedUnits`. */
export interface SharedUnitsOptions {
  /** The core's clock, ms (facts fed back are stamped with it). */
  now: () => number;
  /** How long a fed-back fact counts in the core, ms (`state.max_staleness_ms`). */
  factTtlMs: number;
  /** How long a concurrency hold lives in Redis unless released (a crashed replica's lapse), ms. */
  holdMs: () => number;
}

/** A unit taken for one attempt; `release` ends it (idempotent). */
export interface SharedGrant {
  /** Ends the grant: frees the concurrency holds; sets token-window uses to `actualTokens` when given. */
  release(actualTokens: number | null): void;
}

/** What `acquire` answers. */
export type SharedAcquire = { ok: true; grant: SharedGrant } | { ok: false; outcome: Outcome & { kind: 'shared_unit_refused' } };

interface QuotaGroup {
  /** Indices of the pool's windows this group takes (all of one unit). */
  readonly windows: readonly number[];
  readonly limits: ReadonlyArray<{ limit: number; windowMs: number }>;
  readonly tokens: boolean;
}

interface Spec {
  readonly quota: { name: string; groups: QuotaGroup[]; windowCount: number } | null;
  readonly concurrency: { name: string; limit: number } | null;
  readonly rate: { name: string; rpm: number; burst: number } | null;
}

const NONE: Spec = { quota: null, concurrency: null, rate: null };

/** The shared units of the gateway's request path (see the module comment). */
export class SharedUnits {
  /** Per model object (one per generation): endpoint id → its shared limits. */
  private readonly specs = new WeakMap<ResolvedModel, Map<string, Spec>>();
  /** Concurrency name → holds this replica has in Redis now. */
  private readonly heldHere = new Map<string, number>();
  private nextId = 1;
  /** Grants taken and released (for tests and invariants). */
  taken = 0;
  released = 0;
  /** Attempts refused because a shared limit was spent, by limit. */
  readonly refused: Record<'quota' | 'concurrency' | 'rate_limit', number> = { quota: 0, concurrency: 0, rate_limit: 0 };

  constructor(private readonly quotas: SharedQuotas, private readonly opts: SharedUnitsOptions) {}

  /** Whether an attempt of `model` to `endpointId` takes a shared unit before it is sent. Cheap; cached per model. */
  needs(model: ResolvedModel | null, endpointId: string): boolean {
    return model !== null && this.specOf(model, endpointId) !== NONE;
  }

  /**
   * Takes every shared unit an attempt of `model` to `endpointId` needs (`tokens`: the token
   * estimate for token windows). Never rejects; resolves within about `acquire_timeout_ms` per
   * limit. A refusal returns what was taken so far before it resolves.
   */
  async acquire(model: ResolvedModel, endpointId: string, tokens: number): Promise<SharedAcquire> {
    const spec = this.specOf(model, endpointId);
    const id = `${this.nextId++}`;
    const undo: Array<() => void> = [];
    const adjust: Array<(actual: number) => void> = [];
    let inRedis = false;
    const refuse = (unit: 'quota' | 'concurrency' | 'rate_limit', retryAfterMs: number | null): SharedAcquire => {
      for (const u of undo) u();
      this.refused[unit]++;
      return { ok: false, outcome: { kind: 'shared_unit_refused', unit, retryAfterMs } };
    };
    if (spec.rate) {
      const r = await this.quotas.takeBucket(spec.rate.name, spec.rate.rpm, spec.rate.burst);
      const t = model.multiTarget?.targets.find((x) => x.endpointId === endpointId)?.rateLimit;
      if (r.shared && t) t.applyShared(r.level[0]!, this.opts.now());
      if (!r.taken) return refuse('rate_limit', r.retryAfterMs);
    }
    if (spec.quota) {
      const q = spec.quota;
      const used = new Array<number>(q.windowCount).fill(0);
      let fromRedis = true;
      let refused: SharedTake | null = null;
      for (const g of q.groups) {
        const units = g.tokens ? Math.max(1, Math.ceil(tokens)) : 1;
        const r = await this.quotas.takeRolling(`${q.name}:${g.tokens ? 't' : 'r'}`, id, g.limits, units);
        fromRedis &&= r.shared;
        g.windows.forEach((w, i) => (used[w] = r.level[i] ?? 0));
        if (!r.taken) {
          refused = r;
          break;
        }
        const name = `${q.name}:${g.tokens ? 't' : 'r'}`;
        undo.push(() => this.quotas.adjustRolling(name, id, g.limits.length, 0));
        if (g.tokens) adjust.push((actual) => this.quotas.adjustRolling(name, id, g.limits.length, actual));
      }
      const planner = model.planner;
      if (fromRedis && planner instanceof RouteWisePlanner) {
        const now = this.opts.now();
        const until = now + this.opts.factTtlMs;
        planner.ledger.applySharedQuota(endpointId, { usedPerWindow: used, untilMs: until, fullUntilMs: refused === null ? null : now + (refused.retryAfterMs ?? this.opts.factTtlMs) });
      }
      if (refused !== null) return refuse('quota', refused.retryAfterMs);
    }
    if (spec.concurrency) {
      const c = spec.concurrency;
      const r = await this.quotas.reserveCounted(c.name, id, c.limit, this.opts.holdMs());
      inRedis = r.shared && r.taken;
      if (inRedis) this.heldHere.set(c.name, (this.heldHere.get(c.name) ?? 0) + 1);
      const planner = model.planner;
      // Holds in Redis after the call, less this replica's own there: what the others hold.
      if (r.shared && planner instanceof RouteWisePlanner) planner.ledger.applySharedConcurrency(endpointId, r.level[0]! - (this.heldHere.get(c.name) ?? 0), this.opts.now() + this.opts.factTtlMs);
      if (!r.taken) return refuse('concurrency', null);
    }
    this.taken++;
    let done = false;
    return {
      ok: true,
      grant: {
        release: (actualTokens) => {
          if (done) return;
          done = true;
          this.released++;
          if (actualTokens !== null) for (const a of adjust) a(actualTokens);
          if (spec.concurrency) this.freeHold(spec.concurrency.name, id, inRedis);
        },
      },
    };
  }

  /** Grants taken and not yet released. */
  get live(): number {
    return this.taken - this.released;
  }

  private freeHold(name: string, id: string, inRedis: boolean): void {
    if (inRedis) this.heldHere.set(name, Math.max(0, (this.heldHere.get(name) ?? 0) - 1));
    this.quotas.release(name, id);
  }

  private specOf(model: ResolvedModel, endpointId: string): Spec {
    let byEndpoint = this.specs.get(model);
    if (!byEndpoint) this.specs.set(model, (byEndpoint = new Map()));
    let spec = byEndpoint.get(endpointId);
    if (spec === undefined) {
      spec = buildSpec(model, endpointId);
      byEndpoint.set(endpointId, spec);
    }
    return spec;
  }
}

/** The shared limits of `endpointId` in `model`: its RouteWise pools, or its target's rate limit. */
function buildSpec(model: ResolvedModel, endpointId: string): Spec {
  const target = model.multiTarget?.targets.find((t) => t.endpointId === endpointId);
  const rate = target?.rateLimit ? { name: `rl:${model.id}:${endpointId}`, rpm: target.rateLimit.requestsPerMinute, burst: target.rateLimit.burst } : null;
  let quota: Spec['quota'] = null;
  let concurrency: Spec['concurrency'] = null;
  const planner = model.planner;
  if (planner instanceof RouteWisePlanner) {
    const route = planner.routes.find((r) => r.endpointId === endpointId);
    const q = route?.resources.quota;
    if (q && q.localDaily !== true) {
      const groups: QuotaGroup[] = [];
      for (const tokens of [false, true]) {
        const windows = q.windows.flatMap((w, i) => ((w.unit === 'tokens') === tokens ? [i] : []));
        if (windows.length > 0) groups.push({ windows, limits: windows.map((i) => ({ limit: q.windows[i]!.limit, windowMs: q.windows[i]!.windowMs })), tokens });
      }
      quota = { name: `q:${model.id}:${q.poolId}`, groups, windowCount: q.windows.length };
    }
    const c = route?.resources.concurrency;
    if (c) concurrency = { name: `c:${model.id}:${c.poolId}`, limit: c.limit };
  }
  return rate === null && quota === null && concurrency === null ? NONE : { quota, concurrency, rate };
}

/**
 * The walk over a multi-target alias's candidates (seed 003 "优先级", "回退"): within the highest
 * priority tier, the strategy's order over the targets the admission admits; when a tier runs
 * out, the next tier, in the same request. Each tier is ordered when the walk enters it, so a
 * stateful strategy (round robin) advances only for tiers that are used. Each target is entered
 * once per request. A request whose conversation context lives on one target
 * (`RouteRequest.preferEndpointId`, seed 003) tries that target first, outside the strategy's
 * order, when it is admitted; when it cannot serve (not admitted, or failed), the targets on the
 * same provider key (`provider-key.ts`) come next, in tier and declaration order, before the
 * strategy's walk. A target over its own rate limit is skipped and handed to the life to record
 * as a failed 429 attempt (`drainRateSkips`).
 */
import type { Rng } from '../../rng.ts';
import type { RouteRequest } from '../../lifecycle/seam.ts';
import type { ResolvedTarget } from '../../model/resolved-model.ts';
import { planOrder, type Candidate, type Planner } from '../../strategies/planner.ts';
import type { Admission } from '../../admission/admission.ts';
import { fitsWindow } from './context-floor.ts';
import type { GateName } from '../../admission/gate.ts';
import { providerKeyOf } from './provider-key.ts';

/** The runtime filters `when_all_unavailable: try_anyway` lifts (seed 003): cooldown and enforced health checks. */
const RUNTIME_FILTERS: ReadonlySet<GateName> = new Set<GateName>(['cooldown', 'health_check']);

/** One request's walk over its tiers. */
export class TierWalk {
  /** Target indices dispatched to or skipped. */
  readonly tried = new Set<number>();
  /** The strategy's reason for the current tier's order (`none` before the first). */
  reason = 'none';
  /** `when_all_unavailable: try_anyway` in force: the runtime filters (cooldown, health check) are ignored. */
  ignoreCooldown = false;
  /** After a context-length refusal: targets need a `context_length` above this. */
  contextFloor: number | null = null;
  private tierIdx = 0;
  /** The current tier in the strategy's order; null until the walk enters the tier. */
  private tierOrder: ResolvedTarget[] | null = null;
  private tierPos = 0;
  private rateSkips: ResolvedTarget[] = [];
  /**
   * The conversation's targets still to offer before the strategy's walk: the preferred one
   * (`RouteRequest.preferEndpointId`), then those on its provider key; null until first built.
   */
  private preferQueue: ResolvedTarget[] | null = null;

  constructor(
    readonly tiers: ReadonlyArray<readonly ResolvedTarget[]>,
    private readonly planner: Planner,
    private readonly request: RouteRequest,
    private readonly rng: Rng,
    private readonly admission: Admission,
  ) {}

  /**
   * The next target to dispatch to, its rate-limit token taken; null when `budgetLeft` is false
   * (the fallback budget is spent) or every tier is exhausted. Targets skipped over their rate
   * limit on the way are marked tried and wait in `drainRateSkips`.
   */
  next(nowMs: number, budgetLeft: boolean): ResolvedTarget | null {
    const p = this.preferred(nowMs, budgetLeft);
    if (p !== null) return p;
    while (this.tierIdx < this.tiers.length) {
      if (this.tierOrder === null) {
        const admissible = this.tiers[this.tierIdx]!.filter((t) => !this.tried.has(t.index) && this.admits(t, nowMs));
        if (admissible.length === 0) {
          this.tierIdx++;
          continue;
        }
        const candidates: Candidate[] = admissible.map((t) => ({ endpointId: t.endpointId, weight: t.weight, routeIndex: t.index }));
        const ordering = planOrder(this.planner, candidates, this.request, nowMs, this.rng);
        this.tierOrder = ordering.order.map((i) => admissible[i]!);
        this.reason = ordering.reason;
        this.tierPos = 0;
      }
      while (this.tierPos < this.tierOrder.length) {
        const t = this.tierOrder[this.tierPos++]!;
        if (this.tried.has(t.index) || !this.admits(t, nowMs)) continue;
        if (!budgetLeft) return null;
        if (!this.admission.gates.rateLimit.take(t, nowMs)) {
          this.tried.add(t.index);
          this.rateSkips.push(t);
          continue;
        }
        return t;
      }
      this.tierIdx++;
      this.tierOrder = null;
    }
    return null;
  }

  /**
   * The next of the conversation's targets (`RouteRequest.preferEndpointId`): the one holding
   * its context, whatever its tier, then the others on the same provider key (highest tier
   * first, declaration order), each when it is a candidate, untried, admitted, within the budget
   * and under its rate limit (its token taken; one over it waits in `drainRateSkips`). The
   * reason becomes `conversation`. Null when none is left; the strategy's walk follows.
   */
  private preferred(nowMs: number, budgetLeft: boolean): ResolvedTarget | null {
    const queue = (this.preferQueue ??= this.conversationTargets());
    if (!budgetLeft) return null;
    while (queue.length > 0) {
      const t = queue.shift()!;
      if (this.tried.has(t.index) || !this.admits(t, nowMs)) continue;
      if (!this.admission.gates.rateLimit.take(t, nowMs)) {
        this.tried.add(t.index);
        this.rateSkips.push(t);
        continue;
      }
      this.reason = 'conversation';
      return t;
    }
    return null;
  }

  /** The preferred target and then the others on its provider key, in walk order; empty without one. */
  private conversationTargets(): ResolvedTarget[] {
    const id = this.request.preferEndpointId;
    if (id === undefined || id === null) return [];
    const all = this.tiers.flat();
    const home = all.find((t) => t.endpointId === id);
    if (home === undefined) return [];
    const key = providerKeyOf(home.route);
    const sameKey = key === null ? [] : all.filter((t) => t !== home && providerKeyOf(t.route) === key);
    return [home, ...sameKey];
  }

  /** Starts the walk over from the first tier (for `try_anyway`, after setting `ignoreCooldown`). */
  restart(): void {
    this.tierIdx = 0;
    this.tierOrder = null;
  }

  /** Targets skipped over their rate limit since the last call, in walk order; clears them. */
  drainRateSkips(): ResolvedTarget[] {
    if (this.rateSkips.length === 0) return this.rateSkips;
    const out = this.rateSkips;
    this.rateSkips = [];
    return out;
  }

  /** Whether another target could still be dispatched (pure apart from rate-limit refills). */
  anotherLeft(nowMs: number, budgetLeft: boolean): boolean {
    if (!budgetLeft) return false;
    for (let i = this.tierIdx; i < this.tiers.length; i++) {
      for (const t of this.tiers[i]!) {
        if (!this.tried.has(t.index) && this.admits(t, nowMs) && this.admission.gates.rateLimit.admits(t, nowMs)) return true;
      }
    }
    return false;
  }

  /**
   * Whether an untried target is cooling down or held out by an enforcing health check at `nowMs`
   * (`try_anyway` then walks again).
   */
  anyCooling(nowMs: number): boolean {
    const { cooldown, healthCheck } = this.admission.gates;
    return this.tiers.some((tier) => tier.some((t) => !this.tried.has(t.index) && ((cooldown !== null && !cooldown.admits(t, nowMs)) || !healthCheck.admits(t))));
  }

  /** Whether an enforcing health check holds `t` out (for the error message). */
  healthCheckRefuses(t: ResolvedTarget): boolean {
    return !this.admission.gates.healthCheck.admits(t);
  }

  /** Runtime admission of a target: the context floor, then every check gate (the runtime filters unless `try_anyway`). */
  private admits(t: ResolvedTarget, nowMs: number): boolean {
    if (!fitsWindow(t.route.contextLength, 0, this.contextFloor)) return false;
    return this.admission.admits(t, nowMs, this.ignoreCooldown ? RUNTIME_FILTERS : null);
  }
}

/**
 * The walk over a multi-target alias's candidates (seed 003 "优先级", "回退"): within the highest
 * priority tier, the strategy's order over the targets the admission admits; when a tier runs
 * out, the next tier, in the same request. Each tier is ordered when the walk enters it, so a
 * stateful strategy (round robin) advances only for tiers that are used. Each target is entered
 * once per request. A request whose conversation context lives on one target
 * (`RouteRequest.preferEndpointId`, seed 003) tries that target first, outside the strategy's
 * order, when it is admitted. A target over its own rate limit is skipped and handed to the life to record
 * as a failed 429 attempt (`drainRateSkips`).
 */
import type { Rng } from '../../rng.ts';
import type { RouteRequest } from '../../lifecycle/seam.ts';
import type { ResolvedTarget } from '../../model/resolved-model.ts';
import { planOrder, type Candidate, type Planner } from '../../strategies/planner.ts';
import type { Admission } from '../../admission/admission.ts';
import { fitsWindow } from './context-floor.ts';
import type { GateName } from '../../admission/gate.ts';

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
  /** The request's preferred target (`RouteRequest.preferEndpointId`) was looked at. */
  private preferTried = false;

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
    if (!this.preferTried) {
      this.preferTried = true;
      const p = this.preferred(nowMs, budgetLeft);
      if (p !== null) return p;
    }
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
   * The target holding the request's conversation context (`RouteRequest.preferEndpointId`),
   * whatever its tier, when it is a candidate, admitted, within the budget and under its rate
   * limit (its token taken); the reason becomes `conversation`. Null otherwise (a target over its
   * rate limit waits in `drainRateSkips`), and the strategy's walk follows as usual.
   */
  private preferred(nowMs: number, budgetLeft: boolean): ResolvedTarget | null {
    const id = this.request.preferEndpointId;
    if (id === undefined || id === null || !budgetLeft) return null;
    for (const tier of this.tiers) {
      for (const t of tier) {
        if (t.endpointId !== id || this.tried.has(t.index) || !this.admits(t, nowMs)) continue;
        if (!this.admission.gates.rateLimit.take(t, nowMs)) {
          this.tried.add(t.index);
          this.rateSkips.push(t);
          return null;
        }
        this.reason = 'conversation';
        return t;
      }
    }
    return null;
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

/**
 * `routewise`: minimise mean time-to-first-token under an expected-cost budget across on-demand
 * APIs, quota subscriptions and concurrency subscriptions (seed 000 "RouteWise";
 * RouteWise: Latency–Cost Optimization for Multi-Provider LLM Routing, EuroSys '27).
 *
 * One decision, given the admitted candidates of a request:
 * 1. predict the output length L̂ (output-length.ts) and price every candidate (effective-cost.ts):
 *    on-demand by tokens, quota by the shadow price ψ(z) inside the cost envelope
 *    (cost-envelope.ts; masked until calibrated), concurrency at 0 while a slot is free; routes
 *    out of quota or slots are ineligible;
 * 2. budget B = c_min + α·(c_max − c_min) over the eligible (budget.ts), α per model or per
 *    request (`x-switchyard-budget-alpha`);
 * 3. cold start (cold-start.ts): the cheapest unprofiled, unleased route is explored with
 *    probability q; with nothing profiled the cheapest route is taken;
 * 4. otherwise the exact LP over the profiled routes (lp.ts) gives a mix of at most two routes;
 *    the primary is drawn from it with the caller's RNG;
 * 5. the primary's quota / slot is reserved (resources.ts); with `hedge: probability` the
 *    latest-safe backup plan is computed (hedge.ts) and kept in `lastDecision.hedge`.
 * `order` gives the 429 fallback order: the mix by weight, then the rest by (over budget,
 * latency, cost, endpoint id).
 *
 * Learning: `tapLife` wraps a request's life (life-tap.ts) so every attempt reports its TTFT,
 * failure before the first token, censoring (cancelled before the first token) and usage; the
 * latency profiles (latency-profile.ts), the output-length predictor and the envelope learn from
 * those. Without the tap (`RoutingCore` not wiring it), the plain `observe` only releases
 * reservations and honours 429s — RouteWise then never sees a TTFT and stays in cold start.
 *
 * RouteWise plans its own candidates and ignores offload routes (seed 000). State is
 * process-local (profiles, reservations): quota / concurrency routes refuse more than one worker
 * (`assertWorkerScope`). Gateway replicas sharing state through Redis take each quota /
 * concurrency unit replica-wide as well, after this planner reserved it; the driver reports a
 * refused unit as a failed attempt (`shared_unit_refused`, the request falls to its next route)
 * and feeds what the shared counter said into `ledger` (`applySharedQuota`,
 * `applySharedConcurrency`), which then plans with the replica-wide use.
 */
import type { Rng } from '../../rng.ts';
import type { Outcome } from '../../lifecycle/outcome.ts';
import type { RequestLife, RouteRequest } from '../../lifecycle/seam.ts';
import type { Candidate, Ordering, Pick, Planner, StrategyDefinition } from '../planner.ts';
import { RouteWiseParamsSchema, BUDGET_ALPHA_HEADER, type RouteWiseParams } from './params.ts';
import { onDemandCostUsd, quotaShadowCostUsd } from './effective-cost.ts';
import { budgetUsd, type Budget } from './budget.ts';
import { drawFromMix, emptyLpSolution, solveLatencyLp } from './lp.ts';
import { LatencyProfile } from './latency-profile.ts';
import { HedgeGrid, hedgeCheckpointsMs, planHedgeArrays, type CdfSource, type HedgePlan } from './hedge.ts';
import { OutputLengthPredictor } from './output-length.ts';
import { CostEnvelope, type Envelope } from './cost-envelope.ts';
import { DEFAULT_CONCURRENCY_BLOCK_MS, DEFAULT_QUOTA_BLOCK_MS, ResourceLedger, type Reservation } from './resources.ts';
import { ExplorationLeases, ProbeScheduler, explorationProbability, type ProbeGate } from './cold-start.ts';
import { RouteWiseLifeTap, type AttemptDetail, type AttemptObserver } from './life-tap.ts';
import { routeWiseRouteFromPlanner, type RouteWisePlannerRoute, type RouteWiseRoute } from './route-spec.ts';
import { type QuotaSnapshotStore, type QuotaSourceSelector, type QuotaUsageRecord } from './quota-source.ts';

/** One quota-source route of a planner after a snapshot was applied (`applyQuotaSnapshots`). */
export interface QuotaSourceStatus {
  readonly endpointId: string;
  readonly selector: QuotaSourceSelector;
  /** The record the selector resolved to, or null (unready: no fetcher, no poll yet, or no exact match). */
  readonly record: QuotaUsageRecord | null;
  /** The route's configured limits (its `quota:` windows), in its configured units. */
  readonly configuredLimits: readonly number[];
  /**
   * The fetched limit when it agrees with none of the configured ones, else null. The fetched
   * numbers are what RouteWise plans with; the driver logs the disagreement.
   */
  readonly limitMismatch: number | null;
}

/**
 * One finished request of a request log, replayed into a planner at start (`replay`). Times are
 * on the driver's clock (the same monotonic ms as `nowMs`), earlier than the replay's `nowMs`.
 */
export interface ReplayedRequest {
  readonly endpointId: string;
  /** When it ended, ms. */
  readonly endMs: number;
  /** Whether the serving attempt answered (else it failed before its first token). */
  readonly ok: boolean;
  /** Time to first token, ms; null when unknown (a failure, or no first token logged). */
  readonly ttftMs: number | null;
  readonly inputTokens: number;
  readonly cachedTokens: number;
  readonly outputTokens: number;
}

/**
 * Thrown at start when a model's quota routes cannot be priced (seed 000 "RouteWise", cold
 * start: a model with only quota routes fails to start rather than serve an unroutable model):
 * - by the constructor when no route of the model has a price at all (the envelope is made of
 *   API-equivalent costs: a priced on-demand route, or else the quota routes' own `pricing:`);
 * - by `assertEnvelopeCalibrated` (the gateway, after its warm start) when every route is a quota
 *   route and the envelope still holds fewer than `envelope_min_samples` requests.
 */
export class EnvelopeNotCalibratedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EnvelopeNotCalibratedError';
  }
}

/** The last decision, for metadata, tests and the hedge hook. Overwritten by each pick. */
export interface RouteWiseDecision {
  /** Endpoint chosen as primary. */
  endpointId: string;
  /** `routewise` (single LP route), `routewise_mix` (drawn from a two-route mix), `explore`, `cold_start`, `over_budget`, `no_eligible_route`. */
  reason: string;
  alpha: number;
  budget: Budget | null;
  /** L̂, tokens. */
  predictedOutputTokens: number;
  /** The LP mix over the profiled routes (endpoint ids and weights), empty when the LP did not run. */
  mix: Array<{ endpointId: string; weight: number }>;
  /** The hedge plan for this primary (hedge: probability), else null. */
  hedge: HedgePlan | null;
}

/** Rate at which a route's observed cached-prompt fraction follows new responses (EWMA weight). */
const CACHED_FRACTION_EWMA = 0.1;

/** A RouteWise planner for one model. */
export class RouteWisePlanner implements Planner, AttemptObserver {
  readonly params: RouteWiseParams;
  readonly routes: readonly RouteWiseRoute[];
  /** The last decision (see `RouteWiseDecision`). */
  readonly lastDecision: RouteWiseDecision = { endpointId: '', reason: 'none', alpha: 0, budget: null, predictedOutputTokens: 0, mix: [], hedge: null };
  readonly ledger: ResourceLedger;
  /** The cost envelope and output-length predictor (the previous generation's when `carryFrom` shares them). */
  envelope: CostEnvelope;
  predictor: OutputLengthPredictor;
  /** Null unless `hedge: probability`. */
  readonly hedgeGrid: HedgeGrid | null;
  private readonly profiles: LatencyProfile[];
  private readonly cachedFraction: Float64Array;
  private readonly index = new Map<string, number>();
  private readonly apiRoutes: number[];
  private readonly hasQuota: boolean;
  private readonly leases: ExplorationLeases;
  private readonly prober: ProbeScheduler;
  // Scratch, indexed by candidate position (allocation-free hot path).
  private readonly cost: Float64Array;
  private readonly lat: Float64Array;
  private readonly routeOf: Int32Array;
  private readonly scratchOrder: Int32Array;
  private readonly sources: Array<CdfSource | null>;
  private readonly lp = emptyLpSolution();
  /** Reservations made by `pick` that no dispatch has taken yet (tap mode). */
  private readonly pending: Reservation[] = [];
  /** Plain mode: reservations committed at pick, released oldest-first by `observe`. */
  private readonly held = new Map<string, Reservation[]>();
  private tapped = false;
  /**
   * Seed 000: a routewise model plans its own candidates and ignores offload routes; an offload
   * policy configured on it is inactive. (For the offload/lifecycle code to read.)
   */
  readonly ignoresOffload = true;

  /**
   * @param params validated parameters (`parseRouteWiseParams`).
   * @param routes the model's routes in declaration order.
   * @throws EnvelopeNotCalibratedError when quota routes have no priced on-demand route beside them.
   * @throws Error for duplicate endpoint ids or inconsistent pool declarations.
   */
  /**
   * @param outbound the core's outbound-slot view: a route whose gateway slots are full is passed
   *   over for the next-best one (like a full concurrency route); when every route is full the
   *   first choice is kept and the request queues there.
   */
  constructor(
    params: RouteWiseParams,
    routes: readonly RouteWiseRoute[],
    private readonly outbound?: { slotFree(endpointId: string): boolean },
  ) {
    this.params = params;
    this.routes = routes;
    this.ledger = new ResourceLedger();
    routes.forEach((r, i) => {
      if (this.index.has(r.endpointId)) throw new Error(`routewise: endpoint '${r.endpointId}' appears twice`);
      this.index.set(r.endpointId, i);
      this.ledger.defineRoute(r.endpointId, r.resources);
    });
    this.apiRoutes = routes.flatMap((r, i) => (r.providerType === 'on_demand' && r.priced ? [i] : []));
    this.hasQuota = routes.some((r) => r.providerType === 'quota');
    // Without a priced on-demand route, the quota routes' own list prices are the API equivalent.
    if (this.hasQuota && this.apiRoutes.length === 0) this.apiRoutes = routes.flatMap((r, i) => (r.providerType === 'quota' && r.priced ? [i] : []));
    if (this.hasQuota && this.apiRoutes.length === 0) {
      const quota = routes.filter((r) => r.providerType === 'quota').map((r) => r.endpointId);
      throw new EnvelopeNotCalibratedError(
        `routewise: the cost envelope of quota route(s) ${quota.join(', ')} cannot be calibrated: it is built from API-equivalent costs, so the model needs at least one on-demand route with pricing (or pricing: on its quota routes, and a request log to warm the envelope from)`,
      );
    }
    const s = params.slo_ms;
    this.hedgeGrid =
      params.hedge === 'probability'
        ? new HedgeGrid(s, params.hedge_delta_ms, hedgeCheckpointsMs(s, params.hedge_checkpoint_start, params.hedge_checkpoint_end, params.hedge_checkpoint_step))
        : null;
    const gridMs = this.hedgeGrid ? this.hedgeGrid.pointsMs : [s];
    this.profiles = routes.map(() => new LatencyProfile({ windowMs: params.latency_window_sec * 1000, errorPenaltyMs: params.error_penalty_ms, gridMs }));
    this.cachedFraction = new Float64Array(routes.length);
    this.envelope = new CostEnvelope({
      windowMs: params.envelope_window_sec * 1000,
      lowQuantile: params.envelope_low_quantile,
      highQuantile: params.envelope_high_quantile,
      minSamples: params.envelope_min_samples,
    });
    this.predictor = new OutputLengthPredictor({
      bucketMinSamples: params.output_length_bucket_min_samples,
      globalMinSamples: params.output_length_global_min_samples,
      defaultTokens: params.output_length_default_tokens,
    });
    this.leases = new ExplorationLeases(params.cold_start_lease_sec * 1000);
    this.prober = new ProbeScheduler(params.probe_idle_sec * 1000, params.probe_interval_sec * 1000);
    const n = routes.length;
    this.cost = new Float64Array(n);
    this.lat = new Float64Array(n);
    this.routeOf = new Int32Array(n);
    this.scratchOrder = new Int32Array(n);
    this.sources = new Array<CdfSource | null>(n).fill(null);
  }

  /**
   * Shares what the same model's RouteWise planner of the previous generation learnt: the
   * latency profile and cached-prompt fraction of every route whose endpoint id is unchanged (when
   * the profile's window, penalty and grid are too), the cost envelope and output-length
   * predictor when their settings are unchanged, and the quota spend of pools declared alike
   * (`ResourceLedger.carryFrom`). Shared objects go on learning from both generations' lives.
   * A planner of another strategy leaves this one fresh.
   */
  carryFrom(previous: Planner): void {
    if (!(previous instanceof RouteWisePlanner)) return;
    this.routes.forEach((r, i) => {
      const j = previous.index.get(r.endpointId);
      if (j === undefined) return;
      if (previous.profiles[j]!.sameOptions(this.profiles[i]!)) this.profiles[i] = previous.profiles[j]!;
      this.cachedFraction[i] = previous.cachedFraction[j]!;
    });
    if (JSON.stringify(previous.envelope.options) === JSON.stringify(this.envelope.options)) this.envelope = previous.envelope;
    if (JSON.stringify(previous.predictor.options) === JSON.stringify(this.predictor.options)) this.predictor = previous.predictor;
    this.ledger.carryFrom(previous.ledger);
  }

  /** Routes with a `quota_source` selector, in declaration order. */
  quotaSources(): Array<{ endpointId: string; selector: QuotaSourceSelector }> {
    const out: Array<{ endpointId: string; selector: QuotaSourceSelector }> = [];
    for (const r of this.routes) if (r.resources.quota?.source) out.push({ endpointId: r.endpointId, selector: r.resources.quota.source });
    return out;
  }

  /**
   * Resolves every quota-source route against `store` and plans with the result: a resolved
   * record's used / limit replace the route's own count (local uses since are added on top), an
   * unresolved one leaves the route unready. Returns each route's status for the driver to
   * report (unresolved sources, limits that disagree with the configured ones).
   */
  applyQuotaSnapshots(store: QuotaSnapshotStore): QuotaSourceStatus[] {
    const out: QuotaSourceStatus[] = [];
    for (const r of this.routes) {
      const q = r.resources.quota;
      if (!q?.source) continue;
      const hit = store.resolve(q.source);
      const prev = this.ledger.quotaSnapshot(r.endpointId);
      // A snapshot already applied is not applied again: the local uses counted since it stay.
      if (!hit) this.ledger.setQuotaSnapshot(r.endpointId, null);
      else if (!prev || prev.fetchedAtMs !== hit.fetchedAtMs || prev.used !== hit.record.used || prev.limit !== hit.record.limit) {
        this.ledger.setQuotaSnapshot(r.endpointId, { used: hit.record.used, limit: hit.record.limit, fetchedAtMs: hit.fetchedAtMs, resetsAtUnixMs: hit.record.resetsAtUnixMs });
      }
      const configuredLimits = q.windows.map((w) => w.limit);
      const limitMismatch = hit && !configuredLimits.includes(hit.record.limit) ? hit.record.limit : null;
      out.push({ endpointId: r.endpointId, selector: q.source, record: hit?.record ?? null, configuredLimits, limitMismatch });
    }
    return out;
  }

  /** The wall-clock view of the local daily counters (`ResourceLedger.setLocalTime`). */
  setLocalTime(wallMinusMonoMs: number, utcOffsetMin: number): void {
    this.ledger.setLocalTime(wallMinusMonoMs, utcOffsetMin);
  }

  /**
   * Warm start (`db_bootstrap_enabled`): feeds finished requests of a request log, oldest end
   * first, into the latency profiles (a success with its TTFT, or a failure), the output-length
   * predictor, the cached-prompt fractions and the cost envelope, as live traffic would have.
   * A request served by an endpoint this planner does not have (a route of the same model since
   * removed or renamed) still teaches the predictor and the envelope, which describe the model's
   * traffic, not a route. Requests out of order are skipped (windows must see time advance).
   * Call before the first `pick`.
   * @returns how many requests were taken.
   */
  replay(requests: readonly ReplayedRequest[]): number {
    let taken = 0;
    let lastMs = Number.NEGATIVE_INFINITY;
    for (const q of requests) {
      if (!(q.endMs >= lastMs)) continue;
      lastMs = q.endMs;
      taken++;
      const i = this.index.get(q.endpointId) ?? -1;
      if (q.ok) {
        if (i >= 0 && q.ttftMs !== null) this.profiles[i]!.recordSuccess(q.ttftMs, q.endMs);
        this.learnUsage(i, q.inputTokens, q.inputTokens, q.cachedTokens, q.outputTokens, q.endMs);
      } else if (i >= 0) this.profiles[i]!.recordFailure(q.endMs);
    }
    return taken;
  }

  /**
   * Seed 000 cold start: a model whose routes are all quota routes cannot route until its
   * envelope is calibrated, so it refuses to start instead of serving nothing. The gateway calls
   * this after its warm start.
   * @param modelId named in the message.
   * @throws EnvelopeNotCalibratedError when every route is a quota route and the envelope holds
   *   fewer than `envelope_min_samples` requests at `nowMs` (names the model, the count and the fixes).
   */
  assertEnvelopeCalibrated(modelId: string, nowMs: number): void {
    if (!this.hasQuota || this.routes.some((r) => r.providerType !== 'quota')) return;
    if (this.envelope.envelope(nowMs) !== null) return;
    const have = this.envelope.samples(nowMs);
    throw new EnvelopeNotCalibratedError(
      `model '${modelId}': routewise cannot route: every route is a quota route and its cost envelope is not calibrated (${have} of envelope_min_samples ${this.params.envelope_min_samples} requests in the last envelope_window_sec ${this.params.envelope_window_sec} s). ` +
        `Fix: keep db_bootstrap_enabled: true with a request log that holds enough recent requests of this model, lower envelope_min_samples, or add an on-demand route with pricing (the model then starts with its quota routes masked until traffic calibrates the envelope)`,
    );
  }

  /** The latency profile of `endpointId` (tests, metrics), or undefined for an unknown endpoint. */
  profile(endpointId: string): LatencyProfile | undefined {
    const i = this.index.get(endpointId);
    return i === undefined ? undefined : this.profiles[i];
  }

  /** Endpoints whose state is process-local (quota and concurrency routes). */
  statefulRoutes(): string[] {
    return this.routes.filter((r) => r.providerType !== 'on_demand').map((r) => r.endpointId);
  }

  /**
   * Seed 000 worker scope: quota and concurrency reservations are process-local, so with
   * `stateful_providers_single_worker_only` (default) a model with such routes refuses to run
   * under more than one gateway worker. The gateway calls this at start with its worker count.
   * @throws Error naming the stateful routes when `workers` > 1.
   */
  assertWorkerScope(workers: number): void {
    const stateful = this.statefulRoutes();
    if (workers > 1 && stateful.length > 0 && this.params.stateful_providers_single_worker_only) {
      throw new Error(`routewise: quota/concurrency routes ${stateful.join(', ')} keep process-local reservations and cannot run under ${workers} workers; run one worker or set stateful_providers_single_worker_only: false`);
    }
  }

  /**
   * The primary for `request` among the admitted `candidates` (see the module comment for the
   * steps). Draws from `rng` only for exploration (0 < q < 1) and two-route mixes. Reserves the
   * primary's quota / slot; with a tap present the reservation is committed by its dispatch.
   */
  pick(candidates: readonly Candidate[], request: RouteRequest, nowMs: number, rng: Rng): Pick {
    const i = this.decide(candidates, request, nowMs, rng);
    const h = this.lastDecision.hedge;
    return { candidate: i, reason: this.lastDecision.reason, hedge: h !== null && h.kind === 'hedge' ? { afterMs: h.atMs, endpointId: h.endpointId } : null };
  }

  /** True with `hedge: probability`: `pick` then returns the latest-safe hedge order. */
  get plansHedges(): boolean {
    return this.hedgeGrid !== null;
  }

  /**
   * The primary (as `pick` draws it, advancing state the same way) followed by the 429 fallback
   * order: the other route of the LP mix, then the rest by (over budget, latency, cost, endpoint
   * id); ineligible routes count as over budget with unknown latency.
   */
  order(candidates: readonly Candidate[], request: RouteRequest, nowMs: number, rng: Rng): Ordering {
    const first = this.decide(candidates, request, nowMs, rng);
    const n = candidates.length;
    const B = this.lastDecision.budget?.budgetUsd ?? Number.POSITIVE_INFINITY;
    const second = this.lp.second >= 0 ? (this.lp.first === first ? this.lp.second : this.lp.second === first ? this.lp.first : -1) : this.lp.first !== first ? this.lp.first : -1;
    const rest: number[] = [];
    for (let i = 0; i < n; i++) if (i !== first && i !== second) rest.push(i);
    const over = (i: number) => (Number.isFinite(this.cost[i]!) && this.cost[i]! <= B + 1e-9 * Math.abs(B) + 1e-15 ? 0 : 1);
    const latency = (i: number) => (Number.isFinite(this.lat[i]!) ? this.lat[i]! : Number.POSITIVE_INFINITY);
    const cost = (i: number) => (Number.isFinite(this.cost[i]!) ? this.cost[i]! : Number.POSITIVE_INFINITY);
    rest.sort((a, b) => over(a) - over(b) || latency(a) - latency(b) || cost(a) - cost(b) || (candidates[a]!.endpointId < candidates[b]!.endpointId ? -1 : 1));
    const order = [first];
    if (second >= 0 && second < n) order.push(second);
    order.push(...rest);
    return { order, reason: this.lastDecision.reason };
  }

  /**
   * Plain lifecycle feedback (no tap): releases the oldest reservation `pick` committed on
   * `endpointId` and blocks a subscription pool after a 429. Ignored once a tap reports attempts
   * (the tap sees the same ends with more detail).
   */
  observe(endpointId: string, outcome: Outcome, nowMs: number): void {
    if (this.tapped) return;
    const q = this.held.get(endpointId);
    const r = q?.shift();
    if (r) this.ledger.release(r, nowMs);
    this.noteRateLimit(endpointId, outcome, nowMs);
  }

  /** Wraps a request's life so its attempts feed this planner (see life-tap.ts for the wiring). */
  tapLife(life: RequestLife, request: RouteRequest, _nowMs: number): RouteWiseLifeTap {
    this.tapped = true;
    return new RouteWiseLifeTap(life, request, this);
  }

  /** Tap hook (AttemptObserver): commits `pick`'s reservation for `endpointId`, or takes one for a dispatch it did not choose. */
  onDispatch(endpointId: string, request: RouteRequest, nowMs: number): Reservation | null {
    for (let k = 0; k < this.pending.length; k++) {
      const r = this.pending[k]!;
      if (r.endpointId !== endpointId) continue;
      this.pending.splice(k, 1);
      this.ledger.commit(r, nowMs);
      return r;
    }
    const i = this.index.get(endpointId);
    if (i === undefined || this.routes[i]!.providerType === 'on_demand') return null;
    // A dispatch `pick` did not choose (fallback, pin): count it even beyond the limits.
    const r = this.ledger.reserve(endpointId, request.inputTokens + this.predictor.predict(request.inputTokens, this.hint(request)), nowMs, true)!;
    this.ledger.commit(r, nowMs);
    return r;
  }

  /** Tap hook: returns reservations `pick` made that no dispatch took (a refused claim). */
  settlePending(nowMs: number): void {
    while (this.pending.length > 0) this.ledger.release(this.pending.pop()!, nowMs);
  }

  /** Tap hook: a first token after `ttftMs` — a success sample; ends the route's exploration lease. */
  onFirstToken(endpointId: string, ttftMs: number, nowMs: number): void {
    const i = this.index.get(endpointId);
    if (i === undefined) return;
    this.profiles[i]!.recordSuccess(ttftMs, nowMs);
    this.leases.end(endpointId);
  }

  /**
   * Tap hook: the attempt ended. Releases its reservation (token quotas get the real count);
   * without a first token records a failure (route failures only), a censored observation
   * (cancelled / client gone) or, for a finish without a `first_token` event, a success at the
   * end time; a 429 from a subscription blocks it; a finished attempt's usage feeds the
   * output-length predictor, the route's cached fraction and the cost envelope.
   */
  onAttemptEnd(d: AttemptDetail, reservation: Reservation | null): void {
    const u = d.usage;
    if (reservation) this.ledger.release(reservation, d.endMs, u ? u.inputTokens + u.outputTokens : null);
    const i = this.index.get(d.endpointId);
    if (i === undefined) return;
    const profile = this.profiles[i]!;
    const o = d.outcome;
    if (d.firstTokenAtMs === null) {
      if (o.kind === 'ok') {
        // Finished without a first_token event: the end time bounds TTFT from above; use it.
        profile.recordSuccess(d.endMs - d.startMs, d.endMs);
        this.leases.end(d.endpointId);
      } else if (o.kind === 'cancelled' || o.kind === 'client_gone') {
        profile.recordCensored(d.endMs - d.startMs, d.endMs); // TTFT > elapsed (hedge loser, client left)
      } else if (isRouteFailure(o)) {
        profile.recordFailure(d.endMs);
        this.leases.end(d.endpointId);
      }
    }
    this.noteRateLimit(d.endpointId, o, d.endMs);
    if (u && o.kind === 'ok') this.learnUsage(i, d.inputTokens, u.inputTokens, u.cachedTokens, u.outputTokens, d.endMs);
  }

  /**
   * A probe's result: `ttftMs` of a one-token request, or null when it failed before its first
   * token. Ends the probe's gate slot.
   */
  recordProbe(endpointId: string, ttftMs: number | null, nowMs: number, gate: ProbeGate): void {
    const i = this.index.get(endpointId);
    if (i !== undefined) {
      if (ttftMs === null) this.profiles[i]!.recordFailure(nowMs);
      else this.profiles[i]!.recordSuccess(ttftMs, nowMs);
    }
    this.prober.finished(endpointId, gate);
  }

  /** The route to probe now (idle ≥ probe_idle_sec, one round per probe_interval_sec), or null; null when probing is disabled. */
  probeDue(nowMs: number, gate: ProbeGate): string | null {
    if (!this.params.probe_enabled) return null;
    return this.prober.due(nowMs, this.routes.map((r) => r.endpointId), (id) => this.profiles[this.index.get(id)!]!.lastObservedMs, gate);
  }

  /**
   * The hedge plan for a request whose primary is `primaryEndpointId` among `candidates` at
   * `nowMs` (the lifecycle hook: send `endpointId` at dispatch + `atMs` if no first token by then).
   * Backups are the other eligible candidates with ≥ min_samples first tokens in their window.
   */
  planHedgeFor(primaryEndpointId: string, candidates: readonly Candidate[], request: RouteRequest, nowMs: number): HedgePlan | null {
    if (!this.hedgeGrid) return null;
    this.price(candidates, request, nowMs, this.alphaFor(request));
    let primary = -1;
    for (let i = 0; i < candidates.length; i++) if (candidates[i]!.endpointId === primaryEndpointId) primary = i;
    return primary < 0 ? null : this.hedgeFor(candidates, primary, nowMs);
  }

  /** @throws Error when a profile, the predictor, the envelope or the ledger is inconsistent, or a pick's reservation was never settled. */
  invariants(): void {
    for (const p of this.profiles) p.invariants();
    this.predictor.invariants();
    this.envelope.invariants();
    this.ledger.invariants();
    if (this.pending.length > 0) throw new Error(`routewise: ${this.pending.length} reservation(s) from pick never settled`);
  }

  // ---- the decision ------------------------------------------------------------------------

  private hint(request: RouteRequest): number | null {
    return this.params.output_length_use_hint ? request.outputTokensHint : null;
  }

  private alphaFor(request: RouteRequest): number {
    const raw = request.headers?.[BUDGET_ALPHA_HEADER];
    if (raw !== undefined) {
      const a = Number(raw);
      if (raw.trim() !== '' && a >= 0 && a <= 1) return a;
    }
    return this.params.budget_alpha;
  }

  /**
   * Fills the scratch arrays for `candidates`: route index, effective cost (NaN = ineligible) and
   * T̄ (NaN = unprofiled). Returns the number of eligible candidates.
   */
  private price(candidates: readonly Candidate[], request: RouteRequest, nowMs: number, alpha: number): number {
    const d = this.lastDecision;
    d.alpha = alpha;
    const lhat = this.predictor.predict(request.inputTokens, this.hint(request));
    d.predictedOutputTokens = lhat;
    const env = this.hasQuota ? this.envelope.envelope(nowMs) : null;
    const nIn = request.inputTokens;
    let eligible = 0;
    for (let i = 0; i < candidates.length; i++) {
      const cand = candidates[i]!;
      // Candidates carry their declaration index, which is ours; check it, then fall back to the id.
      const byIndex = this.routes[cand.routeIndex];
      const r = byIndex !== undefined && byIndex.endpointId === cand.endpointId ? cand.routeIndex : this.index.get(cand.endpointId) ?? -1;
      this.routeOf[i] = r;
      this.sources[i] = null;
      if (r < 0) {
        this.cost[i] = Number.NaN;
        this.lat[i] = Number.NaN;
        continue;
      }
      const c = this.costOf(r, nIn, lhat, env, nowMs);
      this.cost[i] = c;
      if (Number.isFinite(c)) eligible++;
      this.lat[i] = this.profiles[r]!.meanIfProfiled(nowMs, this.params.min_samples);
    }
    return eligible;
  }

  private costOf(r: number, nIn: number, lhat: number, env: Envelope | null, nowMs: number): number {
    const route = this.routes[r]!;
    switch (route.providerType) {
      case 'on_demand': {
        const cached = this.params.prefix_cache ? this.cachedFraction[r]! * nIn : 0;
        return onDemandCostUsd(route.pricing, nIn, cached, lhat);
      }
      case 'quota': {
        if (env === null) return Number.NaN; // masked until the envelope is calibrated
        if (!this.ledger.slotFree(route.endpointId, nowMs)) return Number.NaN;
        const z = this.ledger.quotaUsedFraction(route.endpointId, nowMs);
        if (env.highUsd <= 0) return z < 1 ? 0 : Number.NaN; // every API-equivalent request was free
        return quotaShadowCostUsd(env.lowUsd, env.highUsd, z) ?? Number.NaN;
      }
      case 'concurrency':
        return this.ledger.available(route.endpointId, nowMs) ? 0 : Number.NaN;
    }
  }

  /** Chooses the primary; fills `lastDecision`; reserves its resources. Returns the candidate index. */
  private decide(candidates: readonly Candidate[], request: RouteRequest, nowMs: number, rng: Rng): number {
    const d = this.lastDecision;
    const n = candidates.length;
    const alpha = this.alphaFor(request);
    let eligible = this.price(candidates, request, nowMs, alpha);
    d.mix = [];
    d.hedge = null;
    this.lp.first = -1;
    this.lp.second = -1;
    // Contention re-solves without the route (a single-threaded core rarely needs a second pass).
    let firstFull = -1; // the first choice whose outbound slots were full
    for (let attempt = 0; attempt <= n; attempt++) {
      if (eligible === 0 && firstFull >= 0 && this.reserve(this.routeOf[firstFull]!, request, nowMs)) {
        d.endpointId = candidates[firstFull]!.endpointId; // every route is full: queue at the best
        if (this.hedgeGrid) d.hedge = this.hedgeFor(candidates, firstFull, nowMs);
        return firstFull;
      }
      if (eligible === 0) {
        d.budget = null;
        d.reason = 'no_eligible_route';
        d.endpointId = candidates[0]!.endpointId;
        return 0; // every route is out of quota, slots or envelope: let the lifecycle try the first
      }
      const chosen = this.choose(candidates, nowMs, rng, alpha);
      const r = this.routeOf[chosen]!;
      if (this.outbound !== undefined && !this.outbound.slotFree(candidates[chosen]!.endpointId)) {
        if (firstFull < 0) firstFull = chosen;
        this.cost[chosen] = Number.NaN;
        eligible--;
        continue;
      }
      if (this.reserve(r, request, nowMs)) {
        d.endpointId = candidates[chosen]!.endpointId;
        if (this.hedgeGrid) d.hedge = this.hedgeFor(candidates, chosen, nowMs);
        return chosen;
      }
      this.cost[chosen] = Number.NaN;
      eligible--;
    }
    throw new Error('routewise: contention loop did not settle'); // unreachable: each pass removes a route
  }

  /** Steps 2–4 of the decision on the priced scratch arrays. */
  private choose(candidates: readonly Candidate[], nowMs: number, rng: Rng, alpha: number): number {
    const d = this.lastDecision;
    const n = candidates.length;
    const budget = budgetUsd(this.cost, n, alpha)!;
    d.budget = budget;
    // Cold start: the cheapest eligible unprofiled route not under an exploration lease.
    let target = -1;
    let cheapest = -1;
    let profiled = 0;
    for (let i = 0; i < n; i++) {
      const c = this.cost[i]!;
      if (!Number.isFinite(c)) continue;
      if (cheapest < 0 || c < this.cost[cheapest]!) cheapest = i;
      if (Number.isFinite(this.lat[i]!)) profiled++;
      else if (this.params.cold_start === 'explore' && (target < 0 || c < this.cost[target]!) && !this.leases.leased(candidates[i]!.endpointId, nowMs)) target = i;
    }
    if (target >= 0) {
      const q = profiled === 0 ? 1 : explorationProbability(budget.budgetUsd, budget.minCostUsd, this.cost[target]!);
      if (q >= 1 || (q > 0 && rng.float() < q)) {
        this.leases.take(candidates[target]!.endpointId, nowMs);
        d.reason = profiled === 0 ? 'cold_start' : 'explore';
        return target;
      }
    }
    if (profiled === 0) {
      d.reason = 'cold_start';
      return cheapest;
    }
    const sol = solveLatencyLp(this.lat, this.cost, n, budget.budgetUsd, this.lp);
    d.mix.push({ endpointId: candidates[sol.first]!.endpointId, weight: sol.firstWeight });
    if (sol.second >= 0) d.mix.push({ endpointId: candidates[sol.second]!.endpointId, weight: sol.secondWeight });
    d.reason = sol.second >= 0 ? 'routewise_mix' : sol.feasible ? 'routewise' : 'over_budget';
    return drawFromMix(sol, sol.second >= 0 ? rng.float() : 0);
  }

  /** Reserves route `r` for the request; false on contention. On-demand routes need nothing. */
  private reserve(r: number, request: RouteRequest, nowMs: number): boolean {
    const route = this.routes[r]!;
    if (route.providerType === 'on_demand') return true;
    const res = this.ledger.reserve(route.endpointId, request.inputTokens + this.lastDecision.predictedOutputTokens, nowMs);
    if (!res) return false;
    if (this.tapped) this.pending.push(res);
    else {
      this.ledger.commit(res, nowMs);
      let q = this.held.get(route.endpointId);
      if (!q) this.held.set(route.endpointId, (q = []));
      q.push(res);
    }
    return true;
  }

  /** The hedge plan for candidate `primary` on the priced scratch arrays. */
  private hedgeFor(candidates: readonly Candidate[], primary: number, nowMs: number): HedgePlan | null {
    const grid = this.hedgeGrid!;
    const min = this.params.min_samples;
    const pr = this.routeOf[primary]!;
    if (pr < 0 || this.profiles[pr]!.successes(nowMs) < min) return null;
    let backups = 0;
    for (let i = 0; i < candidates.length; i++) {
      const r = this.routeOf[i]!;
      const ok = i !== primary && r >= 0 && Number.isFinite(this.cost[i]!) && this.profiles[r]!.successes(nowMs) >= min;
      this.sources[i] = ok ? this.profiles[r]! : null;
      if (ok) backups++;
    }
    if (backups === 0) return { kind: 'none', reason: 'no_backup' };
    return planHedgeArrays(grid, this.profiles[pr]!, this.sources, this.cost, candidates, candidates.length, this.params.hedge_target_probability, this.scratchOrder);
  }

  private noteRateLimit(endpointId: string, o: Outcome, nowMs: number): void {
    if (o.kind !== 'http_status' || o.errorClass !== 'rate_limited') return;
    const i = this.index.get(endpointId);
    if (i === undefined) return;
    const type = this.routes[i]!.providerType;
    if (type === 'on_demand') return;
    const ms = o.retryAfterMs ?? (type === 'quota' ? DEFAULT_QUOTA_BLOCK_MS : DEFAULT_CONCURRENCY_BLOCK_MS);
    this.ledger.block(endpointId, nowMs + ms);
  }

  /** Learns a finished request's usage; `r` is its route's index, or −1 for a route not in this planner (no cached fraction). */
  private learnUsage(r: number, inputEstimate: number, inputTokens: number, cachedTokens: number, outputTokens: number, nowMs: number): void {
    this.predictor.observe(inputEstimate, outputTokens);
    if (r >= 0 && inputTokens > 0) {
      const f = Math.min(1, Math.max(0, cachedTokens / inputTokens));
      this.cachedFraction[r]! += CACHED_FRACTION_EWMA * (f - this.cachedFraction[r]!);
    }
    // The request's cheapest API-equivalent cost feeds the envelope.
    let best = Number.POSITIVE_INFINITY;
    for (const a of this.apiRoutes) {
      const c = onDemandCostUsd(this.routes[a]!.pricing, inputTokens, cachedTokens, outputTokens);
      if (c < best) best = c;
    }
    if (best < Number.POSITIVE_INFINITY) this.envelope.observe(best, nowMs);
  }
}

/**
 * Failures that say something about the route's ability to answer (counted in T̄ with the
 * penalty): server errors, 429, refused credentials, transport errors and first-token timeouts.
 * Request-scoped refusals (context length, content policy, other 4xx) and our own queue waits do not.
 */
function isRouteFailure(o: Outcome): boolean {
  switch (o.kind) {
    case 'transport':
    case 'first_token_timeout':
      return true;
    case 'http_status':
      return o.errorClass === 'server_error' || o.errorClass === 'rate_limited' || o.errorClass === 'auth_rejected';
    default:
      return false;
  }
}

/** The `routewise` strategy definition (registered as `router: routewise`). */
export const routeWiseStrategy: StrategyDefinition<RouteWiseParams> = {
  name: 'routewise',
  description: 'minimum mean TTFT under an expected-cost budget (exact two-route LP), quota/concurrency aware, optional latest-safe hedging',
  paramsSchema: RouteWiseParamsSchema,
  create(params, routes, context) {
    return new RouteWisePlanner(params, (routes as readonly RouteWisePlannerRoute[]).map(routeWiseRouteFromPlanner), context?.outbound);
  },
};

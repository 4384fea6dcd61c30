/**
 * The life of one request under a per-model router: the `fixed` pipeline and fallback plan of
 * seed 000 ("how FixedRouter picks an endpoint", "fallback"), executed as a state machine.
 *
 * Selection: published and non-empty routes (else 404) → modality filter → explicit pin (no
 * fallback) → weight and breaker admission → [affinity / prefill hooks] → the planner's pick.
 * Fallback: after a failure, the remaining routes in declaration order, skipping weight 0,
 * modality mismatches and routes whose breaker gives no claim; the first success wins; if all
 * fail the client gets the primary's error. A committed stream never falls back.
 *
 * The life owns every dispatch claim it takes and ends each exactly once on every path.
 */
import type { Rng } from '../rng.ts';
import type { ResolvedModel, ResolvedRoute } from '../routing-core.ts';
import type { DispatchClaim, HealthRegistry } from '../health/health-registry.ts';
import type { Outcome } from './outcome.ts';
import { ERROR_STATUS, errorForOutcome, type ErrorCode } from './errors.ts';
import type {
  AttemptRecord,
  LifecycleAction,
  LifecycleEvent,
  RequestLife,
  RouteRequest,
  RoutingMetadata,
  Usage,
} from './seam.ts';
import type { Candidate } from '../strategies/planner.ts';

interface LiveAttempt {
  readonly attemptId: number;
  readonly route: ResolvedRoute;
  /** Null when the attempt bypassed admission (explicit pin). */
  readonly claim: DispatchClaim | null;
  readonly startMs: number;
}

/** Implementation of `RequestLife` for per-model routers. Created by `RoutingCore.start`. */
export class RequestLifecycle implements RequestLife {
  readonly requestId: string;
  private done = false;
  private committedAttempt: number | null = null;
  private nextAttemptId = 1;
  private readonly live = new Map<number, LiveAttempt>();
  private readonly tried = new Set<string>();
  private readonly attempts: AttemptRecord[] = [];
  private primaryFailure: Outcome | null = null;
  private pinned = false;
  private reason = 'none';
  private firstTokenAtMs: number | null = null;
  private servedBy: ResolvedRoute | null = null;

  constructor(
    private readonly model: ResolvedModel | null,
    private readonly request: RouteRequest,
    private readonly health: HealthRegistry,
    private readonly rng: Rng,
  ) {
    this.requestId = request.requestId;
  }

  get isDone(): boolean {
    return this.done;
  }

  /** Runs the selection pipeline at `nowMs`. Called once, by `RoutingCore.start`. */
  begin(nowMs: number): LifecycleAction[] {
    const model = this.model;
    if (!model || !model.published || model.routes.length === 0) {
      return this.fail('model_not_found', `model '${this.request.model}' does not exist or has no published routes`, nowMs);
    }
    const modal = model.routes.filter((r) => this.acceptsModalities(r));
    if (modal.length === 0) {
      return this.fail(
        'all_circuits_open',
        `no route of model '${model.id}' accepts input modalities: ${this.request.modalities.join(', ')}`,
        nowMs,
      );
    }
    if (this.request.pin !== null) {
      const pin = this.request.pin;
      const route = modal.find((r) => r.endpointId === pin || r.provider === pin);
      if (!route) {
        return this.fail(
          'route_pin_not_found',
          `X-Route-Pin '${pin}' matches no route of model '${model.id}'; routes: ${modal.map((r) => r.endpointId).join(', ')}`,
          nowMs,
        );
      }
      this.pinned = true;
      this.reason = 'pin';
      return [this.dispatch(route, null, nowMs)];
    }
    const candidates: Candidate[] = [];
    for (const r of modal) {
      if (r.effectiveWeight > 0 && this.health.allowRequest(r.endpointId, nowMs)) {
        candidates.push({ endpointId: r.endpointId, weight: r.effectiveWeight, routeIndex: r.routeIndex });
      }
    }
    // A planner pick whose claim is refused is dropped and the planner asked again. In a
    // single-threaded core allowRequest and beginDispatch agree, so this loop runs once.
    while (candidates.length > 0) {
      const pick = model.planner.pick(candidates, this.request, nowMs, this.rng);
      const chosen = candidates[pick.candidate]!;
      const route = model.routes[chosen.routeIndex]!;
      const claim = this.health.beginDispatch(route.endpointId, nowMs);
      if (claim) {
        this.reason = pick.reason;
        return [this.dispatch(route, claim, nowMs)];
      }
      candidates.splice(pick.candidate, 1);
    }
    return this.fail(
      'all_circuits_open',
      `no admitted route for model '${model.id}'; considered: ${modal.map((r) => r.endpointId).join(', ')}`,
      nowMs,
    );
  }

  step(event: LifecycleEvent, nowMs: number): LifecycleAction[] {
    if (this.done) return [];
    switch (event.kind) {
      case 'attempt_sent':
      case 'first_output':
      case 'deadline':
        return [];
      case 'first_token': {
        const a = this.live.get(event.attemptId);
        if (!a) return [];
        if (this.firstTokenAtMs === null) this.firstTokenAtMs = nowMs;
        if (this.request.stream && this.committedAttempt === null) {
          this.committedAttempt = a.attemptId;
          return [{ kind: 'commit', attemptId: a.attemptId }];
        }
        return [];
      }
      case 'finished': {
        const a = this.live.get(event.attemptId);
        if (!a) return [];
        const out: LifecycleAction[] = [];
        if (this.committedAttempt === null) {
          this.committedAttempt = a.attemptId;
          out.push({ kind: 'commit', attemptId: a.attemptId });
        }
        this.endAttempt(a, { kind: 'ok' }, nowMs);
        this.servedBy = a.route;
        out.push(...this.cancelOthers(nowMs));
        out.push(this.doneAction('ok', nowMs, event.usage));
        return out;
      }
      case 'failed': {
        const a = this.live.get(event.attemptId);
        if (!a) return [];
        this.endAttempt(a, event.outcome, nowMs);
        if (this.primaryFailure === null) this.primaryFailure = event.outcome;
        const terminal = event.outcome.kind === 'client_gone' || event.outcome.kind === 'cancelled';
        if (!this.pinned && this.committedAttempt === null && !terminal) {
          const next = this.nextFallback(nowMs);
          if (next) return [next];
        }
        if (this.live.size > 0) return [];
        return this.failWithOutcome(this.committedAttempt === null ? this.primaryFailure : event.outcome, nowMs);
      }
      case 'client_gone': {
        const out = this.cancelOthers(nowMs);
        out.push(this.doneAction('client_gone', nowMs, null));
        return out;
      }
    }
  }

  invariants(): void {
    for (const a of this.live.values()) {
      if (this.done) throw new Error(`${this.requestId}: attempt ${a.attemptId} still live after done`);
    }
    if (this.attempts.length + this.live.size !== this.nextAttemptId - 1) {
      throw new Error(`${this.requestId}: attempts recorded + live != attempts started`);
    }
  }

  /** Every request carries text; a route must accept text and each extra modality. */
  private acceptsModalities(r: ResolvedRoute): boolean {
    if (!r.modalities.includes('text')) return false;
    for (const m of this.request.modalities) if (!r.modalities.includes(m)) return false;
    return true;
  }

  private dispatch(route: ResolvedRoute, claim: DispatchClaim | null, nowMs: number): LifecycleAction {
    const attemptId = this.nextAttemptId++;
    this.live.set(attemptId, { attemptId, route, claim, startMs: nowMs });
    this.tried.add(route.endpointId);
    return { kind: 'dispatch', attemptId, endpointId: route.endpointId, deadlines: { firstTokenAtMs: null, totalAtMs: null } };
  }

  /** Ends an attempt's claim exactly once and records it. */
  private endAttempt(a: LiveAttempt, outcome: Outcome, nowMs: number): void {
    this.live.delete(a.attemptId);
    if (a.claim) this.health.endDispatch(a.claim, outcome, nowMs);
    else this.health.recordUnadmitted(a.route.endpointId, outcome, nowMs);
    if (outcome.kind === 'http_status' && outcome.errorClass === 'auth_rejected') {
      this.health.markDegraded(a.route.endpointId, nowMs);
    }
    this.model?.planner.observe?.(a.route.endpointId, outcome, nowMs);
    this.attempts.push({ attemptId: a.attemptId, endpointId: a.route.endpointId, startMs: a.startMs, endMs: nowMs, outcome });
  }

  private cancelOthers(nowMs: number): LifecycleAction[] {
    const out: LifecycleAction[] = [];
    for (const a of [...this.live.values()]) {
      out.push({ kind: 'cancel', attemptId: a.attemptId });
      this.endAttempt(a, { kind: 'cancelled' }, nowMs);
    }
    return out;
  }

  private nextFallback(nowMs: number): LifecycleAction | null {
    for (const r of this.model!.routes) {
      if (this.tried.has(r.endpointId) || r.effectiveWeight <= 0 || !this.acceptsModalities(r)) continue;
      const claim = this.health.beginDispatch(r.endpointId, nowMs);
      if (claim) return this.dispatch(r, claim, nowMs);
    }
    return null;
  }

  private failWithOutcome(outcome: Outcome, nowMs: number): LifecycleAction[] {
    const e = errorForOutcome(outcome);
    const tried = this.attempts.map((a) => `${a.endpointId}=${a.outcome.kind === 'http_status' ? a.outcome.status : a.outcome.kind}`);
    return this.fail(e.code, `all attempts failed: ${tried.join(', ')}`, nowMs, e.status, e.retryAfterSec);
  }

  private fail(code: ErrorCode, message: string, nowMs: number, status = ERROR_STATUS[code], retryAfterSec: number | null = null): LifecycleAction[] {
    if (code === 'client_gone') return [this.doneAction(code, nowMs, null)];
    return [{ kind: 'respond_error', status, code, message, retryAfterSec }, this.doneAction(code, nowMs, null)];
  }

  private doneAction(status: string, nowMs: number, usage: Usage | null): LifecycleAction {
    this.done = true;
    const last = this.attempts[this.attempts.length - 1];
    const route = this.servedBy ?? (last ? this.model!.routes.find((r) => r.endpointId === last.endpointId) ?? null : null);
    const metadata: RoutingMetadata = {
      requestId: this.requestId,
      modelId: this.model?.id ?? this.request.model,
      strategy: this.model?.strategy ?? 'none',
      endpointId: route?.endpointId ?? null,
      provider: route?.provider ?? null,
      baseUrl: route?.baseUrl ?? null,
      reason: this.reason,
      fallback: status === 'ok' && this.attempts.length > 1,
      attempts: this.attempts,
      status,
      firstTokenAtMs: this.firstTokenAtMs,
      finishedAtMs: nowMs,
      usage,
      offloadReason: null,
    };
    return { kind: 'done', metadata };
  }
}

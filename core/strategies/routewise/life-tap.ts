/**
 * What RouteWise learns from, per attempt: a pass-through `RequestLife` wrapper (like the
 * multi-target `StatsTap`) that watches the dispatches and cancels a per-model life emits and the
 * events it is fed, and reports them to the planner with the detail the plain
 * `observe(endpointId, outcome, nowMs)` lacks: when the attempt started, when (whether) its
 * first token came, and the usage it finished with. It also carries each attempt's resource
 * reservation from dispatch (commit) to the attempt's end (release), fallbacks and pins
 * included. The wrapped life's decisions and actions pass through unchanged.
 *
 * Wiring (in `RoutingCore.start`, before the life begins, so the planner knows a tap is present
 * when it picks): `const tap = planner.tapLife(life, request, nowMs); return { life: tap,
 * actions: tap.absorb(life.begin(nowMs), nowMs) }`.
 */
import type { LifecycleAction, LifecycleEvent, RequestLife, RouteRequest, Usage } from '../../lifecycle/seam.ts';
import type { Outcome } from '../../lifecycle/outcome.ts';
import type { Reservation } from './resources.ts';

/** One attempt from dispatch to its end, as RouteWise records it. */
export interface AttemptDetail {
  readonly endpointId: string;
  /** The request's prompt-token estimate (the predictor's bucket key). */
  readonly inputTokens: number;
  readonly startMs: number;
  /** When the first token arrived, or null if none did. */
  readonly firstTokenAtMs: number | null;
  readonly endMs: number;
  readonly outcome: Outcome;
  /** Usage of a finished attempt, else null. */
  readonly usage: Usage | null;
}

/** The planner side of the tap. */
export interface AttemptObserver {
  /** An attempt was dispatched to `endpointId`: commit (or take) its resources. */
  onDispatch(endpointId: string, request: RouteRequest, nowMs: number): Reservation | null;
  /** Releases reservations `pick` made that no dispatch took (end of a batch of actions). */
  settlePending(nowMs: number): void;
  /** A first token after `ttftMs`. */
  onFirstToken(endpointId: string, ttftMs: number, nowMs: number): void;
  /** The attempt ended; `reservation` is what `onDispatch` returned. */
  onAttemptEnd(detail: AttemptDetail, reservation: Reservation | null): void;
}

/** What a cancelled attempt ended with, as the planner hears it. */
const CANCELLED: Outcome = { kind: 'cancelled' };
/** A cancel for the life's own first-token wait: the attempt failed as a first-token timeout. */
const FIRST_TOKEN_TIMEOUT: Outcome = { kind: 'first_token_timeout' };

interface Watched {
  readonly endpointId: string;
  readonly startMs: number;
  firstTokenAtMs: number | null;
  readonly reservation: Reservation | null;
}

/** A pass-through life that reports attempt details to RouteWise. */
export class RouteWiseLifeTap implements RequestLife {
  private readonly live = new Map<number, Watched>();
  /**
   * When each attempt queued for an outbound slot (`acquire_slot`): its TTFT is then counted from
   * there, so time spent waiting in the gateway for a route's slots makes that route look as slow
   * as the client finds it (otherwise RouteWise keeps piling onto a route whose slots are full).
   */
  private readonly queuedAtMs = new Map<number, number>();

  constructor(
    private readonly inner: RequestLife,
    private readonly request: RouteRequest,
    private readonly observer: AttemptObserver,
  ) {}

  get requestId(): string {
    return this.inner.requestId;
  }

  get isDone(): boolean {
    return this.inner.isDone;
  }

  /** Records `actions` (the life's first actions, or a step's) at `nowMs`; returns them unchanged. */
  absorb(actions: LifecycleAction[], nowMs: number): LifecycleAction[] {
    for (const a of actions) {
      if (a.kind === 'dispatch') {
        const reservation = this.observer.onDispatch(a.endpointId, this.request, nowMs);
        const queuedAt = this.queuedAtMs.get(a.attemptId);
        if (queuedAt !== undefined) this.queuedAtMs.delete(a.attemptId);
        this.live.set(a.attemptId, { endpointId: a.endpointId, startMs: queuedAt ?? nowMs, firstTokenAtMs: null, reservation });
      } else if (a.kind === 'acquire_slot') this.queuedAtMs.set(a.attemptId, nowMs);
      else if (a.kind === 'cancel') this.end(a.attemptId, a.reason === 'first_token_timeout' ? FIRST_TOKEN_TIMEOUT : CANCELLED, null, nowMs);
      else if (a.kind === 'done') for (const id of [...this.live.keys()]) this.end(id, { kind: 'cancelled' }, null, nowMs);
    }
    this.observer.settlePending(nowMs);
    return actions;
  }

  step(event: LifecycleEvent, nowMs: number): LifecycleAction[] {
    if (!this.inner.isDone && 'attemptId' in event) {
      const w = this.live.get(event.attemptId);
      if (w) {
        if (event.kind === 'first_token' && w.firstTokenAtMs === null) {
          w.firstTokenAtMs = nowMs;
          this.observer.onFirstToken(w.endpointId, nowMs - w.startMs, nowMs);
        } else if (event.kind === 'finished') this.end(event.attemptId, { kind: 'ok' }, event.usage, nowMs);
        else if (event.kind === 'failed') this.end(event.attemptId, event.outcome, null, nowMs);
      }
    }
    return this.absorb(this.inner.step(event, nowMs), nowMs);
  }

  /** @throws Error when the wrapped life's invariants fail or an attempt is still watched after done. */
  invariants(): void {
    this.inner.invariants();
    if (this.inner.isDone && this.live.size > 0) throw new Error(`${this.requestId}: routewise tap still watches ${this.live.size} attempt(s) after done`);
  }

  private end(attemptId: number, outcome: Outcome, usage: Usage | null, nowMs: number): void {
    const w = this.live.get(attemptId);
    if (!w) return;
    this.live.delete(attemptId);
    this.observer.onAttemptEnd(
      { endpointId: w.endpointId, inputTokens: this.request.inputTokens, startMs: w.startMs, firstTokenAtMs: w.firstTokenAtMs, endMs: nowMs, outcome, usage },
      w.reservation,
    );
  }
}

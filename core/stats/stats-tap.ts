/**
 * Feeds `EndpointStats` from a request life it does not own: wraps a per-model (`router:`) life,
 * watches the dispatches and cancels it emits and the events it is fed, and passes everything
 * through unchanged. A timeout is a latency sample of the time waited: a driver-reported one
 * (`failed`), or the life's own first-token wait (a `cancel` with reason `first_token_timeout`). This is how `router: least_latency` / `router: least_busy` over a model's own
 * `route:` list learn without the per-model lifecycle knowing about endpoint statistics. The
 * multi-target lifecycle feeds the stats itself and is never wrapped.
 */
import type { LifecycleAction, LifecycleEvent, RequestLife } from '../lifecycle/seam.ts';
import type { EndpointStats } from './endpoint-stats.ts';

interface Watched {
  readonly attemptId: number;
  readonly endpointId: string;
  readonly startMs: number;
  sampled: boolean;
}

/** A pass-through `RequestLife` that counts its attempts in `EndpointStats`. */
export class StatsTap implements RequestLife {
  /** Attempts dispatched and not ended, in dispatch order: one, or two while a hedge races. */
  private readonly live: Watched[] = [];

  /**
   * @param inner the life to wrap.
   * @param stream whether the request streams (latency = TTFT) or not (latency = end of response).
   * @param stats where to count.
   * @param atHeaders latency = the time to the upstream's response headers (`first_output`),
   *   whatever `stream` (`RouteRequest.latencyAt: 'headers'`).
   */
  constructor(
    private readonly inner: RequestLife,
    private readonly stream: boolean,
    private readonly stats: EndpointStats,
    private readonly atHeaders = false,
  ) {}

  get requestId(): string {
    return this.inner.requestId;
  }

  get isDone(): boolean {
    return this.inner.isDone;
  }

  /** Records the life's first actions (from `begin`) at `nowMs`; returns them unchanged. */
  absorb(actions: LifecycleAction[], nowMs: number): LifecycleAction[] {
    for (let i = 0; i < actions.length; i++) {
      const a = actions[i]!;
      if (a.kind === 'dispatch') {
        this.live.push({ attemptId: a.attemptId, endpointId: a.endpointId, startMs: nowMs, sampled: false });
        this.stats.begin(a.endpointId);
      } else if (a.kind === 'cancel') {
        // The life's first-token wait ran out: a timeout, sampled as its wait like a reported one.
        if (a.reason === 'first_token_timeout') this.sampleWait(a.attemptId, nowMs);
        this.close(a.attemptId);
      } else if (a.kind === 'done') while (this.live.length > 0) this.close(this.live[0]!.attemptId);
    }
    return actions;
  }

  step(event: LifecycleEvent, nowMs: number): LifecycleAction[] {
    if (!this.inner.isDone && 'attemptId' in event) {
      const w = this.watched(event.attemptId);
      if (w) {
        if (event.kind === 'first_output' && this.atHeaders && !w.sampled) {
          w.sampled = true;
          this.stats.sample(w.endpointId, nowMs - w.startMs);
        } else if (event.kind === 'first_token' && this.stream && !this.atHeaders && !w.sampled) {
          w.sampled = true;
          this.stats.sample(w.endpointId, nowMs - w.startMs);
        } else if (event.kind === 'finished') {
          if (!w.sampled) this.stats.sample(w.endpointId, nowMs - w.startMs);
          this.close(event.attemptId);
        } else if (event.kind === 'failed') {
          const o = event.outcome;
          if (o.kind === 'first_token_timeout' || (o.kind === 'transport' && o.cause === 'timeout')) this.stats.sample(w.endpointId, nowMs - w.startMs);
          this.close(event.attemptId);
        }
      }
    }
    return this.absorb(this.inner.step(event, nowMs), nowMs);
  }

  invariants(): void {
    this.inner.invariants();
    if (this.inner.isDone && this.live.length > 0) throw new Error(`${this.requestId}: stats tap still counts ${this.live.length} attempt(s) after done`);
  }

  private watched(attemptId: number): Watched | undefined {
    const live = this.live;
    for (let i = 0; i < live.length; i++) if (live[i]!.attemptId === attemptId) return live[i];
    return undefined;
  }

  private sampleWait(attemptId: number, nowMs: number): void {
    const w = this.watched(attemptId);
    if (w) this.stats.sample(w.endpointId, nowMs - w.startMs);
  }

  private close(attemptId: number): void {
    const live = this.live;
    for (let i = 0; i < live.length; i++) {
      if (live[i]!.attemptId !== attemptId) continue;
      const w = live[i]!;
      live.splice(i, 1);
      this.stats.end(w.endpointId);
      return;
    }
  }
}

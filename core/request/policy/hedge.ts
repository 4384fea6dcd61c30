/**
 * Hedging for one request (seed 000 "RouteWise" hedging; Dean & Barroso, "The Tail at Scale"):
 * when the planner's pick comes with a hedge order, a checkpoint is armed at the primary's
 * dispatch; if the primary has shown no output by then, the backup is sent as a second attempt
 * racing it. The first token (stream) or complete answer (non-stream) commits and the other is
 * cancelled (`hedge_lost`, still billed). The life owns the attempts; this plan holds the order.
 */
import type { HedgeOrder } from '../../strategies/planner.ts';

/** One request's hedge state. */
export class HedgePlan {
  /** The backup's endpoint once a hedge was sent (metadata), else null. */
  sentTo: string | null = null;
  private order: HedgeOrder | null = null;
  private primaryId = 0;

  /** Records the planner's order for attempt `primaryAttemptId` (the one started next). */
  plan(order: HedgeOrder | null | undefined, primaryAttemptId: number): void {
    if (!order) return;
    this.order = order;
    this.primaryId = primaryAttemptId;
  }

  /** When to check attempt `attemptId` dispatched at `nowMs` (absolute ms), or null when it is not the hedged primary. */
  checkpointAtMs(attemptId: number, nowMs: number): number | null {
    return this.order !== null && attemptId === this.primaryId ? nowMs + this.order.afterMs : null;
  }

  /** The primary `attemptId` answered in time: drops the order; true when a checkpoint must be disarmed. */
  answered(attemptId: number): boolean {
    if (attemptId !== this.primaryId || this.order === null) return false;
    this.order = null;
    return true;
  }

  /** Takes the order at the checkpoint (null if none is left); the plan holds none after. */
  take(): HedgeOrder | null {
    const o = this.order;
    this.order = null;
    return o;
  }
}

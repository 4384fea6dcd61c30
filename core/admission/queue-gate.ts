/**
 * The queue-gate contract: a gate that never refuses an attempt but hands it a ticket — a place
 * it holds while it runs, or waits for in FIFO order (`acquire_slot` to the driver, a give-up
 * deadline in the life). The outbound slot and the engine hold are queue gates; the life asks
 * them in order and the first that applies to the attempt issues its ticket.
 */
import type { Outcome } from '../lifecycle/outcome.ts';
import type { SlotTicket } from '../outbound/slot-pool.ts';
import type { GateName } from './gate.ts';

/** What a queue gate sees of an attempt's destination. A `ResolvedRoute` fits. */
export interface QueueTarget {
  readonly endpointId: string;
  /** Provider key of the adaptive outbound limiter; null = exempt (local or loopback route). */
  readonly outboundKey: string | null;
}

/** A ticketing gate. */
export interface QueueGate {
  readonly name: GateName;
  /** True when the gate's place is given back at the attempt's first output (not its end). */
  readonly releasedAtFirstOutput: boolean;
  /**
   * A ticket (held or queued) for attempt `attemptId` of `owner` on `target`, or null when this
   * gate does not apply. `engineQueueLimit` is the model's engine-hold limit when the attempt may
   * hold (a stream of a model with an active offload policy), else null.
   */
  acquire(target: QueueTarget, engineQueueLimit: number | null, owner: unknown, attemptId: number): SlotTicket | null;
  /** Gives the place back (or leaves the queue); `outcome` is how the attempt ended, if it did. */
  release(ticket: SlotTicket, outcome: Outcome | null): void;
}

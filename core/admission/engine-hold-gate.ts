/**
 * The engine-hold gate (seed 000 "引擎队列上限"): a stream to a local engine of a model with an
 * active offload policy and an `engine_queue_limit` holds one of that engine's places until its
 * first output; past the limit it waits, and the life may offload it. Holding never fails a
 * request: at the acquire timeout a waiter that cannot offload is let in over the limit.
 * Routes with an outbound key (remote) are the outbound slot's, never this gate's.
 */
import type { Outcome } from '../lifecycle/outcome.ts';
import type { EngineHold } from '../outbound/engine-hold.ts';
import type { SlotTicket } from '../outbound/slot-pool.ts';
import type { QueueGate, QueueTarget } from './queue-gate.ts';

/** Queue gate over the shared `EngineHold`. */
export class EngineHoldGate implements QueueGate {
  readonly name = 'engine_hold' as const;
  readonly releasedAtFirstOutput = true;
  constructor(readonly hold: EngineHold) {}

  acquire(target: QueueTarget, engineQueueLimit: number | null, owner: unknown, attemptId: number): SlotTicket | null {
    if (target.outboundKey !== null || engineQueueLimit === null) return null;
    return this.hold.acquire(target.endpointId, engineQueueLimit, owner, attemptId);
  }

  release(ticket: SlotTicket, _outcome: Outcome | null): void {
    ticket.pool.release(ticket);
  }

  /** Lets a waiting ticket in over the limit (its acquire timeout passed and it cannot offload). */
  force(ticket: SlotTicket): void {
    ticket.pool.force(ticket);
  }
}

/**
 * The outbound-slot gate (seed 000 "出站并发"): an attempt to a non-local route waits for a slot
 * of its provider key's adaptive pool (shared by every model kind that sends on that key); a 429
 * shrinks the pool, a run of successes grows it (`outbound/outbound-limiter.ts`). Routes without
 * an outbound key, or a disabled limiter: the gate does not apply.
 */
import type { Outcome } from '../lifecycle/outcome.ts';
import type { OutboundLimiter, SlotResult } from '../outbound/outbound-limiter.ts';
import type { SlotTicket } from '../outbound/slot-pool.ts';
import type { QueueGate, QueueTarget } from './queue-gate.ts';

/** What the limiter learns from how an attempt ended: `success`, `rate_limited` (a 429) or `other`. */
export function slotResultOf(outcome: Outcome | null): SlotResult {
  if (outcome === null) return 'other';
  if (outcome.kind === 'ok') return 'success';
  return outcome.kind === 'http_status' && outcome.status === 429 ? 'rate_limited' : 'other';
}

/** Queue gate over the shared `OutboundLimiter`. */
export class OutboundSlotGate implements QueueGate {
  readonly name = 'outbound_slot' as const;
  readonly releasedAtFirstOutput = false;
  constructor(
    readonly limiter: OutboundLimiter,
    private readonly enabled: boolean,
  ) {}

  acquire(target: QueueTarget, _engineQueueLimit: number | null, owner: unknown, attemptId: number): SlotTicket | null {
    if (target.outboundKey === null || !this.enabled) return null;
    return this.limiter.acquire(target.outboundKey, owner, attemptId);
  }

  release(ticket: SlotTicket, outcome: Outcome | null): void {
    this.limiter.release(ticket, slotResultOf(outcome));
  }
}

/**
 * One admission for every attempt of every model kind: the list of check gates (asked in order,
 * the first refusal wins), the breaker claim, the per-target rate limit, and the queue gates
 * (asked in order, the first that applies issues the ticket). `RoutingCore` builds one per model
 * kind from the shared gates: per-model routers check Retry-After and claim the breaker;
 * multi-target aliases check Retry-After and cooldown, take rate-limit tokens and only record
 * into the breaker. Both give a pooled route's attempt its upstream key (`key-pool-gate.ts`)
 * before it queues. Both queue on the same outbound slots, so an alias over a provider key
 * shares its limit with the routes on that key.
 */
import type { AdmissionGate, AdmissionTarget, GateName } from './gate.ts';
import type { QueueGate, QueueTarget } from './queue-gate.ts';
import { BreakerGate } from './breaker-claim.ts';
import { RetryAfterGate } from './retry-after-gate.ts';
import { TargetRateLimitGate } from './target-rate-limit-gate.ts';
import { CooldownGate } from './cooldown-gate.ts';
import { HealthCheckGate } from './health-check-gate.ts';
import { HealthCheckRegistry } from '../health/health-checks.ts';
import { OutboundSlotGate } from './outbound-slot.ts';
import { EngineHoldGate } from './engine-hold-gate.ts';
import { KeyPoolGate } from './key-pool-gate.ts';
import type { KeyPools } from '../keys/key-pools.ts';
import type { HealthRegistry } from '../health/health-registry.ts';
import type { RetryAfterTable } from '../health/retry-after.ts';
import type { CooldownRegistry } from '../health/cooldown.ts';
import type { OutboundLimiter } from '../outbound/outbound-limiter.ts';
import type { EngineHold } from '../outbound/engine-hold.ts';
import type { SlotTicket } from '../outbound/slot-pool.ts';
import type { Outcome } from '../lifecycle/outcome.ts';

/** The gates of one model kind. */
export interface AdmissionGates {
  /** Pure checks, asked in order for every candidate. */
  readonly checks: readonly AdmissionGate[];
  /** The breaker (its claim); always present: aliases record into it without claiming. */
  readonly breaker: BreakerGate;
  /** The Retry-After gate, also in `checks`: the life records hints into it and reads its waits. */
  readonly retryAfter: RetryAfterGate;
  /** The cooldown gate when the kind uses it (also in `checks`), else null. */
  readonly cooldown: CooldownGate | null;
  /** The health-check gate (also in `checks`; both kinds use it). */
  readonly healthCheck: HealthCheckGate;
  /** Per-target rate limits (a no-op for routes, which have none). */
  readonly rateLimit: TargetRateLimitGate;
  /** Ticketing gates, asked in order. */
  readonly queues: readonly QueueGate[];
  /** The key-pool gate (asked when an attempt starts, before the queues); null: no pools. */
  readonly keyPool: KeyPoolGate | null;
}

/** Where a life keeps an attempt's ticket and the gate that issued it (the attempt itself). */
export interface TicketHolder {
  ticket: SlotTicket | null;
  ticketGate: QueueGate | null;
}

/** The admission a life asks. Stateless itself: all state lives in the shared gates. */
export class Admission {
  constructor(readonly gates: AdmissionGates) {}

  /**
   * The first check gate that refuses `target` at `nowMs` (skipping the gate named `ignoring`, or
   * every gate in the set `ignoring`), or null.
   */
  refusal(target: AdmissionTarget, nowMs: number, ignoring: GateName | ReadonlySet<GateName> | null = null): AdmissionGate | null {
    const checks = this.gates.checks;
    for (let i = 0; i < checks.length; i++) {
      const g = checks[i]!;
      if (ignoring !== null && (typeof ignoring === 'string' ? g.name === ignoring : ignoring.has(g.name))) continue;
      if (!g.admits(target, nowMs)) return g;
    }
    return null;
  }

  /**
   * Whether every check gate and the breaker admit every target at `nowMs` (nothing cooling,
   * every breaker closed): then `admits` and `gates.breaker.admits` are true for any target, and
   * a caller may leave them unasked. False means "ask per target". Reads only.
   */
  admitsEvery(nowMs: number): boolean {
    if (!this.gates.breaker.admitsEvery()) return false;
    const checks = this.gates.checks;
    for (let i = 0; i < checks.length; i++) if (checks[i]!.admitsEvery?.(nowMs) !== true) return false;
    return true;
  }

  /** Whether every check gate (but those `ignoring` names) admits `target` at `nowMs`. Pure. */
  admits(target: AdmissionTarget, nowMs: number, ignoring: GateName | ReadonlySet<GateName> | null = null): boolean {
    return this.refusal(target, nowMs, ignoring) === null;
  }

  /**
   * Puts a ticket from the first queue gate that applies to the attempt into `holder` (held or
   * queued; check `ticket.state`); returns false, leaving `holder` alone, when none applies.
   */
  queue(target: QueueTarget, engineQueueLimit: number | null, owner: unknown, attemptId: number, holder: TicketHolder): boolean {
    const queues = this.gates.queues;
    for (let i = 0; i < queues.length; i++) {
      const gate = queues[i]!;
      const ticket = gate.acquire(target, engineQueueLimit, owner, attemptId);
      if (ticket !== null) {
        holder.ticket = ticket;
        holder.ticketGate = gate;
        return true;
      }
    }
    return false;
  }

  /** Gives `holder`'s ticket back, if it holds one (idempotent); returns whether it did. */
  release(holder: TicketHolder, outcome: Outcome | null): boolean {
    const t = holder.ticket;
    if (t === null) return false;
    holder.ticket = null;
    holder.ticketGate!.release(t, outcome);
    return true;
  }
}

/** The shared state the gates read; all of it owned by `RoutingCore`. */
export interface AdmissionState {
  readonly health: HealthRegistry;
  readonly retryAfter: RetryAfterTable;
  readonly cooldowns: CooldownRegistry;
  /** Background health checks; absent ⇒ none configured (an empty registry). */
  readonly healthChecks?: HealthCheckRegistry;
  readonly limiter: OutboundLimiter;
  readonly hold: EngineHold;
  /** Whether the outbound limiter is on (`upstreamConcurrencyEnabled`). */
  readonly outboundLimitEnabled: boolean;
  /** Upstream key pools by endpoint; absent ⇒ no route takes the pool path. */
  readonly keyPools?: KeyPools;
}

/**
 * The two admissions of the core over one set of shared gates: `router` for per-model routers
 * (checks: Retry-After, health check; queues: outbound slot, engine hold), `alias` for
 * multi-target models (checks: Retry-After, cooldown, health check; queues: outbound slot). Both share the key-pool gate.
 */
export function buildAdmissions(s: AdmissionState): { router: Admission; alias: Admission } {
  const breaker = new BreakerGate(s.health);
  const retryAfter = new RetryAfterGate(s.retryAfter);
  const cooldown = new CooldownGate(s.cooldowns);
  const healthCheck = new HealthCheckGate(s.healthChecks ?? new HealthCheckRegistry());
  const rateLimit = new TargetRateLimitGate();
  const slot = new OutboundSlotGate(s.limiter, s.outboundLimitEnabled);
  const hold = new EngineHoldGate(s.hold);
  const keyPool = s.keyPools === undefined ? null : new KeyPoolGate(s.keyPools);
  return {
    router: new Admission({ checks: [retryAfter, healthCheck], breaker, retryAfter, cooldown: null, healthCheck, rateLimit, queues: [slot, hold], keyPool }),
    alias: new Admission({ checks: [retryAfter, cooldown, healthCheck], breaker, retryAfter, cooldown, healthCheck, rateLimit, queues: [slot], keyPool }),
  };
}

/**
 * The admission-gate contract. Before every attempt of every model kind the request life asks
 * its `Admission` (`admission.ts`) whether a candidate endpoint may take the attempt now; the
 * admission asks each of its gates the same question. A gate answers from shared state it reads
 * (breaker, cooldown, Retry-After table, rate-limit bucket, slot pools) and never from the
 * request, so a new kind of gate (a key pool, say) is one more file here and one more entry in
 * the list `RoutingCore` builds, with no change to the life.
 *
 * Two shapes: a *check* gate is a pure predicate that refuses a candidate outright (it is left
 * out, silently); a *queue* gate never refuses, it hands out a ticket the attempt holds or waits
 * for (`queue-gate.ts`).
 */
import type { TargetRateLimit } from '../multi-target/target-rate-limit.ts';

/** The gates there are; a check gate's name, as metadata and tests refer to it. */
export type GateName = 'breaker' | 'cooldown' | 'health_check' | 'retry_after' | 'target_rate_limit' | 'outbound_slot' | 'engine_hold';

/** What an attempt would go to, as gates see it. A `ResolvedRoute` or `ResolvedTarget` fits. */
export interface AdmissionTarget {
  /** The upstream endpoint (`core/config/endpoint-id.ts`). */
  readonly endpointId: string;
  /** A multi-target target's own request-rate limit; absent or null for routes. */
  readonly rateLimit?: TargetRateLimit | null;
}

/** A pure check asked for every candidate of every attempt. */
export interface AdmissionGate {
  readonly name: GateName;
  /** Whether `target` may take an attempt at `nowMs`. Changes nothing a later call sees. */
  admits(target: AdmissionTarget, nowMs: number): boolean;
  /** Ms from `nowMs` until the gate may admit `target` (0 when it does; Infinity when unknown). */
  retryInMs(target: AdmissionTarget, nowMs: number): number;
  /**
   * Optional: true when the gate admits every target at `nowMs` (its table holds nothing that
   * could refuse), so the admission may skip asking it per target; false means "ask per
   * target", not "refuses". Absent ⇒ always asked per target. Reads only, like `admits`.
   */
  admitsEvery?(nowMs: number): boolean;
}

/**
 * What happened to one attempt, as data (undici's `UND_ERR_*` codes, Envoy's response flags).
 * Drivers translate sockets or simulated engines into these values; the core decides what they
 * mean for health, fallback and the client (`outcome-table.ts`).
 */
import { OUTCOME_RULES, type HttpErrorClass } from './outcome-table.ts';

/** Result of one attempt. `ok` means the upstream completed the response. */
export type Outcome =
  | { kind: 'ok' }
  | {
      kind: 'http_status';
      status: number;
      errorClass: HttpErrorClass;
      /** Upstream's Retry-After in ms (429/503), or null when absent. */
      retryAfterMs: number | null;
    }
  | { kind: 'transport'; cause: 'reset' | 'refused' | 'timeout' }
  | { kind: 'first_token_timeout' }
  | { kind: 'queue_wait_timeout' }
  | { kind: 'cancelled' }
  | { kind: 'client_gone' }
  /**
   * No upstream call: every key of the route's pool the caller may use is silenced, or it may
   * use none (seed 000 `KeyPoolExhausted`; a failed attempt that falls back). `roleRestricted`:
   * an unrestricted request could still be served (`KeyPoolRoleRestricted`), so the refusal is
   * about the caller's tier and never counts against the endpoint's health.
   */
  | { kind: 'key_pool_exhausted'; roleRestricted: boolean }
  /**
   * No upstream call: the driver could not take the route's unit of a limit shared with other
   * gateway replicas (a RouteWise quota window or concurrency slot, a target's rate limit) — it
   * is spent replica-wide. A failed attempt that falls back, like the local limit would have
   * made it; `retryAfterMs`: when a unit frees up, or null when unknown.
   */
  | { kind: 'shared_unit_refused'; unit: SharedUnitKind; retryAfterMs: number | null };

/** Which shared limit refused an attempt (`shared_unit_refused`). */
export type SharedUnitKind = 'quota' | 'concurrency' | 'rate_limit';

/**
 * Whether an outcome counts against the endpoint's health (breaker and EWMA availability).
 * Counted: transport errors, first-token timeouts, and the HTTP classes whose row in
 * `OUTCOME_RULES` says so (bare 5xx, 429, 408, 404, 401/403 — see also `markDegraded`).
 * Counted too: a key pool nobody could use (`key_pool_exhausted`, not role-restricted).
 * Not counted: a shared limit spent across replicas (`shared_unit_refused`), busy answers (503 with Retry-After, 529, overload types: the engine is shedding
 * load, not broken), request-scoped 4xx (another request would succeed), queue-wait timeouts
 * (the wait was ours, not the endpoint's), cancellations and client disconnects. Source: seed
 * 000 "endpoint health"; Envoy outlier detection counts 5xx and gateway errors only, LiteLLM
 * cools down on 429.
 */
export function isHealthFailure(outcome: Outcome): boolean {
  switch (outcome.kind) {
    case 'ok':
    case 'queue_wait_timeout':
    case 'cancelled':
    case 'client_gone':
      return false;
    case 'transport':
    case 'first_token_timeout':
      return true;
    case 'http_status':
      return OUTCOME_RULES[outcome.errorClass].healthFailure;
    case 'key_pool_exhausted':
      return !outcome.roleRestricted;
    case 'shared_unit_refused':
      return false; // our own accounting across replicas, not the endpoint's health
  }
}

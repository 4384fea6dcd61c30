/**
 * One attempt a request life has started and not ended, the same record for every model kind:
 * how it is made, the record it leaves in the ledger when it ends, and the outcome values the
 * life compares by identity. A `router:` model's attempt goes to one
 * of the model's routes (`target` null); a multi-target alias's to a target (`target` set, and
 * `route` is the target's route), so every part of the life — admission, deadlines, endings —
 * reads `route` alone.
 */
import type { ResolvedRoute, ResolvedTarget } from '../model/resolved-model.ts';
import type { DispatchClaim } from '../health/health-registry.ts';
import type { Outcome } from '../lifecycle/outcome.ts';
import type { AttemptKey, AttemptRecord, Usage } from '../lifecycle/seam.ts';
import type { PrefillLease } from '../prefill/prefill-load.ts';
import type { SlotTicket } from '../outbound/slot-pool.ts';
import type { QueueGate } from '../admission/queue-gate.ts';
import type { StreamIdleState } from './policy/stream-idle.ts';

/**
 * `normal`: may be interrupted for offload; `offload`: the offload attempt; `retry`: the
 * interrupted route's one more try, or an alias's same-target retry (costs no fallback budget);
 * `pinned`: an explicit pin; `hedge`: the planner's backup racing the primary. Only `normal`
 * attempts are ever cut short for offload.
 */
export type AttemptRole = 'normal' | 'offload' | 'retry' | 'pinned' | 'hedge';

/** One attempt the life has started and not ended. */
export interface LiveAttempt extends StreamIdleState {
  readonly attemptId: number;
  readonly route: ResolvedRoute;
  /** The alias target this attempt went to; null for a `router:` model's route. */
  readonly target: ResolvedTarget | null;
  /** The breaker claim; null when the attempt took none (explicit pin, every alias attempt). */
  readonly claim: DispatchClaim | null;
  readonly role: AttemptRole;
  readonly startMs: number;
  /** Queued for an outbound slot or engine-hold place, or sent upstream. */
  phase: 'queued' | 'sent';
  /** Outbound slot or engine-hold place; null when exempt or already given back. */
  ticket: SlotTicket | null;
  /** The queue gate that issued `ticket`; null when none applied. */
  ticketGate: QueueGate | null;
  /** Prefill lease (`router:` models), held from dispatch until the first token or the end; then null. */
  lease: PrefillLease | null;
  gotOutput: boolean;
  /** Whether this attempt's latency was sampled into the endpoint statistics (aliases). */
  sampled: boolean;
  /** The pooled upstream key the attempt sends with; null when the route has no key pool. */
  key: AttemptKey | null;
}

/** A new attempt at `nowMs`, queued until admission sends it (no ticket, lease or output yet). */
export function newLiveAttempt(attemptId: number, route: ResolvedRoute, target: ResolvedTarget | null, claim: DispatchClaim | null, role: AttemptRole, nowMs: number): LiveAttempt {
  return {
    attemptId,
    route,
    target,
    claim,
    role,
    startMs: nowMs,
    phase: 'queued',
    ticket: null,
    ticketGate: null,
    lease: null,
    gotOutput: false,
    sampled: false,
    key: null,
    lastChunkAtMs: nowMs,
    idleArmed: false,
  };
}

/**
 * The ledger record of attempt `a` ended at `nowMs` with `outcome`. `usage` is what the upstream
 * reported for it (the serving attempt): an alias attempt always records usage (zero when
 * absent: failed attempts are not billed) and its target; a router attempt records it when given.
 */
export function endedRecord(a: LiveAttempt, outcome: Outcome, nowMs: number, usage: Usage | undefined): AttemptRecord {
  const endpointId = a.route.endpointId;
  const t = a.target;
  const r: AttemptRecord =
    t !== null
      ? { attemptId: a.attemptId, endpointId, startMs: a.startMs, endMs: nowMs, outcome, target: t.model, usage: usage ?? NO_USAGE }
      : usage
        ? { attemptId: a.attemptId, endpointId, startMs: a.startMs, endMs: nowMs, outcome, usage }
        : { attemptId: a.attemptId, endpointId, startMs: a.startMs, endMs: nowMs, outcome };
  if (a.key !== null) r.keyId = a.key.keyId;
  return r;
}

/**
 * What the breaker, affinity and planner hear of an attempt cut short for offload: nothing (a
 * cancellation). A distinct object from `CANCELLED`: the life tells an offload cut by identity.
 */
export const NEUTRAL: Outcome = { kind: 'cancelled' };
/**
 * What the breaker hears of a pooled attempt that failed for a key-related reason while the
 * pool still has a key in the rotation: nothing (only the key is silenced; seed 000). A distinct
 * object from `CANCELLED`, compared by identity.
 */
export const KEY_SILENCED: Outcome = { kind: 'cancelled' };
/** An attempt cancelled by the life (hedge loser, client gone, overall deadline); compared by identity. */
export const CANCELLED: Outcome = { kind: 'cancelled' };
/** A served attempt. */
export const OK: Outcome = { kind: 'ok' };
/** A silent upstream: a headers, total or stream-idle wait (or an alias's overall deadline) ran out. */
export const TIMEOUT: Outcome = { kind: 'transport', cause: 'timeout' };
/** A stream attempt whose first content token did not come within the first-token wait. */
export const FIRST_TOKEN_TIMEOUT: Outcome = { kind: 'first_token_timeout' };
/** A queued attempt that gave up waiting for its slot (not the endpoint's fault). */
export const QUEUE_WAIT_TIMEOUT: Outcome = { kind: 'queue_wait_timeout' };
/** The usage of an attempt that served nothing (failed attempts are not billed). */
export const NO_USAGE: Usage = Object.freeze({ inputTokens: 0, outputTokens: 0, cachedTokens: 0 });

/** Whether `o` is a timeout (headers, first chunk or a transport timeout). */
export function isTimeout(o: Outcome): boolean {
  return o.kind === 'first_token_timeout' || (o.kind === 'transport' && o.cause === 'timeout');
}

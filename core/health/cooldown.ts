/**
 * Opt-in cooldown of direct models used as multi-target targets (seed 003: without a `cooldown`
 * block a failing target stays in rotation and every request fails over past it; with
 * `cooldown.enabled` a target that keeps failing leaves rotation — and hash rings — until its
 * cooldown ends, reported as `cooldown` with a reason such as `transport_error`).
 *
 * Triggers are independent of a model's `fallback_on_statuses`: transport errors and timeouts
 * always count; an HTTP status counts when it is in the direct model's `trigger_statuses`.
 * `consecutive_failures` triggering failures in a row start a cooldown of `duration`; a success
 * resets the count (but never ends a running cooldown early); a request-scoped failure (a status
 * not listed, a cancellation) changes nothing. A triggering failure while cooling down (a request
 * under `when_all_unavailable: try_anyway`) restarts the cooldown. Cooldown is a value read at
 * `nowMs`, never a timer (TigerBeetle's `Timeout`).
 */
import type { Outcome } from '../lifecycle/outcome.ts';

/** A direct model's cooldown settings, resolved. */
export interface CooldownPolicy {
  readonly durationMs: number;
  readonly triggerStatuses: ReadonlySet<number>;
  /** Triggering failures in a row that start a cooldown, integer ≥ 1. */
  readonly consecutiveFailures: number;
}

/** One endpoint's cooldown as data (GET /health/deep `status` / `status_reason`). */
export interface CooldownStatus {
  readonly endpointId: string;
  /** `not_configured` when the direct model has no enabled cooldown. */
  readonly state: 'healthy' | 'cooldown' | 'not_configured';
  /** Why the running (or last) cooldown started: `transport_error`, `timeout`, `http_503`, …; null if none. */
  readonly reason: string | null;
  /** When the running cooldown ends, ms; null when not cooling down. */
  readonly untilMs: number | null;
  readonly consecutiveFailures: number;
}

/** A cooldown that started (for driver logs and results). */
export interface CooldownStarted {
  readonly endpointId: string;
  readonly atMs: number;
  readonly untilMs: number;
  readonly reason: string;
}

interface Entry {
  readonly policy: CooldownPolicy;
  consecutive: number;
  untilMs: number | null;
  reason: string | null;
}

/** The cooldown reason an outcome triggers under `policy`, or null (success or neutral). */
export function cooldownTrigger(outcome: Outcome, policy: CooldownPolicy): string | null {
  switch (outcome.kind) {
    case 'transport':
      return outcome.cause === 'timeout' ? 'timeout' : 'transport_error';
    case 'first_token_timeout':
      return 'timeout';
    case 'http_status':
      return policy.triggerStatuses.has(outcome.status) ? `http_${outcome.status}` : null;
    default:
      return null;
  }
}

/** Cooldown state of every endpoint whose direct model opted in. */
export class CooldownRegistry {
  private readonly entries = new Map<string, Entry>();
  private pending: CooldownStarted[] = [];

  /**
   * Opts `endpointId` in with `policy` (at core construction).
   * @throws Error when the endpoint is configured twice.
   */
  configure(endpointId: string, policy: CooldownPolicy): void {
    if (this.entries.has(endpointId)) throw new Error(`cooldown for '${endpointId}' configured twice`);
    this.entries.set(endpointId, { policy, consecutive: 0, untilMs: null, reason: null });
  }

  /**
   * Takes over what `previous` (the registry of the previous configuration generation) knows of
   * every endpoint opted in here and there: a running cooldown (its end and reason) and the
   * failures counted towards the next, capped below this policy's threshold. Call after
   * `configure`, before any `record`. Endpoints opted in only here start fresh.
   */
  carryFrom(previous: CooldownRegistry): void {
    for (const [id, e] of this.entries) {
      const p = previous.entries.get(id);
      if (p === undefined) continue;
      e.untilMs = p.untilMs;
      e.reason = p.reason;
      e.consecutive = Math.min(p.consecutive, e.policy.consecutiveFailures - 1);
    }
  }

  /** Whether no endpoint opted in (then `active` is false for every endpoint). */
  get isEmpty(): boolean {
    return this.entries.size === 0;
  }

  /** Whether `endpointId` is cooling down at `nowMs` (false when not opted in). */
  active(endpointId: string, nowMs: number): boolean {
    const e = this.entries.get(endpointId);
    return e !== undefined && e.untilMs !== null && nowMs < e.untilMs;
  }

  /** Feeds one ended attempt to `endpointId` at `nowMs`. No-op when the endpoint is not opted in. */
  record(endpointId: string, outcome: Outcome, nowMs: number): void {
    const e = this.entries.get(endpointId);
    if (e === undefined) return;
    if (e.untilMs !== null && nowMs >= e.untilMs) e.untilMs = null; // lapsed
    if (outcome.kind === 'ok') {
      e.consecutive = 0;
      return;
    }
    const reason = cooldownTrigger(outcome, e.policy);
    if (reason === null) return;
    e.consecutive += 1;
    if (e.untilMs !== null || e.consecutive >= e.policy.consecutiveFailures) {
      e.untilMs = nowMs + e.policy.durationMs;
      e.reason = reason;
      e.consecutive = 0;
      this.pending.push({ endpointId, atMs: nowMs, untilMs: e.untilMs, reason });
    }
  }

  /** `endpointId`'s cooldown at `nowMs`. Pure. */
  status(endpointId: string, nowMs: number): CooldownStatus {
    const e = this.entries.get(endpointId);
    if (e === undefined) return { endpointId, state: 'not_configured', reason: null, untilMs: null, consecutiveFailures: 0 };
    const cooling = e.untilMs !== null && nowMs < e.untilMs;
    return { endpointId, state: cooling ? 'cooldown' : 'healthy', reason: cooling ? e.reason : null, untilMs: cooling ? e.untilMs : null, consecutiveFailures: e.consecutive };
  }

  /** Cooldowns started since the last drain, oldest first; clears them. */
  drainStarted(): CooldownStarted[] {
    const out = this.pending;
    this.pending = [];
    return out;
  }

  /** @throws Error when a count is negative or at/over its threshold, or a cooldown has no reason. */
  invariants(): void {
    for (const [id, e] of this.entries) {
      if (!Number.isSafeInteger(e.consecutive) || e.consecutive < 0 || e.consecutive >= e.policy.consecutiveFailures) {
        throw new Error(`cooldown '${id}': consecutive failures ${e.consecutive} outside [0, ${e.policy.consecutiveFailures})`);
      }
      if (e.untilMs !== null && e.reason === null) throw new Error(`cooldown '${id}': cooling down without a reason`);
    }
  }
}

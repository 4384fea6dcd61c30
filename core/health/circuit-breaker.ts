/**
 * One endpoint's circuit breaker and EWMA availability, as a small state machine.
 *
 *   closed ──(failureThreshold consecutive failures | a failure leaves availability < min | degraded)──▶ open
 *   open ──(cooldownMs elapsed; a probe claim is taken)──▶ half_open
 *   half_open ──(the probe's own result is ok)──▶ closed
 *   half_open ──(the probe's own result is a failure | degraded)──▶ open   (new cooldown from now)
 *
 * No other transition exists. The class holds no clock: every method that depends on time takes
 * `nowMs` (milliseconds on the caller's clock). Methods that change state return the transition
 * they caused (or null) instead of logging it; the `HealthRegistry` collects them.
 * Dispatch claims live in the registry; the breaker only remembers which claim is its probe.
 * Source: seed 000 endpoint health and circuit breaking; Envoy outlier detection.
 */
import { isHealthFailure, type Outcome } from '../lifecycle/outcome.ts';
import type { HealthOptions } from './health-options.ts';

/** Breaker state. `open` refuses traffic; `half_open` has admitted (or will admit) one probe. */
export type BreakerState = 'closed' | 'open' | 'half_open';

/**
 * Why a transition happened.
 * - `consecutive_failures`: closed → open, `failureThreshold` counted failures in a row.
 * - `low_availability`: closed → open, a counted failure left availability < `minAvailability`.
 * - `degraded`: closed|half_open → open, the provider refused the gateway's own credential.
 * - `probe_started`: open → half_open, the cooldown elapsed and a probe claim was taken.
 * - `probe_ok`: half_open → closed, the probe succeeded.
 * - `probe_failed`: half_open → open, the probe failed (a new cooldown starts).
 */
export type TransitionReason =
  | 'consecutive_failures'
  | 'low_availability'
  | 'degraded'
  | 'probe_started'
  | 'probe_ok'
  | 'probe_failed';

/**
 * One breaker state change, as data (the simulator writes these to its events table).
 * `atMs` is the caller's `nowMs` at the call that caused it.
 */
export interface BreakerTransition {
  readonly endpointId: string;
  readonly atMs: number;
  readonly from: BreakerState;
  readonly to: BreakerState;
  readonly reason: TransitionReason;
}

/**
 * The only state changes a breaker makes, as [from, to] pairs:
 * closed→open, open→half_open, half_open→closed, half_open→open.
 */
export const LEGAL_TRANSITIONS: readonly (readonly [BreakerState, BreakerState])[] = Object.freeze([
  Object.freeze(['closed', 'open'] as const),
  Object.freeze(['open', 'half_open'] as const),
  Object.freeze(['half_open', 'closed'] as const),
  Object.freeze(['half_open', 'open'] as const),
]);

/** Whether `from → to` is one of `LEGAL_TRANSITIONS`. */
export function isLegalTransition(from: BreakerState, to: BreakerState): boolean {
  return LEGAL_TRANSITIONS.some(([f, t]) => f === from && t === to);
}

/**
 * What an outcome says about the endpoint's health:
 * - `success`: `kind === 'ok'`;
 * - `failure`: `isHealthFailure(outcome)` (5xx, 429, 401/403, transport errors, first-token timeouts);
 * - `none`: everything else (request-scoped 4xx such as context_length/content_policy,
 *   queue-wait timeouts, cancellations, client disconnects) — recorded nowhere.
 */
export type HealthSignal = 'success' | 'failure' | 'none';

/** Classifies an attempt's outcome for health; see `HealthSignal`. Pure. */
export function healthSignal(outcome: Outcome): HealthSignal {
  if (outcome.kind === 'ok') return 'success';
  return isHealthFailure(outcome) ? 'failure' : 'none';
}

/**
 * One EWMA step: `(1 − alpha)·availability + alpha·(success ? 1 : 0)`, clamped to [0, 1] so
 * rounding can never leave the range. `availability` in [0, 1], `alpha` in (0, 1]. Pure.
 */
export function nextAvailability(availability: number, alpha: number, success: boolean): number {
  const next = (1 - alpha) * availability + alpha * (success ? 1 : 0);
  return Math.min(1, Math.max(0, next));
}

/**
 * Whether a closed breaker must open after a counted failure, given the counters *after* that
 * failure was recorded: `consecutive_failures` when `consecutiveFailures ≥ failureThreshold`
 * (checked first), else `low_availability` when `availability < minAvailability`, else null. Pure.
 */
export function openReason(
  consecutiveFailures: number,
  availability: number,
  options: Pick<HealthOptions, 'failureThreshold' | 'minAvailability'>,
): 'consecutive_failures' | 'low_availability' | null {
  if (consecutiveFailures >= options.failureThreshold) return 'consecutive_failures';
  if (availability < options.minAvailability) return 'low_availability';
  return null;
}

/**
 * Whether a claim (or a cooldown) started at `sinceMs` has run its course by `nowMs`:
 * `nowMs − sinceMs ≥ periodMs`. A claim is live for [takenAtMs, takenAtMs + cooldownMs). Pure.
 */
export function hasElapsed(sinceMs: number, nowMs: number, periodMs: number): boolean {
  return nowMs - sinceMs >= periodMs;
}

/** The breaker's record of its probe: the registry claim id and when it was taken (ms). */
export interface ProbeSlot {
  readonly claimId: number;
  readonly takenAtMs: number;
}

/**
 * Mutable state machine for one endpoint. Starts closed with availability 1.0 and no failures.
 * The registry is its only intended user; it is exported for tests and tools.
 */
export class CircuitBreaker {
  /** The endpoint this breaker guards. */
  readonly endpointId: string;
  private readonly options: Readonly<HealthOptions>;
  private _state: BreakerState = 'closed';
  private _availability = 1;
  private _consecutiveFailures = 0;
  private _openedAtMs: number | null = null;
  private _probe: ProbeSlot | null = null;

  /** `options` must already be validated (`resolveHealthOptions`). */
  constructor(endpointId: string, options: Readonly<HealthOptions>) {
    this.endpointId = endpointId;
    this.options = options;
  }

  /** Current state (transitions happen only inside method calls, never by time alone). */
  get state(): BreakerState {
    return this._state;
  }
  /** EWMA of success over counted results, in [0, 1]; 1.0 before any result. */
  get availability(): number {
    return this._availability;
  }
  /** Counted failures since the last counted success (or since a probe closed the breaker). */
  get consecutiveFailures(): number {
    return this._consecutiveFailures;
  }
  /** When the breaker last opened (ms), or null while closed. Kept while half_open. */
  get openedAtMs(): number | null {
    return this._openedAtMs;
  }
  /** The probe slot, possibly expired, or null. Only ever set while half_open. */
  get probe(): ProbeSlot | null {
    return this._probe;
  }

  /** The probe slot if it is set and not expired at `nowMs`, else null. Pure. */
  liveProbe(nowMs: number): ProbeSlot | null {
    const p = this._probe;
    if (p === null || hasElapsed(p.takenAtMs, nowMs, this.options.cooldownMs)) return null;
    return p;
  }

  /** Whether `claimId` is this breaker's probe and still live at `nowMs`. Pure. */
  isLiveProbe(claimId: number, nowMs: number): boolean {
    return this.liveProbe(nowMs)?.claimId === claimId;
  }

  /**
   * Whether a request may be dispatched at `nowMs`. Pure. Closed: true. Open: true once
   * `cooldownMs` has elapsed since it opened (the request would be the probe). Half-open: true only
   * while no live probe holds the slot (the slot is free after a neutral probe result or once the
   * probe claim expired).
   */
  /**
   * Milliseconds from `nowMs` until the breaker would admit a request again: 0 when it admits
   * now; the rest of the cooldown when open; the rest of the live probe claim's lifetime when
   * half-open (its result may settle sooner). For a Retry-After when every route is shut.
   */
  admitsInMs(nowMs: number): number {
    if (this.admits(nowMs)) return 0;
    if (this._state === 'open' && this._openedAtMs !== null) return Math.max(1, this._openedAtMs + this.options.cooldownMs - nowMs);
    const p = this._probe;
    return p === null ? 1 : Math.max(1, p.takenAtMs + this.options.cooldownMs - nowMs);
  }

  admits(nowMs: number): boolean {
    switch (this._state) {
      case 'closed':
        return true;
      case 'open':
        return (
          this._openedAtMs !== null &&
          hasElapsed(this._openedAtMs, nowMs, this.options.cooldownMs)
        );
      case 'half_open':
        return this.liveProbe(nowMs) === null;
    }
  }

  /**
   * Takes the probe slot for claim `claimId` at `nowMs`. From open this is the open → half_open
   * transition (`probe_started`, returned); from half_open with a free slot the slot is simply
   * re-taken and null is returned (no state change).
   * @throws Error when the breaker is closed or does not admit a probe now (a registry bug).
   */
  startProbe(claimId: number, nowMs: number): BreakerTransition | null {
    if (this._state === 'closed' || !this.admits(nowMs)) {
      throw new Error(
        `endpoint '${this.endpointId}': cannot start a probe in state ${this._state} at ${nowMs}ms`,
      );
    }
    this._probe = { claimId, takenAtMs: nowMs };
    if (this._state === 'open') return this.move('half_open', 'probe_started', nowMs);
    return null;
  }

  /**
   * Records a result that does not settle a probe (an ordinary claim, an unadmitted request, an
   * expired probe claim). Updates the EWMA and the consecutive-failure count for `success` and
   * `failure`; `none` changes nothing. Only a closed breaker can change state here (closed → open
   * on a failure, see `openReason`); while open or half-open the counters move but the state,
   * the cooldown and the probe slot do not.
   */
  record(signal: HealthSignal, nowMs: number): BreakerTransition | null {
    if (signal === 'none') return null;
    this.count(signal);
    if (this._state !== 'closed' || signal !== 'failure') return null;
    const reason = openReason(this._consecutiveFailures, this._availability, this.options);
    if (reason === null) return null;
    this._openedAtMs = nowMs;
    return this.move('open', reason, nowMs);
  }

  /**
   * Settles the live probe `claimId` with its own result at `nowMs`.
   * - `success`: counters updated (EWMA step up, consecutive failures reset to 0), half_open →
   *   closed (`probe_ok`). The EWMA is kept, not reset to 1.0: a recovered endpoint stays on
   *   probation, and while its availability is still below `minAvailability` its next counted
   *   failure re-opens the breaker at once.
   * - `failure`: counters updated, half_open → open (`probe_failed`), new cooldown from `nowMs`.
   * - `none`: nothing recorded; the probe slot is freed, the breaker stays half_open, and the
   *   next admitted request becomes the new probe.
   * @throws Error when `claimId` is not the live probe at `nowMs` (a registry bug).
   */
  settleProbe(claimId: number, signal: HealthSignal, nowMs: number): BreakerTransition | null {
    if (this._state !== 'half_open' || !this.isLiveProbe(claimId, nowMs)) {
      throw new Error(
        `endpoint '${this.endpointId}': claim #${claimId} is not the live probe at ${nowMs}ms`,
      );
    }
    this._probe = null;
    if (signal === 'none') return null;
    this.count(signal);
    if (signal === 'success') {
      this._openedAtMs = null;
      return this.move('closed', 'probe_ok', nowMs);
    }
    this._openedAtMs = nowMs;
    return this.move('open', 'probe_failed', nowMs);
  }

  /** Frees the probe slot if it holds `claimId` (used when an expired probe claim ends). */
  releaseProbe(claimId: number): void {
    if (this._probe?.claimId === claimId) this._probe = null;
  }

  /**
   * The provider refused the gateway's own credential: open at once, without touching the
   * counters (the attempt's own result is recorded separately by its `endDispatch`).
   * closed → open and half_open → open (the probe slot is dropped; that claim can no longer
   * settle anything) return a `degraded` transition; when already open the cooldown restarts
   * from `nowMs` and null is returned (open → open is not a transition).
   */
  degrade(nowMs: number): BreakerTransition | null {
    this._openedAtMs = nowMs;
    this._probe = null;
    if (this._state === 'open') return null;
    return this.move('open', 'degraded', nowMs);
  }

  /**
   * Checks internal consistency. @throws Error describing the first violation:
   * availability outside [0, 1]; consecutiveFailures not a non-negative integer; closed with an
   * openedAtMs, a probe, or consecutiveFailures ≥ failureThreshold; open/half_open without
   * openedAtMs; a probe outside half_open; a probe taken before the cooldown elapsed.
   */
  checkInvariants(): void {
    const where = `endpoint '${this.endpointId}'`;
    const a = this._availability;
    if (!(a >= 0 && a <= 1)) throw new Error(`${where}: availability ${a} outside [0, 1]`);
    const cf = this._consecutiveFailures;
    if (!Number.isSafeInteger(cf) || cf < 0) {
      throw new Error(`${where}: consecutiveFailures ${cf} is not a non-negative integer`);
    }
    if (this._state === 'closed') {
      if (this._openedAtMs !== null) throw new Error(`${where}: closed but openedAtMs is set`);
      if (cf >= this.options.failureThreshold) {
        throw new Error(`${where}: closed with ${cf} consecutive failures (threshold ${this.options.failureThreshold})`);
      }
    } else if (this._openedAtMs === null) {
      throw new Error(`${where}: ${this._state} but openedAtMs is null`);
    }
    const p = this._probe;
    if (p !== null) {
      if (this._state !== 'half_open') throw new Error(`${where}: probe slot set while ${this._state}`);
      if (this._openedAtMs !== null && !hasElapsed(this._openedAtMs, p.takenAtMs, this.options.cooldownMs)) {
        throw new Error(`${where}: probe #${p.claimId} taken before the cooldown elapsed`);
      }
    }
  }

  private count(signal: 'success' | 'failure'): void {
    const success = signal === 'success';
    this._availability = nextAvailability(this._availability, this.options.ewmaAlpha, success);
    this._consecutiveFailures = success ? 0 : this._consecutiveFailures + 1;
  }

  private move(to: BreakerState, reason: TransitionReason, atMs: number): BreakerTransition {
    const from = this._state;
    if (!isLegalTransition(from, to)) {
      throw new Error(`endpoint '${this.endpointId}': illegal transition ${from} -> ${to}`);
    }
    this._state = to;
    return Object.freeze({ endpointId: this.endpointId, atMs, from, to, reason });
  }
}

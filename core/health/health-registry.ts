/**
 * Endpoint health shared by every router of a process: one circuit breaker and one EWMA of
 * success per endpoint id, created lazily, plus the dispatch claims that tie a request to the
 * breaker that admitted it.
 *
 * Admission is two-step. `allowRequest` is a pure predicate a router may ask about any number of
 * candidates; `beginDispatch` commits to one and returns a claim (an ordinary claim while
 * closed, the single half-open probe once an open breaker's cooldown has elapsed, or null);
 * `endDispatch` ends that claim exactly once with the attempt's `Outcome`.
 *
 * Claim lifetime: a claim is live for `cooldownMs` after it was taken. Expiry matters for probes
 * only: a probe claim older than that no longer holds the probe slot, so `allowRequest` and
 * `beginDispatch` treat the slot as free and a new probe may be issued. Ending an expired claim
 * later is allowed (it still counts as its one `endDispatch`) but settles nothing; its result
 * is recorded like an ordinary claim's. Every claim, expired or not, counts in `claimsInFlight`
 * until it is ended.
 *
 * No clock is read: every call takes `nowMs` (milliseconds, finite, on the caller's clock —
 * the simulator's virtual time or the gateway's monotonic clock; expected not to go backwards).
 * Source: seed 000 endpoint health and circuit breaking; Envoy outlier detection.
 */
import type { Outcome } from '../lifecycle/outcome.ts';
import {
  CircuitBreaker,
  hasElapsed,
  healthSignal,
  type BreakerState,
  type BreakerTransition,
} from './circuit-breaker.ts';
import { resolveHealthOptions, type HealthOptions } from './health-options.ts';
import { IntrusiveList, type ListLinks } from '../intrusive-list.ts';

/** Re-exported from `health-options.ts` so callers can import the registry module alone. */
export type { HealthOptions } from './health-options.ts';
/** Re-exported from `health-options.ts`: the defaults and their validator. */
export { DEFAULT_HEALTH_OPTIONS, resolveHealthOptions } from './health-options.ts';
/** Re-exported from `circuit-breaker.ts`: breaker states and transition records. */
export type { BreakerState, BreakerTransition, TransitionReason } from './circuit-breaker.ts';

declare const claimBrand: unique symbol;

/**
 * An admitted dispatch, issued by `HealthRegistry.beginDispatch` and ended exactly once by
 * `HealthRegistry.endDispatch`. Opaque and read-only to callers; only a registry can create one.
 * - `endpointId`: the endpoint it was admitted to;
 * - `claimId`: a positive integer from the issuing registry's own counter (unique per registry);
 * - `isProbe`: whether it was taken as the half-open probe;
 * - `takenAtMs`: the `nowMs` of `beginDispatch`; the claim is live until `takenAtMs + cooldownMs`.
 */
export interface DispatchClaim {
  readonly endpointId: string;
  readonly claimId: number;
  readonly isProbe: boolean;
  readonly takenAtMs: number;
  readonly [claimBrand]: true;
}

/**
 * One endpoint's health as data (feeds GET /health/deep).
 * - `state`: breaker state; an open breaker whose cooldown has elapsed still reads `open` until
 *   a `beginDispatch` takes the probe;
 * - `availability`: EWMA of success in [0, 1];
 * - `consecutiveFailures`: counted failures since the last counted success;
 * - `openedAtMs`: when the breaker last opened (ms), null while closed;
 * - `probeInFlight`: a live (unexpired, unended) probe holds the half-open slot;
 * - `claimsInFlight`: claims taken and not yet ended, expired ones included.
 */
export interface EndpointHealthSnapshot {
  readonly endpointId: string;
  readonly state: BreakerState;
  readonly availability: number;
  readonly consecutiveFailures: number;
  readonly openedAtMs: number | null;
  readonly probeInFlight: boolean;
  readonly claimsInFlight: number;
}

interface EndpointEntry {
  readonly breaker: CircuitBreaker;
  claimsInFlight: number;
}

/** The concrete claim: the public fields plus the live-claims list's links. */
/** A claim as the registry keeps it: linked into the live list, and holding its endpoint's entry (entries are never replaced). */
type LiveClaim = DispatchClaim & ListLinks<LiveClaim> & { readonly entry: EndpointEntry };

function checkNow(nowMs: number): void {
  if (typeof nowMs !== 'number' || !Number.isFinite(nowMs)) {
    throw new RangeError(`nowMs must be a finite number of milliseconds, got ${String(nowMs)}`);
  }
}

function describe(claim: DispatchClaim): string {
  return `claim #${claim.claimId} (${claim.isProbe ? 'probe' : 'ordinary'}) for endpoint '${claim.endpointId}' taken at ${claim.takenAtMs}ms`;
}

/**
 * Health of all endpoints of one process, keyed by endpoint id. Deterministic: the same calls
 * with the same `nowMs` values give the same results. Not thread-safe (none needed in Node).
 */
export class HealthRegistry {
  /** The validated options in force (frozen). */
  readonly options: Readonly<HealthOptions>;
  private readonly endpoints = new Map<string, EndpointEntry>();
  /** Claims taken and not yet ended (an intrusive list: no hashing on the decision path). */
  private readonly liveClaims = new IntrusiveList<LiveClaim>();
  private nextClaimId = 1;
  /** Breakers not closed (open or half-open); 0 lets `allowRequest` answer without a lookup. */
  private notClosed = 0;
  private pending: BreakerTransition[] = [];

  /**
   * @param options overrides of `DEFAULT_HEALTH_OPTIONS` (failureThreshold 3, cooldownMs 30 000,
   *   minAvailability 0.7, ewmaAlpha 0.1).
   * @throws RangeError naming the option and its allowed range (see `resolveHealthOptions`).
   */
  constructor(options: Partial<HealthOptions> = {}) {
    this.options = resolveHealthOptions(options);
  }

  /** Whether every breaker is closed: then `allowRequest` is true for every endpoint. */
  get allClosed(): boolean {
    return this.notClosed === 0;
  }

  /**
   * Whether a request to `endpointId` would be admitted at `nowMs`. Pure: changes nothing, not
   * even the lazy creation of the endpoint (an unknown endpoint is healthy: true).
   * Closed ⇒ true. Open ⇒ true only once `cooldownMs` has elapsed since it opened and no probe is
   * live. Half-open with a live probe ⇒ false; with the slot free (probe expired or ended with a
   * neutral outcome) ⇒ true. Agrees with `beginDispatch(endpointId, nowMs) !== null`.
   * @throws RangeError when `nowMs` is not finite.
   */
  allowRequest(endpointId: string, nowMs: number): boolean {
    checkNow(nowMs);
    if (this.notClosed === 0) return true; // every breaker closed: all admit
    const entry = this.endpoints.get(endpointId);
    return entry === undefined ? true : entry.breaker.admits(nowMs);
  }

  /**
   * Milliseconds until `endpointId`'s breaker would admit a request (0: now). Pure.
   * @throws RangeError when `nowMs` is not finite.
   */
  admitsInMs(endpointId: string, nowMs: number): number {
    checkNow(nowMs);
    const entry = this.endpoints.get(endpointId);
    return entry === undefined ? 0 : entry.breaker.admitsInMs(nowMs);
  }

  /**
   * Commits to dispatching one request to `endpointId` at `nowMs`. Closed ⇒ an ordinary claim.
   * Open with the cooldown elapsed, or half-open with the probe slot free ⇒ the probe claim
   * (`isProbe: true`; open → half_open is recorded as a `probe_started` transition). Otherwise
   * (cooling down, or a live probe in flight) ⇒ null and nothing changes except the lazy creation
   * of the endpoint's state.
   * @throws RangeError when `nowMs` is not finite.
   */
  beginDispatch(endpointId: string, nowMs: number): DispatchClaim | null {
    checkNow(nowMs);
    const entry = this.entry(endpointId);
    const breaker = entry.breaker;
    let isProbe: boolean;
    if (breaker.state === 'closed') {
      isProbe = false;
    } else if (breaker.admits(nowMs)) {
      isProbe = true;
    } else {
      return null;
    }
    const claimId = this.nextClaimId++;
    const claim = { endpointId, claimId, isProbe, takenAtMs: nowMs, entry, prev: null, next: null, list: null } as unknown as LiveClaim;
    if (isProbe) this.collect(breaker.startProbe(claimId, nowMs));
    this.liveClaims.add(claim);
    entry.claimsInFlight += 1;
    return claim;
  }

  /**
   * Ends `claim` with the attempt's `outcome` at `nowMs`; must be called exactly once per claim.
   * The outcome is classified by `healthSignal`: ok ⇒ success, `isHealthFailure` ⇒ failure,
   * anything else (request-scoped 4xx, queue-wait timeout, cancelled, client gone) ⇒ nothing is
   * recorded, but the claim still ends.
   * - The live probe's own claim settles the probe: success closes the breaker (consecutive
   *   failures reset, EWMA kept as is), failure re-opens it with a new cooldown from `nowMs`, a
   *   neutral outcome frees the probe slot and leaves it half-open.
   * - Any other claim (ordinary, expired probe, or a probe dropped by `markDegraded`) only
   *   records its result; it can open a closed breaker but never closes or re-opens one that is
   *   open or half-open.
   * @throws Error naming the claim when it was already ended or was not issued by this registry.
   * @throws RangeError when `nowMs` is not finite.
   */
  endDispatch(claim: DispatchClaim, outcome: Outcome, nowMs: number): void {
    checkNow(nowMs);
    if (!this.liveClaims.has(claim as LiveClaim)) {
      throw new Error(
        `endDispatch called twice or with a foreign claim: ${describe(claim)} is not live in this registry`,
      );
    }
    const entry = (claim as LiveClaim).entry;
    this.liveClaims.remove(claim as LiveClaim);
    entry.claimsInFlight -= 1;
    const breaker = entry.breaker;
    const signal = healthSignal(outcome);
    if (claim.isProbe && breaker.probe?.claimId === claim.claimId) {
      if (breaker.isLiveProbe(claim.claimId, nowMs)) {
        this.collect(breaker.settleProbe(claim.claimId, signal, nowMs));
        return;
      }
      breaker.releaseProbe(claim.claimId);
    }
    this.collect(breaker.record(signal, nowMs));
  }

  /**
   * Records the result of a request to `endpointId` that bypassed admission (an explicit admin
   * pin) at `nowMs`. Updates availability and consecutive failures like an ordinary claim's
   * result (and so may open a closed breaker) but never settles a half-open probe. Neutral
   * outcomes record nothing. Creates the endpoint's state lazily.
   * @throws RangeError when `nowMs` is not finite.
   */
  recordUnadmitted(endpointId: string, outcome: Outcome, nowMs: number): void {
    checkNow(nowMs);
    this.collect(this.entry(endpointId).breaker.record(healthSignal(outcome), nowMs));
  }

  /**
   * The provider refused the gateway's own credential (401/403) for `endpointId` at `nowMs`:
   * open the breaker at once, without waiting for the EWMA, and start a cooldown from `nowMs`.
   * A half-open probe is dropped (its claim still has to be ended but settles nothing). Already
   * open ⇒ the cooldown restarts and no transition is recorded. Counters are not touched: the
   * attempt's own `endDispatch` records its failure.
   * @throws RangeError when `nowMs` is not finite.
   */
  markDegraded(endpointId: string, nowMs: number): void {
    checkNow(nowMs);
    this.collect(this.entry(endpointId).breaker.degrade(nowMs));
  }

  /** Whether `drainTransitions` would return any transition (a check that allocates nothing). */
  get hasTransitions(): boolean {
    return this.pending.length > 0;
  }

  /** The transitions recorded since the last drain, oldest first; clears them. */
  drainTransitions(): BreakerTransition[] {
    const out = this.pending;
    this.pending = [];
    return out;
  }

  /**
   * Every known endpoint's health at `nowMs`, sorted by endpoint id (code-unit order). Pure.
   * @throws RangeError when `nowMs` is not finite.
   */
  snapshot(nowMs: number): EndpointHealthSnapshot[] {
    checkNow(nowMs);
    const ids = [...this.endpoints.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return ids.map((id) => this.snapshotOf(id, nowMs));
  }

  /**
   * One endpoint's health at `nowMs`; an unknown endpoint reads as fresh (closed, availability 1).
   * Pure: does not create the endpoint's state.
   * @throws RangeError when `nowMs` is not finite.
   */
  snapshotOf(endpointId: string, nowMs: number): EndpointHealthSnapshot {
    checkNow(nowMs);
    const entry = this.endpoints.get(endpointId);
    if (entry === undefined) {
      return {
        endpointId,
        state: 'closed',
        availability: 1,
        consecutiveFailures: 0,
        openedAtMs: null,
        probeInFlight: false,
        claimsInFlight: 0,
      };
    }
    const b = entry.breaker;
    return {
      endpointId,
      state: b.state,
      availability: b.availability,
      consecutiveFailures: b.consecutiveFailures,
      openedAtMs: b.openedAtMs,
      probeInFlight: b.liveProbe(nowMs) !== null,
      claimsInFlight: entry.claimsInFlight,
    };
  }

  /**
   * Checks the registry's consistency; for tests and the simulator's checked mode.
   * @throws Error describing the first violation: any breaker invariant (see
   *   `CircuitBreaker.checkInvariants`: availability outside [0, 1], illegal state combinations);
   *   claimsInFlight negative or different from the number of unended claims of that endpoint;
   *   a breaker's probe slot naming a claim that is not an unended probe claim of that endpoint;
   *   two unended probe claims of one endpoint that were ever live at the same time (more than
   *   one live probe); a claim for an unknown endpoint or with an id the registry never issued.
   */
  invariants(): void {
    const perEndpoint = new Map<string, DispatchClaim[]>();
    const byId = new Map<number, DispatchClaim>();
    for (const claim of this.liveClaims) {
      const id = claim.claimId;
      if (byId.has(id) || id < 1 || id >= this.nextClaimId) {
        throw new Error(`${describe(claim)} has an id this registry never issued`);
      }
      if (!this.endpoints.has(claim.endpointId)) throw new Error(`${describe(claim)}: unknown endpoint`);
      byId.set(id, claim);
      const list = perEndpoint.get(claim.endpointId) ?? [];
      list.push(claim);
      perEndpoint.set(claim.endpointId, list);
    }
    let notClosed = 0;
    for (const entry of this.endpoints.values()) if (entry.breaker.state !== 'closed') notClosed++;
    if (notClosed !== this.notClosed) throw new Error(`health: ${notClosed} breakers not closed, counted ${this.notClosed}`);
    for (const [endpointId, entry] of this.endpoints) {
      const b = entry.breaker;
      b.checkInvariants();
      const claims = perEndpoint.get(endpointId) ?? [];
      if (!Number.isSafeInteger(entry.claimsInFlight) || entry.claimsInFlight < 0) {
        throw new Error(`endpoint '${endpointId}': claimsInFlight ${entry.claimsInFlight} < 0`);
      }
      if (entry.claimsInFlight !== claims.length) {
        throw new Error(
          `endpoint '${endpointId}': claimsInFlight ${entry.claimsInFlight} but ${claims.length} unended claims`,
        );
      }
      const slot = b.probe;
      if (slot !== null) {
        const c = byId.get(slot.claimId);
        if (c === undefined || !c.isProbe || c.endpointId !== endpointId || c.takenAtMs !== slot.takenAtMs) {
          throw new Error(`endpoint '${endpointId}': probe slot names claim #${slot.claimId}, not an unended probe claim`);
        }
      }
      const probes = claims.filter((c) => c.isProbe).sort((x, y) => x.takenAtMs - y.takenAtMs);
      for (let i = 1; i < probes.length; i++) {
        const prev = probes[i - 1]!;
        const cur = probes[i]!;
        if (!hasElapsed(prev.takenAtMs, cur.takenAtMs, this.options.cooldownMs)) {
          throw new Error(
            `endpoint '${endpointId}': two live probes, ${describe(prev)} and ${describe(cur)}`,
          );
        }
      }
    }
  }

  private entry(endpointId: string): EndpointEntry {
    let e = this.endpoints.get(endpointId);
    if (e === undefined) {
      e = { breaker: new CircuitBreaker(endpointId, this.options), claimsInFlight: 0 };
      this.endpoints.set(endpointId, e);
    }
    return e;
  }

  private collect(t: BreakerTransition | null): void {
    if (t === null) return;
    this.pending.push(t);
    this.notClosed += (t.to !== 'closed' ? 1 : 0) - (t.from !== 'closed' ? 1 : 0);
  }
}

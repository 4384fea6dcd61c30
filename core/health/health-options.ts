/**
 * Tunables of endpoint health: circuit breaker thresholds and the EWMA of success.
 *
 * The core never reads the environment; a driver (gateway, simulator) maps its settings onto
 * these options: `CIRCUIT_FAILURE_THRESHOLD` → `failureThreshold`, `CIRCUIT_COOLDOWN_SECONDS`
 * (× 1000) → `cooldownMs`, `CIRCUIT_MIN_AVAILABILITY` → `minAvailability`,
 * `ROUTER_HEALTH_EWMA_ALPHA` → `ewmaAlpha`.
 * Source: seed 000 endpoint health and circuit breaking; Envoy outlier detection
 * (`consecutive_5xx`, `base_ejection_time`, success-rate ejection).
 */

/** Endpoint health options. All times are milliseconds on the caller's clock (`nowMs`). */
export interface HealthOptions {
  /**
   * Consecutive counted failures that open a closed breaker. Integer ≥ 1.
   * Default 3 (`CIRCUIT_FAILURE_THRESHOLD`).
   */
  readonly failureThreshold: number;
  /**
   * How long an opened breaker refuses traffic before it admits one half-open probe, and how
   * long any dispatch claim stays live (a probe claim older than this no longer blocks a new
   * probe). Milliseconds, finite, > 0. Default 30 000 (`CIRCUIT_COOLDOWN_SECONDS` = 30).
   */
  readonly cooldownMs: number;
  /**
   * A counted failure that leaves the availability EWMA strictly below this opens a closed
   * breaker. In [0, 1]; 0 disables the availability rule. Default 0.7 (`CIRCUIT_MIN_AVAILABILITY`).
   */
  readonly minAvailability: number;
  /**
   * Weight of the newest result in the availability EWMA:
   * `availability ← (1 − α)·availability + α·(success ? 1 : 0)`. In (0, 1].
   * Default 0.1 (`ROUTER_HEALTH_EWMA_ALPHA`).
   */
  readonly ewmaAlpha: number;
}

/**
 * The defaults: failureThreshold 3, cooldownMs 30 000, minAvailability 0.7, ewmaAlpha 0.1.
 * Frozen. Source: seed 000 endpoint health and circuit breaking.
 */
export const DEFAULT_HEALTH_OPTIONS: Readonly<HealthOptions> = Object.freeze({
  failureThreshold: 3,
  cooldownMs: 30_000,
  minAvailability: 0.7,
  ewmaAlpha: 0.1,
});

const OPTION_NAMES: readonly (keyof HealthOptions)[] = [
  'failureThreshold',
  'cooldownMs',
  'minAvailability',
  'ewmaAlpha',
];

/**
 * Merges `overrides` over `DEFAULT_HEALTH_OPTIONS` and validates the result. Keys whose value is
 * `undefined` keep their default. Returns a new frozen object.
 * @throws RangeError naming the option and its allowed range when a value is out of range or not
 *   a number: failureThreshold an integer ≥ 1; cooldownMs a finite number > 0; minAvailability in
 *   [0, 1]; ewmaAlpha in (0, 1]. Also a RangeError for an unknown option name (a typo in a config).
 */
export function resolveHealthOptions(overrides: Partial<HealthOptions> = {}): Readonly<HealthOptions> {
  for (const key of Object.keys(overrides)) {
    if (!(OPTION_NAMES as readonly string[]).includes(key)) {
      throw new RangeError(
        `unknown health option '${key}'; allowed options are ${OPTION_NAMES.join(', ')}`,
      );
    }
  }
  const o: HealthOptions = {
    failureThreshold: overrides.failureThreshold ?? DEFAULT_HEALTH_OPTIONS.failureThreshold,
    cooldownMs: overrides.cooldownMs ?? DEFAULT_HEALTH_OPTIONS.cooldownMs,
    minAvailability: overrides.minAvailability ?? DEFAULT_HEALTH_OPTIONS.minAvailability,
    ewmaAlpha: overrides.ewmaAlpha ?? DEFAULT_HEALTH_OPTIONS.ewmaAlpha,
  };
  const ft = o.failureThreshold;
  if (typeof ft !== 'number' || !Number.isSafeInteger(ft) || ft < 1) {
    throw new RangeError(`failureThreshold must be an integer >= 1, got ${String(ft)}`);
  }
  const cd = o.cooldownMs;
  if (typeof cd !== 'number' || !Number.isFinite(cd) || cd <= 0) {
    throw new RangeError(`cooldownMs must be a finite number of milliseconds > 0, got ${String(cd)}`);
  }
  const ma = o.minAvailability;
  if (typeof ma !== 'number' || !(ma >= 0 && ma <= 1)) {
    throw new RangeError(`minAvailability must be in [0, 1], got ${String(ma)}`);
  }
  const al = o.ewmaAlpha;
  if (typeof al !== 'number' || !(al > 0 && al <= 1)) {
    throw new RangeError(`ewmaAlpha must be in (0, 1], got ${String(al)}`);
  }
  return Object.freeze(o);
}

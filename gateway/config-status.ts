/**
 * What `GET /status/config` reports: the outcome of the last configuration load or reload, and
 * the generation in force. Seed 003 has operators check that a SIGHUP reload succeeded before
 * they send traffic, and a rejected reload keeps the previous configuration, so both facts are
 * needed: the last attempt (`ok` / `rejected`, when, why) and what is actually serving.
 *
 * Times are wall-clock Unix milliseconds, supplied by the caller (the gateway passes
 * `Date.now()`), and are printed as ISO 8601 by `view`. Generations count from 1 at start; a
 * successful reload or an applied admin overlay change each put a new one in force.
 */

/** What put a generation in force. */
export type GenerationCause = 'start' | 'reload' | 'overlay';

/** The last configuration load or reload attempt. */
export interface ConfigAttempt {
  /** `start` for the configuration the gateway started with, else `reload`. */
  readonly kind: 'start' | 'reload';
  readonly outcome: 'ok' | 'rejected';
  /** Wall-clock Unix ms of the attempt. */
  readonly atMs: number;
  /** Why a rejected attempt was refused, one line per problem; empty when `ok`. */
  readonly problems: readonly string[];
}

/** The generation serving requests now. */
export interface GenerationInForce {
  /** 1 at start, then +1 per swap. */
  readonly number: number;
  readonly cause: GenerationCause;
  /** Wall-clock Unix ms it was put in force. */
  readonly appliedAtMs: number;
}

/** Body of `GET /status/config` (snake_case, ISO times). */
export interface ConfigStatusView {
  readonly last_load: { kind: 'start' | 'reload'; status: 'ok' | 'rejected'; at: string; problems: readonly string[] };
  readonly generation: { number: number; id: string; cause: GenerationCause; applied_at: string };
}

/** The record behind `/status/config`; one per gateway (worker). Keeps no timers. */
export class ConfigStatus {
  private attempt: ConfigAttempt;
  private inForce: GenerationInForce;

  /** Starts the record with the start configuration in force as generation 1 at `startedAtMs`. */
  constructor(startedAtMs: number) {
    this.attempt = { kind: 'start', outcome: 'ok', atMs: startedAtMs, problems: [] };
    this.inForce = { number: 1, cause: 'start', appliedAtMs: startedAtMs };
  }

  /** Records generation `number` put in force at `nowMs` by `cause`; a `reload` is also the last attempt, `ok`. */
  applied(number: number, cause: GenerationCause, nowMs: number): void {
    this.inForce = { number, cause, appliedAtMs: nowMs };
    if (cause === 'reload') this.attempt = { kind: 'reload', outcome: 'ok', atMs: nowMs, problems: [] };
  }

  /**
   * Records a rejected reload at `nowMs`; the generation in force is unchanged.
   * @param problems one line per reason (at least one; an empty list is recorded as `unknown reason`).
   */
  rejected(problems: readonly string[], nowMs: number): void {
    this.attempt = { kind: 'reload', outcome: 'rejected', atMs: nowMs, problems: problems.length > 0 ? [...problems] : ['unknown reason'] };
  }

  /** The last attempt. */
  lastAttempt(): ConfigAttempt {
    return this.attempt;
  }

  /** The generation in force. */
  generation(): GenerationInForce {
    return this.inForce;
  }

  /** The `/status/config` body. `id` is `gen-<number>`, stable for the life of the process. */
  view(): ConfigStatusView {
    const a = this.attempt;
    const g = this.inForce;
    return {
      last_load: { kind: a.kind, status: a.outcome, at: new Date(a.atMs).toISOString(), problems: a.problems },
      generation: { number: g.number, id: `gen-${g.number}`, cause: g.cause, applied_at: new Date(g.appliedAtMs).toISOString() },
    };
  }
}

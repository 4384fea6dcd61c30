/**
 * The seam between the routing core and its drivers (simulator, gateway).
 *
 * A request's life is a state machine the driver steps: `RoutingCore.start(request, nowMs, rng)`
 * returns a `RequestLife` and its first actions; the driver performs each action (an HTTP call,
 * a simulated engine event, a timer) and reports what happened with `life.step(event, nowMs)`,
 * which returns the next actions. The life ends with exactly one `respond_error` or one
 * successful completion, followed by one `done` carrying the routing metadata.
 *
 * Later features extend these unions (new events and actions); they never replace the seam.
 * Times are milliseconds on the driver's clock (virtual in the simulator, monotonic in the
 * gateway). The core never reads a clock.
 */
import type { Outcome } from './outcome.ts';
import type { RequestRole } from '../keys/caller-role.ts';

/** Input modality a request carries or a route accepts. */
export type Modality = 'text' | 'image' | 'audio';

/**
 * An inference API family a request is made on or a route serves, by the id its driver
 * registers (the gateway's `chat`, `completion`, `embedding`, …; `gateway/endpoints/families.ts`).
 * Open data: the core only compares these ids, so a new family needs no core change.
 */
export type EndpointFamilyName = string;

/** What the core needs to know about a request. Token counts are estimates, integers ≥ 0. */
export interface RouteRequest {
  readonly requestId: string;
  /** Public model id or alias the client asked for. */
  readonly model: string;
  readonly sessionId: string | null;
  /**
   * Caller id; keys session affinity and prompt-size hints. The gateway passes
   * `deriveAffinityKey(...)` (API key hash, grant, IP bucket); null = no identity (all such
   * callers share the anonymous pin and get no hints).
   */
  readonly callerId: string | null;
  /** Estimated prompt tokens (gateway: 4 bytes per token; simulator: the trace's count). */
  readonly inputTokens: number;
  /** Expected output tokens when known (trace, or the request's max_tokens), else null. */
  readonly outputTokensHint: number | null;
  readonly stream: boolean;
  /** Input modalities beyond text the request carries (text is implied). */
  readonly modalities: readonly Modality[];
  /**
   * The API family the request was made on; routes that do not serve it are not candidates.
   * Absent/null (the simulator's traces) = any route.
   */
  readonly endpoint?: EndpointFamilyName | null;
  /** Admin-only explicit pin (`X-Route-Pin`): provider name or endpoint id; null when absent. */
  readonly pin: string | null;
  /** Prefix block hashes of the prompt, when the driver knows them (simulator traces). */
  readonly prefixHashes: readonly number[] | null;
  /**
   * Multi-target routing tags from `x-switchyard-routing-tags` (split on commas, trimmed,
   * lower-cased; the gateway never forwards the header). Absent/null/empty = untagged.
   */
  readonly routingTags?: readonly string[] | null;
  /** The caller's resolved IP (IPv4 or IPv6 text), for `allowed_cidrs` and `hash_on: client_ip`. */
  readonly clientIp?: string | null;
  /**
   * Request headers a strategy may key on (`hash_on: header`), names lower-case. Drivers pass the
   * routing-relevant ones (`x-switchyard-routing-key` and any header a model's `hash_on` names).
   */
  readonly headers?: Readonly<Record<string, string>> | null;
  /** Request cookies by name, for `hash_on: cookie`. */
  readonly cookies?: Readonly<Record<string, string>> | null;
  /**
   * One route only (seed 000, "/v1/messages picks its adapter itself and has no fallback"): a
   * `router:` model picks its first admitted route as usual — the offload route only when no
   * other admits, never for a prompt over its max offload input — and then neither fails over
   * to another route, nor offloads on a wait, nor hedges. Multi-target aliases ignore it (they
   * fail over as chat completions do, seed 003). Absent/false = the usual fallback.
   */
  readonly singleRoute?: boolean;
  /**
   * The caller's tier for key pools (seed 000 "为某个层级预留上游 key"): a pooled key reserved
   * above it is invisible to the request. Absent/null = unrestricted: the gateway's own traffic
   * (health probes, warm-up, verifications) and drivers that model no callers see every key.
   */
  readonly callerRole?: RequestRole;
  /**
   * Multi-target aliases only (seed 003, "支持的端点"): every target must serve `endpoint`. A
   * target the walk reaches whose route does not serve it ends the request as a non-retryable
   * failure (`target_cannot_serve`) instead of being skipped: `status` (400 or 501) when the
   * target's route kind is among `providerKinds` (the kind can serve the family, the route lacks
   * the capability), `notProviderStatus` otherwise (its provider is not one for this family).
   * Absent/null: such targets are filtered out before the walk.
   */
  readonly targetMustServe?: TargetMustServe | null;
  /**
   * False: an attempt that failed after its upstream answered (an HTTP error status) is never
   * retried nor failed over (seed 003: a paid job may have been created, e.g. a video submit).
   * Absent/true: the model's usual retry and fallback rules.
   */
  readonly replayAnswered?: boolean;
  /**
   * The endpoint id that holds this request's conversation context (a Responses follow-up turn
   * whose previous response it served; seed 003: a conversation stays where its context is).
   * When it is among the request's candidates and admitted now, it is tried first, outside the
   * strategy's order (for an alias: before every tier; when it cannot serve, the alias's other
   * targets on the same provider key come next, `candidates/provider-key.ts`); otherwise routing
   * is as usual. An admin pin wins over it. Absent/null = no preference.
   */
  readonly preferEndpointId?: string | null;
  /**
   * What an attempt's latency sample (`least_latency`, `EndpointStats`) measures: `headers` —
   * the time to the upstream's response headers (the `first_output` event), whatever the
   * stream flag (seed 003: speech, and streamed transcriptions, whose first bytes are not a
   * model's first token); `first_token` (absent) — the first token of a stream, the whole
   * response otherwise. Either way the attempt counts as busy (`least_busy`) until it ends, so a
   * relayed stream is in flight until its last byte.
   */
  readonly latencyAt?: 'first_token' | 'headers';
}

/** What a target that cannot serve the request's family is answered with (`RouteRequest.targetMustServe`). */
export interface TargetMustServe {
  /** HTTP status when the target's kind serves the family but its route does not (400 or 501). */
  readonly status: number;
  /** HTTP status when the target's kind cannot serve the family at all (400 or 501). */
  readonly notProviderStatus: number;
  /** Route kinds that can serve the family (the gateway's adapters that list it). */
  readonly providerKinds: readonly string[];
}

/** The pooled key of one attempt: its display id and its fingerprint (`keys/route-keys.ts`), never the secret. */
export interface AttemptKey {
  readonly keyId: string;
  readonly fingerprint: string;
}

/** Token usage an upstream reported at the end of a response. */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
}

/** Events the driver reports. `attemptId` comes from the action that started the attempt. */
export type LifecycleEvent =
  | { kind: 'attempt_sent'; attemptId: number }
  /** First bytes of the upstream response (headers or a non-token SSE event). */
  | { kind: 'first_output'; attemptId: number }
  /**
   * First content or tool-call delta: the commit point of a stream. Role-only
   * or empty deltas and keep-alive comments are `first_output`, held back by the driver.
   */
  | { kind: 'first_token'; attemptId: number }
  /**
   * A later stream chunk arrived (optional). Drivers that report chunks get the stream-idle
   * timeout; the core arms it only after the first `chunk` of an attempt.
   */
  | { kind: 'chunk'; attemptId: number }
  /**
   * The outbound slot or engine-hold place of queued attempt `attemptId` was granted. Drivers get
   * these from `RoutingCore.drainWakeups()` after each step and deliver them to the life named.
   */
  | { kind: 'slot_acquired'; attemptId: number }
  | { kind: 'finished'; attemptId: number; usage: Usage }
  | { kind: 'failed'; attemptId: number; outcome: Outcome }
  /** A `wait_until` deadline fired. */
  | { kind: 'deadline'; deadlineId: number }
  /** The client disconnected. */
  | { kind: 'client_gone' };

/** Why the core cancels an attempt, when a driver or tap may care (see the `cancel` action). */
export type CancelReason = 'hedge_lost' | 'first_token_timeout';

/** Actions the core asks the driver to perform, in order. */
export type LifecycleAction =
  /**
   * Send the request to `endpointId` as attempt `attemptId`. Every bound on the attempt (first
   * token, headers, total, stream idle, overall) is a `wait_until` of its own: a driver arms no
   * timer besides those. `key`: on a route with a key pool, the key the attempt sends with
   * (the driver looks the secret up by its fingerprint and never logs it); absent otherwise.
   */
  | { kind: 'dispatch'; attemptId: number; endpointId: string; key?: AttemptKey }
  /** Report `{kind:'deadline', deadlineId}` at `atMs` unless the life is done first. */
  | { kind: 'wait_until'; deadlineId: number; atMs: number }
  /**
   * Attempt `attemptId` is queued in the gateway for an outbound slot (or an engine-hold place)
   * on `endpointId`; the core gives up at `giveUpAtMs` (it also emits a `wait_until` for that, so
   * a driver may ignore this action). Its `dispatch` follows when the slot is granted.
   */
  | { kind: 'acquire_slot'; attemptId: number; endpointId: string; giveUpAtMs: number }
  /**
   * Abort attempt `attemptId` upstream; the driver reports nothing more for it. `reason`
   * `hedge_lost`: the other attempt of a hedge race answered first (this one is still billed,
   * seed 000 hedging); `first_token_timeout`: the stream's first-token wait ran out (the life
   * records the attempt as a `first_token_timeout` failure); absent otherwise.
   */
  | { kind: 'cancel'; attemptId: number; reason?: CancelReason }
  /** From now on this attempt's output goes to the client; no fallback after this point. */
  | { kind: 'commit'; attemptId: number }
  /** End the request with an error response. */
  | {
      kind: 'respond_error';
      status: number;
      code: string;
      message: string;
      /** Seconds for a Retry-After header, or null. */
      retryAfterSec: number | null;
      /**
       * The attempt whose upstream error this response reports, when it reports one: a driver
       * may pass that attempt's own error message on (request-scoped 4xx, in-band errors).
       */
      attemptId?: number;
    }
  /** The life is over; `metadata` is for logs and results, never for the client. */
  | { kind: 'done'; metadata: RoutingMetadata };

/** One attempt as recorded in the metadata. */
export interface AttemptRecord {
  attemptId: number;
  endpointId: string;
  startMs: number;
  endMs: number;
  outcome: Outcome;
  /** Multi-target models: the direct model (target) this attempt went to. */
  target?: string;
  /**
   * Tokens attributed to this attempt: the serving attempt's usage as the upstream reported it.
   * Multi-target models record zero for failed attempts (they are not billed); per-model routers
   * leave it absent on attempts that did not finish.
   */
  usage?: Usage;
  /**
   * Set when no upstream call was made: the target was over its own rate limit and was skipped
   * (recorded as a failed 429 attempt with `startMs === endMs`). The driver never saw its id.
   */
  skipped?: 'rate_limited';
  /** The pooled key the attempt sent with (or was refused for: `key_pool_exhausted` has none), by id. */
  keyId?: string;
}

/** Where a request went and how (the seed's `_routing`). Built by the lifecycle. */
export interface RoutingMetadata {
  requestId: string;
  modelId: string;
  /** Strategy name that planned the request. */
  strategy: string;
  /** Endpoint that produced the response, or null when every attempt failed. */
  endpointId: string | null;
  provider: string | null;
  baseUrl: string | null;
  /** Why the first endpoint was chosen (`weighted`, `round_robin`, `pin`, …). */
  reason: string;
  /** True when a later attempt served the request after an earlier one failed. */
  fallback: boolean;
  /** Every attempt, in start order. */
  attempts: AttemptRecord[];
  /** `ok` or the error code sent to the client. */
  status: string;
  firstTokenAtMs: number | null;
  finishedAtMs: number | null;
  usage: Usage | null;
  /** `queue_wait` | `engine_wait` | `last_resort` when the offload route was tried; null otherwise. */
  offloadReason: string | null;
  /** Endpoint id of the offload route when it was tried (it may not be `endpointId`). */
  offloadEndpointId?: string | null;
  /**
   * Per-model routers whose planner plans hedges (RouteWise `hedge: probability`): the backup's
   * endpoint id when a hedge was sent (both attempts are in `attempts`, both are billed), else
   * null. Absent for other routers.
   */
  hedgeEndpointId?: string | null;
  /**
   * Multi-target models: the direct model that produced the response (for an
   * `x-switchyard-served-by` header), or null when none did. Absent for per-model routers.
   * `modelId` stays the alias, which the response body keeps as its model name.
   */
  servedBy?: string | null;
  /** Multi-target models: extra targets tried after the first (`max_fallbacks` counts these). */
  fallbacks?: number;
  /** Multi-target models: same-target repeats after a retryable failure. */
  retries?: number;
}

/** One request in flight, stepped by its driver. */
export interface RequestLife {
  readonly requestId: string;
  /** Feed one event; returns the actions it causes. Events for unknown or ended attempts are ignored. */
  step(event: LifecycleEvent, nowMs: number): LifecycleAction[];
  /** True once `done` has been emitted. */
  readonly isDone: boolean;
  /** Throws if a claim, lease or slot the life took is not accounted for. */
  invariants(): void;
}

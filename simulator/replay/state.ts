/**
 * The state one replay shares between its parts (replay.ts drives the loop; dispatch, actions,
 * client, faults, sampling, billing and rows act on this state): the run's inputs, the event
 * queue, the requests and attempts in flight, the endpoints and the rows produced so far.
 * One `ReplayState` per run; nothing in it outlives the run.
 */
import type { CallerRole } from '../../core/index.ts';
import type { KeyLimits } from '../providers/key-limits.ts';
import type { RoutingCore } from '../../core/routing-core.ts';
import type { RequestLife } from '../../core/lifecycle/seam.ts';
import type { Outcome } from '../../core/lifecycle/outcome.ts';
import type { TraceRow } from '../../traces/trace-row.ts';
import type { ApiServerTerm } from '../engine/api-server.ts';
import type { EngineEvent } from '../engine/engine-model.ts';
import type { EngineEndpoint } from '../engine-endpoint.ts';
import type { EventQueue } from '../event-queue.ts';
import type { Experiment } from '../experiment.ts';
import type { FaultPlan, AttemptFaultEffect } from '../faults/fault-plan.ts';
import type { HostedProvider } from '../providers/hosted-provider.ts';
import type { ClientPlan } from '../client-behaviour.ts';
import type { RunCosts } from '../costs.ts';
import type { SyncEvent } from '../../core/sync/sync-events.ts';
import type { GatewayPicker, GatewayReplica, ReplicaSync } from './gateways.ts';
import type { AttemptRow, EndpointSampleRow, EventRow, RequestRow } from '../results/result-rows.ts';

/** Everything a run produced, ready for the results store. */
export interface RunResult {
  requests: RequestRow[];
  attempts: AttemptRow[];
  samples: EndpointSampleRow[];
  events: EventRow[];
  /** Virtual time the last request ended, ms (the run's duration: throughput, GPU-hours). */
  durationMs: number;
  /** Events the loop processed. */
  eventsProcessed: number;
  prefixCache: { lookupTokens: number; hitTokens: number };
  /** Token, subscription and GPU costs of the run. */
  costs: RunCosts;
}

/**
 * FIFO lanes of the event queue: events scheduled at a fixed offset from now arrive in order.
 * The lives' own deadlines (`wait_until`: first token, headers, total, idle, overall, …).
 */
export const LANE_LIFE_DEADLINE = 0;
/** Lane of client timeouts. */
export const LANE_CLIENT_TIMEOUT = 1;
/** Number of lanes. */
export const LANES = 2;

/** Heap and lane events; arrivals and engine step ends have their own sources in the queue. */
export type SimEvent =
  | { k: 'retry'; req: number; tryNo: number }
  | { k: 'att_fail'; gid: number; outcome: Outcome }
  | { k: 'att_first'; gid: number }
  | { k: 'att_finish'; gid: number }
  | { k: 'fault_edge'; fault: number; start: boolean }
  | { k: 'deadline'; req: number; tryNo: number; deadlineId: number }
  | { k: 'client_timeout'; req: number; tryNo: number }
  | { k: 'abandon'; req: number }
  | { k: 'sample' }
  | { k: 'sync'; from: number; ev: SyncEvent }
  | { k: 'probe_claim'; gateway: number; endpointId: string; openedAtMs: number };

/** A trace request while it is being served (over all its client tries). */
export interface ReqState {
  life: RequestLife | null;
  /** The gateway replica serving the current try (index into `ReplayState.gateways`). */
  gateway: number;
  tryNo: number;
  /** life attempt id → global attempt id, for the current try. */
  gids: Map<number, number>;
  /** Attempt ids of earlier tries (rows number attempts across tries). */
  attemptBase: number;
  /** The client has seen output (first token when streaming, the answer otherwise). */
  visible: boolean;
  costUsd: number;
  cachedTokens: number;
  /** Why the client ended the current try, when it did. */
  endReason: 'client_timeout' | 'client_abandoned' | null;
  lastError: { status: number; retryAfterSec: number | null } | null;
  lastEndpointId: string | null;
  /** Attempts queued for a gateway slot (life attempt id → since when), current try. */
  queuedAt: Map<number, number>;
  /** Total time the request's attempts waited for gateway slots, ms; null if none ever did. */
  queueWaitMs: number | null;
}

/** One attempt (dispatch) as the loop tracks it; indexed by its global id. */
export interface Attempt {
  readonly req: number;
  /** The life's attempt id (within the try). */
  readonly attemptId: number;
  readonly tryNo: number;
  readonly ep: number;
  readonly startMs: number;
  live: boolean;
  fx: AttemptFaultEffect | null;
  /** Delivered first token minus produced first token, ms (faults). */
  shiftMs: number;
  firstDeliveredAtMs: number | null;
  cachedTokens: number;
  costUsd: number;
  /** Provider attempts: when the provider produced the first token, and the per-token time. */
  rawFirstAtMs: number;
  tpotMs: number;
  /** The provider limit that refused the attempt (`rpm`, `tpm`, `concurrency`, `quota`), if one did. */
  limit: string | null;
  /** Engine attempts: handed to the engine and not yet finished or rejected there. */
  inEngine: boolean;
}

/** An endpoint of the run: a local replica (`engine`) or a hosted provider (`provider`). */
export interface Endpoint {
  readonly name: string;
  readonly endpointId: string;
  readonly engine: EngineEndpoint | null;
  readonly provider: HostedProvider | null;
}

/** The state of one replay (module doc). Times are the loop's virtual ms. */
export interface ReplayState {
  readonly exp: Experiment;
  readonly rows: readonly TraceRow[];
  readonly runId: string;
  /** Replica 0's core (the only one unless `gateway_replicas.count` > 1). */
  readonly core: RoutingCore;
  /** The gateway replicas, each with its own core (gateways.ts). */
  readonly gateways: readonly GatewayReplica[];
  /** Picks the replica of each client try. */
  readonly picker: GatewayPicker;
  /** Shared state between the replicas; null when they share nothing. */
  readonly sync: ReplicaSync | null;
  readonly endpoints: readonly Endpoint[];
  /** Endpoint id → index in `endpoints`. */
  readonly epOf: ReadonlyMap<string, number>;
  readonly faults: FaultPlan | null;
  readonly client: Experiment['client'];
  /** Per-request client draws (stream, patience, retry jitter). */
  readonly plan: ClientPlan;
  /** Caller id of each request. */
  readonly callers: readonly string[];
  /** Tier of each request's caller for key pools; null entries (or an empty array) = unrestricted. */
  readonly callerRoles: readonly (CallerRole | null)[];
  /** Per-key limits of pooled provider keys. */
  readonly keyLimits: KeyLimits;
  /** Arrival of each request (trace time / rate_scale), ms. */
  readonly arrivalsMs: Float64Array;
  /** The replicas' API server delays what their engines produce (all 0 unless configured). */
  readonly apiServer: ApiServerTerm;
  readonly q: EventQueue<SimEvent>;
  /** Requests in flight by index (null before arrival and after the end). */
  readonly reqs: (ReqState | null)[];
  /** 1 once a request has ended. */
  readonly ended: Uint8Array;
  /** Attempts by global id. */
  readonly atts: Attempt[];
  /** Live attempt ids per endpoint. */
  readonly liveByEp: Set<number>[];
  readonly result: RunResult;
  /** Engine events of the call in progress, handled after it returns. */
  readonly emitted: EngineEvent[];
  readonly emit: (e: EngineEvent) => void;
  /** The request each live try belongs to, for the core's slot wake-ups. */
  readonly reqOfLife: Map<RequestLife, number>;
  nextGid: number;
  /** Requests ended so far. */
  done: number;
  /** The loop's clock. */
  now: number;
  /** When the last request ended: the run's duration. */
  lastEndMs: number;
}

/**
 * The routing metadata (the seed's `_routing`) every request life hands back in its `done`
 * action: the fields both model kinds fill the same way. Each life then adds its own (offload
 * and hedge for `router:` models; served-by, fallbacks and retries for aliases).
 */
import type { ResolvedModel } from '../model/resolved-model.ts';
import type { AttemptRecord, RouteRequest, RoutingMetadata, Usage } from '../lifecycle/seam.ts';

/** Where the answer (or the last attempt) went: a route's identity, or null when none. */
export interface ServedRoute {
  readonly endpointId: string;
  readonly provider: string;
  readonly baseUrl: string;
}

/** What a life knows when it ends, for `baseMetadata`. Times are simulated/driver ms. */
export interface LifeEnd {
  readonly requestId: string;
  readonly model: ResolvedModel | null;
  readonly request: RouteRequest;
  /** The route that served, else the last one tried; null when none was. */
  readonly route: ServedRoute | null;
  readonly reason: string;
  readonly fallback: boolean;
  readonly attempts: AttemptRecord[];
  /** `ok` or the error code sent to the client. */
  readonly status: string;
  readonly firstTokenAtMs: number | null;
  readonly finishedAtMs: number;
  readonly usage: Usage | null;
  readonly offloadReason: string | null;
}

/**
 * The metadata fields shared by every model kind, in the order the lives have always written
 * them (callers append their own fields after these). The model id falls back to the requested
 * name and the strategy to `none` when the model is unknown.
 */
export function baseMetadata(e: LifeEnd): RoutingMetadata {
  return {
    requestId: e.requestId,
    modelId: e.model?.id ?? e.request.model,
    strategy: e.model?.strategy ?? 'none',
    endpointId: e.route?.endpointId ?? null,
    provider: e.route?.provider ?? null,
    baseUrl: e.route?.baseUrl ?? null,
    reason: e.reason,
    fallback: e.fallback,
    attempts: e.attempts,
    status: e.status,
    firstTokenAtMs: e.firstTokenAtMs,
    finishedAtMs: e.finishedAtMs,
    usage: e.usage,
    offloadReason: e.offloadReason,
  };
}

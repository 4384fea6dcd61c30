/**
 * The routing metadata (the seed's `_routing`) every request life hands back in its `done`
 * action. Both model kinds fill the shared fields the same way, in the same order; each then
 * has its own trailing fields (offload for `router:` models, served-by, fallbacks and retries
 * for aliases). Each family's object is built as one literal with all its fields, so it is
 * allocated once with its final shape (a field added afterwards would need a second allocation).
 * Keep the shared fields of the two builders in step.
 */
import type { ResolvedModel } from '../model/resolved-model.ts';
import type { AttemptRecord, RouteRequest, RoutingMetadata, Usage } from '../lifecycle/seam.ts';

/** Where the answer (or the last attempt) went: a route's identity, or null when none. */
export interface ServedRoute {
  readonly endpointId: string;
  readonly provider: string;
  readonly baseUrl: string;
}

/** What the metadata reads of the ending life itself (a `Life` fits). Times are driver ms. */
export interface EndingLife {
  readonly requestId: string;
  readonly model: ResolvedModel | null;
  readonly request: RouteRequest;
  /** Why the first route or target was chosen. */
  readonly reason: string;
  readonly firstTokenAtMs: number | null;
  /** The ended attempts as the request's own array (the metadata outlives the life). */
  attemptList(): AttemptRecord[];
}

/**
 * A `router:` life's metadata. `route`: the route that served, else the last one tried, null
 * when none was; `status`: `ok` or the error code sent to the client; `usage`: what the serving
 * attempt reported. After the shared fields come `offloadReason` (why the offload route
 * was tried, or null) and `offloadEndpointId` (the offload route when it was, else null). The
 * model id falls back to the requested name and the strategy to `none` when the model is unknown.
 */
export function routerMetadata(life: EndingLife, route: ServedRoute | null, fallback: boolean, status: string, finishedAtMs: number, usage: Usage | null, offloadReason: string | null, offloadEndpointId: string | null): RoutingMetadata {
  return {
    requestId: life.requestId,
    modelId: life.model?.id ?? life.request.model,
    strategy: life.model?.strategy ?? 'none',
    endpointId: route?.endpointId ?? null,
    provider: route?.provider ?? null,
    baseUrl: route?.baseUrl ?? null,
    reason: life.reason,
    fallback,
    attempts: life.attemptList(),
    status,
    firstTokenAtMs: life.firstTokenAtMs,
    finishedAtMs,
    usage,
    offloadReason,
    offloadEndpointId,
  };
}

/**
 * A multi-target alias's metadata (arguments as for `routerMetadata`): the shared fields (`offloadReason` null: aliases never
 * offload), then `servedBy` (the target model that answered, or null), `fallbacks` (targets
 * dispatched beyond the first) and `retries` (same-target retries).
 */
export function aliasMetadata(life: EndingLife, route: ServedRoute | null, fallback: boolean, status: string, finishedAtMs: number, usage: Usage | null, servedBy: string | null, fallbacks: number, retries: number): RoutingMetadata {
  return {
    requestId: life.requestId,
    modelId: life.model?.id ?? life.request.model,
    strategy: life.model?.strategy ?? 'none',
    endpointId: route?.endpointId ?? null,
    provider: route?.provider ?? null,
    baseUrl: route?.baseUrl ?? null,
    reason: life.reason,
    fallback,
    attempts: life.attemptList(),
    status,
    firstTokenAtMs: life.firstTokenAtMs,
    finishedAtMs,
    usage,
    offloadReason: null,
    servedBy,
    fallbacks,
    retries,
  };
}

/**
 * What the exchanges of one gateway share and report (`exchange.ts`): the route targets by
 * endpoint id, the core, clock and log (`ExchangeContext`), what the HTTP layer read besides the
 * body (`ExchangeMeta`), and the finished request as the request log and metrics see it
 * (`FinishedExchange`).
 */
import type { SharedUnits } from '../state/shared-units.ts';
import type { Logger } from 'pino';
import type { RoutingCore, RoutingMetadata, Rng } from '../../core/index.ts';
import type { ClientRequest, Endpoint } from '../request-body.ts';
import type { UpstreamAdapter, UpstreamTarget } from '../upstream/adapter.ts';
import type { Tracing, ClientTraceHeaders } from '../tracing/tracing.ts';
import type { HeaderPairs } from './client-response.ts';

/** Where an endpoint id sends its attempts, and the adapter (route `kind`) that speaks to it. */
export interface RouteTarget extends UpstreamTarget {
  readonly adapter: UpstreamAdapter;
  /** The endpoint families the route serves (its `endpoints:`, else its kind's default). */
  readonly endpoints: ReadonlySet<Endpoint>;
  /** The base_url's origin (`http://host:port`), for the attempt spans' `server.address`. */
  readonly origin: string;
}

/** What every exchange of one gateway shares. */
export interface ExchangeContext {
  readonly core: RoutingCore;
  readonly routes: ReadonlyMap<string, RouteTarget>;
  /** The routing stream of a model (by the name the client used). */
  rngFor(model: string): Rng;
  /** Monotonic clock, ms. */
  now(): number;
  readonly log: Logger;
  readonly maxErrorBodyBytes: number;
  /** Traces of requests and attempts; null when `tracing.enabled` is false. */
  readonly tracing: Tracing | null;
  /** Called once per exchange when it is over (request log and metrics); must not throw. */
  onFinished?(f: FinishedExchange): void;
  /** The secret of a pooled key by fingerprint (`upstream/key-secrets.ts`); absent ⇒ no pools. */
  keySecret?(fingerprint: string): string | undefined;
  /** The limits shared with other replicas (`state/shared-units.ts`); absent or null ⇒ every limit is local. */
  sharedUnits?(): SharedUnits | null;
}

/** A finished exchange, as the request log and the metrics see it. */
export interface FinishedExchange {
  readonly req: ClientRequest;
  readonly requestId: string;
  readonly sessionId: string | null;
  readonly callerId: string;
  /** Arrival, on `ExchangeContext.now`'s clock (ms). */
  readonly startedAtMs: number;
  /** End, same clock. */
  readonly endedAtMs: number;
  /** The core's metadata; null when the gateway failed before the core finished (a bug). */
  readonly metadata: RoutingMetadata | null;
  /** HTTP status sent; 499 when the client went away before the response ended. */
  readonly httpStatus: number;
  /** The drain's grace ran out and the gateway cut the response (`Exchange.cutForDrain`). */
  readonly cut: boolean;
  /**
   * The gateway's own error code when it refused the parsed request before the core saw it
   * (a key not allowed the model, an output beyond every route's window); `metadata` is null then.
   */
  readonly refusedCode?: string;
}

/** What the HTTP layer read from the request besides its body. */
export interface ExchangeMeta {
  readonly requestId: string;
  /** Headers every response of this request carries (`x-request-id`). */
  readonly baseHeaders: HeaderPairs;
  /** Admin pin (`X-Route-Pin`), null for others. */
  readonly pin: string | null;
  readonly sessionId: string | null;
  readonly routingTags: readonly string[] | null;
  readonly clientIp: string | null;
  /** Routing-relevant request headers (`hash_on`), lower-case names. */
  readonly headers: Readonly<Record<string, string>> | null;
  readonly cookies: Readonly<Record<string, string>> | null;
  /** The client's `traceparent` / `tracestate`, read only when tracing is on; else null. */
  readonly traceHeaders: ClientTraceHeaders | null;
  /** The client headers the endpoint family forwards to adapters (`EndpointFamily.forwardHeaders`), or null. */
  readonly forwardedHeaders: Readonly<Record<string, string>> | null;
  /**
   * The caller's session-affinity key, `deriveAffinityKey(...)` of the presented API key and
   * the client address (`key:…`, `ip:…`, or `anonymous` when neither is known).
   */
  readonly affinityKey: string;
  /**
   * The endpoint id holding the request's conversation context (a `/v1/responses` follow-up
   * turn), tried first (`RouteRequest.preferEndpointId`); null / absent otherwise.
   */
  readonly preferEndpointId?: string | null;
  /**
   * Keeps the request's final response, served by `endpointId`, once the request succeeded (a
   * stored `/v1/responses` request); null / absent when nothing is kept. Its promise never rejects.
   */
  readonly keepResponse?: ((response: Record<string, unknown>, endpointId: string) => Promise<void>) | null;
  /** Called once when the exchange is over (releases the in-flight slot). */
  released(): void;
}

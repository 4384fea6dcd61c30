/**
 * The routing core's `RouteRequest` for a checked client request: the body's model, stream flag,
 * prompt-size estimate, modalities and endpoint family, with what the HTTP layer read besides
 * (request id, session, admin pin, routing tags, client address, `hash_on` headers and cookies,
 * the affinity key as the caller id) and the caller's tier for key pools (null: the gateway's own
 * traffic, unrestricted). Prefix block hashes are computed only for a model whose
 * planner reads them (the cache-aware strategies): the same chained 2,048-byte blocks as the
 * request log's `hash_ids`, so a replay of the log sees the hashes the gateway routed on.
 */
import type { RequestRole, RouteRequest, TargetMustServe } from '../../core/index.ts';
import type { EndpointFamily } from '../endpoints/endpoint-family.ts';
import { ADAPTERS } from '../upstream/adapters.ts';
import type { ClientRequest } from '../request-body.ts';
import type { ExchangeMeta } from './exchange-context.ts';
import { prefixBlockHashes, serializedPrompt } from '../request-log/prefix-hashes.ts';

/**
 * The core's request for `req` as the HTTP layer saw it (`meta`). `hashPrefix`: compute the
 * prompt's prefix block hashes (true when the model's planner `readsPrefixHashes`); else null.
 */
export function routeRequestOf(req: ClientRequest, meta: ExchangeMeta, hashPrefix = false, callerRole: RequestRole = null): RouteRequest {
  return {
    requestId: meta.requestId,
    model: req.model,
    sessionId: meta.sessionId,
    callerId: meta.affinityKey,
    inputTokens: req.inputTokens,
    outputTokensHint: req.outputTokensHint,
    stream: req.stream,
    modalities: req.modalities,
    endpoint: req.endpoint,
    pin: meta.pin,
    prefixHashes: hashPrefix ? prefixBlockHashes(serializedPrompt(req.body)) : null,
    routingTags: meta.routingTags,
    clientIp: meta.clientIp,
    headers: meta.headers,
    cookies: meta.cookies,
    singleRoute: req.family.singleRoute === true,
    callerRole,
    targetMustServe: targetRule(req.family),
    replayAnswered: req.family.noReplayAfterAnswer !== true && req.videoFetch === undefined,
    preferEndpointId: meta.preferEndpointId ?? null,
    latencyAt: latencyAtOf(req),
  };
}

/** What `least_latency` measures for `req`: its family's `latencyAtHeaders` against its stream flag. */
function latencyAtOf(req: ClientRequest): 'first_token' | 'headers' {
  const at = req.family.latencyAtHeaders;
  return at === 'always' || (at === 'stream' && req.stream) ? 'headers' : 'first_token';
}

/** The core's rule for a family every target must serve, with the route kinds whose adapters serve it; null when none. */
function targetRule(family: EndpointFamily): TargetMustServe | null {
  const r = family.targetMustServe;
  if (!r) return null;
  const providerKinds: string[] = [];
  for (const a of ADAPTERS.values()) if (a.endpoints.includes(family.endpoint)) providerKinds.push(a.kind);
  return { status: r.status, notProviderStatus: r.notProviderStatus, providerKinds };
}

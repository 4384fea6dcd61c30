/**
 * The routing core's `RouteRequest` for a checked client request: the body's model, stream flag,
 * prompt-size estimate, modalities and endpoint family, with what the HTTP layer read besides
 * (request id, session, admin pin, routing tags, client address, `hash_on` headers and cookies,
 * the affinity key as the caller id).
 */
import type { RouteRequest } from '../../core/index.ts';
import type { ClientRequest } from '../request-body.ts';
import type { ExchangeMeta } from './exchange-context.ts';

/** The core's request for `req` as the HTTP layer saw it (`meta`). */
export function routeRequestOf(req: ClientRequest, meta: ExchangeMeta): RouteRequest {
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
    prefixHashes: null,
    routingTags: meta.routingTags,
    clientIp: meta.clientIp,
    headers: meta.headers,
    cookies: meta.cookies,
  };
}

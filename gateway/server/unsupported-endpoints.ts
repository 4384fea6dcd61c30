/**
 * The endpoints the gateway knows of and does not serve, each answered 501
 * `endpoint_not_supported` naming the endpoint (any method, no key needed: the answer says
 * nothing of the configuration). Seed 003 ("支持的端点"): `/v1/realtime` and the Files, Batches
 * and Fine-tuning APIs keep a session or a provider-issued id on one provider, which a gateway
 * that picks among providers per request cannot promise; `/v1/systemone` and `/v1/decisions`
 * are another product's endpoints. Call the provider directly for these.
 */
import type { HttpRequest, TemplatedApp } from '@trufflesuite/uws-js-unofficial';
import { errorJson } from '../errors.ts';
import { statusLine } from './client-response.ts';

/** The unsupported endpoints: uWS route patterns, and the name the answer gives. */
export const UNSUPPORTED_ENDPOINTS: ReadonlyArray<{ readonly patterns: readonly string[]; readonly name: string; readonly why: string }> = [
  { patterns: ['/v1/realtime', '/v1/realtime/*'], name: '/v1/realtime', why: 'a realtime session must stay on one provider' },
  { patterns: ['/v1/files', '/v1/files/*'], name: '/v1/files', why: 'file ids are issued by one provider' },
  { patterns: ['/v1/batches', '/v1/batches/*'], name: '/v1/batches', why: 'batch ids are issued by one provider' },
  { patterns: ['/v1/fine_tuning', '/v1/fine_tuning/*'], name: '/v1/fine_tuning', why: 'fine-tuning jobs are issued by one provider' },
  { patterns: ['/v1/systemone', '/v1/systemone/*'], name: '/v1/systemone', why: 'this gateway has no SystemOne endpoint' },
  { patterns: ['/v1/decisions', '/v1/decisions/*'], name: '/v1/decisions', why: 'this gateway has no decisions endpoint' },
];

/** The 501 body for `method` `path` of the unsupported endpoint `name`, saying `why`. */
export function unsupportedBody(method: string, path: string, name: string, why: string): string {
  return errorJson('endpoint_not_supported', `The gateway does not serve ${name} (${method} ${path}): ${why}. Call the provider directly.`);
}

/**
 * Mounts a 501 answer on every pattern of `UNSUPPORTED_ENDPOINTS`, with the request's id
 * (`requestId` reads or makes it).
 */
export function mountUnsupported(app: TemplatedApp, requestId: (req: HttpRequest) => string): void {
  for (const { patterns, name, why } of UNSUPPORTED_ENDPOINTS) {
    for (const pattern of patterns) {
      app.any(pattern, (res, req) => {
        const id = requestId(req);
        const body = unsupportedBody(req.getMethod().toUpperCase(), req.getUrl(), name, why);
        res.cork(() => {
          res.writeStatus(statusLine(501)).writeHeader('x-request-id', id).writeHeader('content-type', 'application/json').end(body);
        });
      });
    }
  }
}

// Endpoint families and upstream adapters are open registries: this file adds a toy family
// (`toy_rerank` on POST /v1/toy/rerank) and a toy adapter (`toy_echo`, answering from memory)
// from the test itself, with no other source file changed, and serves requests through a real
// gateway on loopback: the configuration check accepts the new kind and family, the routing core
// defaults a `toy_echo` route to the adapter's families, the HTTP layer mounts the new path, the
// family's own check answers 400, and the old families are refused on a toy-only model before
// dispatch. Vitest isolates modules per file, so the registrations stay in this file.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig, ConfigError } from '../../gateway/config/load.ts';
import type { EndpointFamily } from '../../gateway/endpoints/endpoint-family.ts';
import { registerEndpointFamily } from '../../gateway/endpoints/families.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import type { AttemptEnd, UpstreamAdapter } from '../../gateway/upstream/adapter.ts';
import { registerAdapter, routeKinds } from '../../gateway/upstream/adapters.ts';

const KEY = 'sk-toy';

const toyRerank: EndpointFamily = {
  endpoint: 'toy_rerank',
  path: '/v1/toy/rerank',
  streams: false,
  check: (body) => (typeof body.query === 'string' ? null : { code: 'invalid_request', message: "Invalid type for 'query': expected a string.", param: 'query' }),
  prompt: (body) => ({ inputTokens: Math.ceil(String(body.query).length / 4), modalities: [] }),
};

/** Answers every attempt on the next turn with the query echoed; no network. */
const toyEcho: UpstreamAdapter = {
  kind: 'toy_echo',
  endpoints: ['toy_rerank'],
  startAttempt(target, req, _ctx, _hooks, end) {
    let ended = false;
    const finish = (e: AttemptEnd) => {
      if (ended) return;
      ended = true;
      end(e);
    };
    const t = setImmediate(() =>
      finish({ kind: 'body', text: JSON.stringify({ object: 'toy.rerank', model: req.model, upstream_model: target.upstreamModel, query: req.body.query }), usage: { inputTokens: 3, outputTokens: 0, cachedTokens: 0 } }),
    );
    return {
      abort() {
        clearImmediate(t);
        finish({ kind: 'aborted' });
      },
    };
  },
};

registerEndpointFamily(toyRerank);
registerAdapter(toyEcho);

const config = (route: Record<string, unknown>) =>
  buildGatewayConfig({
    models: { models: [{ id: 'toy', route: [{ kind: 'toy_echo', base_url: 'http://127.0.0.1:9/v1', provider_model_id: 'toy-upstream', ...route }] }] },
    gateway: { auth: { mode: 'keys', keys: [{ id: 'toy', sha256: hashKey(KEY) }] } },
  });

let gw: RunningGateway;
beforeAll(async () => {
  gw = await startGateway({ config: config({}), host: '127.0.0.1', port: 0, seed: 1, logger: pino({ level: 'silent' }) });
});
afterAll(async () => {
  await gw.close();
});

const post = (path: string, body: unknown) =>
  fetch(`${gw.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('a family and an adapter registered from outside the gateway', () => {
  it('the new kind is known and a request on the new path is served by the new adapter', async () => {
    expect(routeKinds()).toEqual(['openai_compat', 'anthropic', 'toy_echo']);
    const r = await post('/v1/toy/rerank', { model: 'toy', query: 'which doc?' });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ object: 'toy.rerank', model: 'toy', upstream_model: 'toy-upstream', query: 'which doc?' });
  });

  it("the family's own check answers 400 with param, before routing", async () => {
    const r = await post('/v1/toy/rerank', { model: 'toy', query: 7 });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: { param: string } }).error.param).toBe('query');
  });

  it("a family the route's adapter does not serve is refused before dispatch (400 endpoint_not_served)", async () => {
    const r = await post('/v1/chat/completions', { model: 'toy', messages: [{ role: 'user', content: 'hi' }] });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('endpoint_not_served');
  });

  it('the configuration check knows the new family and what each kind serves', () => {
    expect(() => config({ endpoints: ['toy_rerank'] })).not.toThrow();
    expect(() => config({ endpoints: ['chat'] })).toThrow(ConfigError);
    expect(() => config({ endpoints: ['chat'] })).toThrow(/a toy_echo route cannot serve chat/);
    expect(() => config({ endpoints: ['images'] })).toThrow(/no endpoint family 'images'/);
  });

  it('clashing registrations are refused, naming the clash', () => {
    expect(() => registerEndpointFamily(toyRerank)).toThrow(/'toy_rerank' is registered twice/);
    expect(() => registerEndpointFamily({ ...toyRerank, endpoint: 'toy_other' })).toThrow(/path \/v1\/toy\/rerank, which 'toy_rerank' already serves/);
    expect(() => registerAdapter(toyEcho)).toThrow(/'toy_echo' has an adapter already/);
    expect(() => registerAdapter({ ...toyEcho, kind: 'toy_two', endpoints: ['audio'] })).toThrow(/'audio', which is not registered/);
  });
});

// Input checks of the runtime-routing admin API on a real gateway with a PGlite store (and the
// run's PostgreSQL server when there is one): ids and labels with NUL, control, zero-width or
// whitespace characters or `%` are 400s naming the field (never the store's error); route fields
// take exactly what models.yaml takes (endpoint families, weight and wait bounds); a wrong type
// is named as such; PATCH null unsets an optional field; a model id with a leading `/` is
// addressable; base-URL passwords are masked in every view and in the audit; status lines carry
// their standard reason phrase.
import { request } from 'node:http';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { KEYS, stackConfig } from '../gateway/harness.ts';
import { adminCall, freshDatabase, freshPgliteDir, PG_SKIP, PG_URL } from './harness.ts';

const enc = encodeURIComponent;
const MODELS = '/admin/routing/provider-route-models';
const CANDIDATES = '/admin/routing/provider-route-candidates';

/** The raw status line of a call (what uWS wrote), e.g. `HTTP/1.1 201 Created`. */
function statusLine(base: string, method: string, path: string, body: unknown): Promise<string> {
  const u = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, method, headers: { authorization: `Bearer ${KEYS.admin}`, 'content-type': 'application/json' } }, (res) => {
      res.resume();
      resolve(`HTTP/${res.httpVersion} ${res.statusCode} ${res.statusMessage}`);
    });
    req.once('error', reject);
    req.end(JSON.stringify(body));
  });
}

function scenario(kind: string, makeStore: () => Promise<Record<string, unknown>>): void {
  let emus: RunningEmulator[] = [];
  let gw: RunningGateway | null = null;
  const call = (method: string, path: string, body?: unknown) => adminCall(gw!.url, method, path, { body });
  const bad = async (method: string, path: string, body: unknown, status: number, param: string | null, pattern: RegExp) => {
    const r = await call(method, path, body);
    expect(r.status, `${method} ${path} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`).toBe(status);
    expect(r.body.error.param).toBe(param);
    expect(r.body.error.message).toMatch(pattern);
  };
  const port = (i: number) => new URL(emus[i]!.baseUrl).port;

  beforeAll(async () => {
    emus = await Promise.all([0, 1, 2].map(() => startEmulator({ faults: { latency_scale: 0.02 } })));
    const config = stackConfig([{}, {}], emus, { store: await makeStore(), store_poll_ms: 200 });
    // A YAML route whose base URL carries a password.
    config.models.models[1]!.route[0]!.base_url = `http://yamluser:YAMLSECRET@127.0.0.1:${port(0)}/v1`;
    gw = await startGateway({ config, host: '127.0.0.1', port: 0, adminPort: 0, seed: 3, logger: pino({ level: 'silent' }) });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all(emus.map((e) => e.close()));
  });

  it(`${kind}: NUL, control, zero-width and whitespace characters and % in ids and labels are 400s naming the field`, async () => {
    const route = { base_url: emus[2]!.baseUrl };
    await bad('POST', MODELS, { model_id: 'a\u0000b', route }, 400, 'model_id', /NUL character/);
    await bad('POST', MODELS, { model_id: 'ok-1', route: { ...route, route_id: 'r\u0000' } }, 400, 'route.route_id', /NUL character/);
    await bad('POST', MODELS, { model_id: 'ok-1', route: { ...route, provider: 'p\u0000' } }, 400, 'route.provider', /NUL character/);
    await bad('POST', MODELS, { model_id: 'a\u0007b', route }, 400, 'model_id', /control or zero-width characters \(found U\+0007 at position 1\)/);
    await bad('POST', MODELS, { model_id: 'ok-1', route: { ...route, route_id: 'r\u200b' } }, 400, 'route.route_id', /found U\+200B/);
    await bad('POST', MODELS, { model_id: 'ok-1', route: { ...route, route_id: 'r 1' } }, 400, 'route.route_id', /whitespace/);
    await bad('POST', MODELS, { model_id: 'ok\u00a0x', route }, 400, 'model_id', /U\+00A0/);
    await bad('POST', MODELS, { model_id: 'ok-1', route: { ...route, provider: 'acme\u200d' } }, 400, 'route.provider', /control or zero-width/);
    await bad('POST', MODELS, { model_id: 'ok%2F1', route }, 400, 'model_id', /must not contain %/);
    await bad('POST', MODELS, { model_id: 'ok-1', route: { ...route, route_id: 'r%41' } }, 400, 'route.route_id', /must not contain %/);
    await bad('POST', `${CANDIDATES}/demo`, { route_id: 'a/b', ...route }, 400, 'route_id', /must not contain \//);
    expect((await call('GET', '/admin/routing/provider-routes')).body.models.map((m: { model_id: string }) => m.model_id)).toEqual(['demo', 'other']);
  });

  it(`${kind}: route fields are checked as models.yaml checks them: endpoint families, weight and wait bounds, types named`, async () => {
    const route = { base_url: emus[2]!.baseUrl };
    await bad('POST', MODELS, { model_id: 'fam', route: { ...route, endpoints: ['bogus'] } }, 400, 'route.endpoints', /no endpoint family 'bogus'; list only endpoint families it serves: .*chat/);
    await bad('POST', `${CANDIDATES}/demo`, { ...route, endpoints: ['bogus'] }, 400, 'endpoints', /no endpoint family 'bogus'/);
    await bad('POST', `${CANDIDATES}/demo`, { ...route, kind: 'nope' }, 400, 'kind', /route kind 'nope' has no gateway adapter/);
    await bad('POST', MODELS, { model_id: 'w', route: { ...route, weight: 1e308 } }, 400, 'route.weight', /at most 1000000/);
    await bad('POST', `${CANDIDATES}/demo`, { ...route, weight: 1e7 }, 400, 'weight', /at most 1000000/);
    await bad('PUT', `/admin/routing/weights/demo/${enc((await call('GET', '/admin/routing/provider-routes/demo')).body.model.routes[0].endpoint_id)}`, { weight: 1e308 }, 400, 'weight', /at most 1000000/);
    await bad('PUT', '/admin/routing/offload-routes/demo', { route_id: 'x', wait_sec: 1e308 }, 400, 'wait_sec', /at most 86400 seconds/);
    await bad('POST', MODELS, { model_id: 'w', route: { ...route, weight: '2' } }, 400, 'route.weight', /'route\.weight' is invalid: .*expected number, got the string "2"/);
    await bad('POST', MODELS, { model_id: 'w', route: {} }, 400, 'route.base_url', /'route\.base_url' is required/);
    // The largest weight is accepted.
    const ok = await call('POST', MODELS, { model_id: 'heavy', route: { ...route, weight: 1e6 } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
  });

  it(`${kind}: PATCH null unsets an optional field; required ones and an empty body are refused`, async () => {
    const c = await call('POST', `${CANDIDATES}/heavy`, { route_id: 'second', base_url: emus[1]!.baseUrl, context_length: 4096, provider: 'acme' });
    expect(c.status, JSON.stringify(c.body)).toBe(201);
    const p = await call('PATCH', `${CANDIDATES}/heavy/second`, { context_length: null, provider: null });
    expect(p.status, JSON.stringify(p.body)).toBe(200);
    const view = (await call('GET', '/admin/routing/provider-routes/heavy')).body.model.routes.find((r: { route_id: string }) => r.route_id === 'second');
    expect(view.context_length).toBeNull();
    expect(p.body.records[0].value).not.toHaveProperty('context_length');
    await bad('PATCH', `${CANDIDATES}/heavy/second`, { base_url: null }, 400, 'base_url', /invalid/);
    await bad('PATCH', `${CANDIDATES}/heavy/second`, { weight: null }, 400, 'weight', /invalid/);
    await bad('PATCH', `${CANDIDATES}/heavy/second`, {}, 400, null, /the body has no fields to change; send at least one of .*base_url/);
    await bad('PATCH', `${CANDIDATES}/heavy/second`, { version: 1 }, 400, null, /no fields to change/);
  });

  it(`${kind}: a model id with a leading / is reached raw or encoded`, async () => {
    const c = await call('POST', MODELS, { model_id: '/lead', route: { route_id: 'a', base_url: emus[2]!.baseUrl } });
    expect(c.status, JSON.stringify(c.body)).toBe(201);
    expect((await call('GET', '/admin/routing/provider-routes//lead')).body.model?.model_id).toBe('/lead');
    expect((await call('GET', `/admin/routing/provider-routes/${enc('/lead')}`)).body.model?.model_id).toBe('/lead');
    const p = await call('PATCH', `${CANDIDATES}//lead/a`, { weight: 2 });
    expect(p.status, JSON.stringify(p.body)).toBe(200);
    // A doubled slash before an ordinary id still finds it.
    expect((await call('GET', '/admin/routing/provider-routes//demo')).body.model?.model_id).toBe('demo');
  });

  it(`${kind}: a base URL's password is masked in the 201 body, the route views and the audit`, async () => {
    const secretUrl = `http://user:PWSECRET@127.0.0.1:${port(2)}/v1`;
    const c = await call('POST', MODELS, { model_id: 'cred', route: { route_id: 'c', base_url: secretUrl, api_key: 'KEYSECRET' } });
    expect(c.status, JSON.stringify(c.body)).toBe(201);
    const shown = [JSON.stringify(c.body), JSON.stringify((await call('GET', '/admin/routing/provider-routes')).body), JSON.stringify((await call('GET', '/admin/routing')).body), JSON.stringify((await call('GET', '/admin/audit?limit=500')).body)];
    for (const text of shown) {
      expect(text).not.toContain('PWSECRET');
      expect(text).not.toContain('YAMLSECRET');
      expect(text).not.toContain('KEYSECRET');
    }
    expect(shown[0]).toContain(`http://user:***@127.0.0.1:${port(2)}/v1`);
    expect(shown[1]).toContain(`http://yamluser:***@127.0.0.1:${port(0)}/v1`);
  });

  it(`${kind}: status lines carry the standard reason phrase`, async () => {
    expect(await statusLine(gw!.url, 'POST', MODELS, { model_id: 'phrase', route: { base_url: `http://127.0.0.1:${port(1)}/v1` } })).toBe('HTTP/1.1 201 Created');
    expect(await statusLine(gw!.url, 'POST', MODELS, { model_id: 'phrase', route: { base_url: `http://127.0.0.1:${port(1)}/v1` } })).toBe('HTTP/1.1 409 Conflict');
    expect(await statusLine(gw!.url, 'POST', MODELS, { model_id: 'x' })).toBe('HTTP/1.1 400 Bad Request');
  });
}

describe('runtime routing admin input checks, PGlite store', () => {
  scenario('pglite', async () => ({ kind: 'pglite', dir: freshPgliteDir() }));
});

describe.skipIf(!PG_URL)(`runtime routing admin input checks, PostgreSQL store${PG_SKIP ? ` (skipped: ${PG_SKIP})` : ''}`, () => {
  scenario('postgres', async () => ({ kind: 'postgres', url: await freshDatabase() }));
});

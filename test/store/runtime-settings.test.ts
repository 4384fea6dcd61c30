// The runtime setting `auto_mode_enabled` through the admin API, against a real gateway on
// 127.0.0.1 without a store, with an embedded PGlite store and with the run's PostgreSQL server,
// seen with the official `openai` client: turning it on makes the auto models appear in
// /v1/models and serve at once, DELETE puts the gateway.yaml value back (404 again), the version
// rule and every validation error, the value kept across a restart, and a change through one
// replica reaching the other through the store's change feed.
import OpenAI from 'openai';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig, type GatewayConfig } from '../../gateway/config/load.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { KEYS } from '../gateway/harness.ts';
import { adminCall, freshDatabase, freshPgliteDir, PG_SKIP, PG_URL } from './harness.ts';
import { until } from './harness-rw.ts';

const PATH = '/admin/settings/auto_mode_enabled';

/** The listening connections of the change feed on database `url`. */
async function listeners(url: string): Promise<unknown[]> {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(`SELECT pid FROM pg_stat_activity WHERE application_name = 'switchyard-listener' AND datname = $1`, [new URL(url).pathname.slice(1)])).rows;
  } finally {
    await c.end();
  }
}

function autoConfig(emu: RunningEmulator, gateway: Record<string, unknown>): GatewayConfig {
  return buildGatewayConfig({
    models: {
      models: [{ id: 'small', route: [{ base_url: emu.baseUrl, provider_model_id: 'secret-upstream' }] }],
      auto: { default_profile: 'balance', profiles: { balance: { candidates: [{ model: 'small' }] } } },
    },
    gateway: {
      routing_settings: { affinity_enabled: false, prefill_aware_enabled: false },
      auto_mode_enabled: false,
      ...gateway,
      auth: { mode: 'keys', keys: [{ id: 'user', sha256: hashKey(KEYS.user), allowed_models: ['small'] }, { id: 'admin', sha256: hashKey(KEYS.admin), admin: true }] },
    },
  });
}

const client = (gw: RunningGateway) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEYS.user, maxRetries: 0, timeout: 10_000 });
const listed = async (gw: RunningGateway): Promise<string[]> => (await client(gw).models.list()).data.map((m) => m.id).sort();
/** The status the client gets for a request naming `auto-balance` (200 when served). */
async function autoStatus(gw: RunningGateway): Promise<number> {
  try {
    const r = await client(gw).chat.completions.create({ model: 'auto-balance', messages: [{ role: 'user', content: 'hi' }] });
    expect(r.model).toBe('auto-balance');
    return 200;
  } catch (e) {
    if (e instanceof OpenAI.APIError) return e.status ?? -1;
    throw e;
  }
}

function scenario(kind: 'memory' | 'pglite' | 'postgres', makeStore: () => Promise<Record<string, unknown> | undefined>): void {
  let emu: RunningEmulator;
  let store: Record<string, unknown> | undefined;
  let gw: RunningGateway;
  const start = () => startGateway({ config: autoConfig(emu, { ...(store && { store }), store_poll_ms: 600_000 }), host: '127.0.0.1', port: 0, seed: 3, logger: pino({ level: 'silent' }) });
  const call = (method: string, path: string, opts: Parameters<typeof adminCall>[3] = {}) => adminCall(gw.url, method, path, opts);

  beforeAll(async () => {
    emu = await startEmulator({ mode: 'echo', echoText: 'hello' });
    store = await makeStore();
    gw = await start();
  });
  afterAll(async () => {
    await gw?.close();
    await emu?.close();
  });

  it(`${kind}: off from gateway.yaml: absent from /v1/models and 404; GET says where the value comes from`, async () => {
    expect(await listed(gw)).toEqual(['small']);
    expect(await autoStatus(gw)).toBe(404);
    const r = await call('GET', PATH);
    expect([r.status, r.etag]).toEqual([200, '"0"']);
    expect(r.body).toMatchObject({ key: 'auto_mode_enabled', value: false, source: 'gateway.yaml', gateway_yaml_value: false, override: null, version: 0 });
    const all = await call('GET', '/admin/settings');
    expect(all.body.settings.auto_mode_enabled).toMatchObject({ value: false, source: 'gateway.yaml' });
  });

  it(`${kind}: PUT true applies at once: listed and served`, async () => {
    const before = (await call('GET', '/admin/routing')).body.generation;
    const r = await call('PUT', PATH, { body: { value: true } });
    expect([r.status, r.etag]).toEqual([200, '"1"']);
    expect(r.body).toMatchObject({ key: 'auto_mode_enabled', value: true, source: 'runtime', generation: before + 1, record: { key: 'auto_mode_enabled', value: true, version: 1, updatedBy: 'admin' } });
    expect(await listed(gw)).toEqual(['auto', 'auto-balance', 'small']);
    expect(await autoStatus(gw)).toBe(200);
    const audit = await call('GET', '/admin/audit?limit=5');
    expect(audit.body.entries.find((e: { method: string; path: string }) => e.method === 'PUT' && e.path === PATH)).toMatchObject({ status: 200, before: null, after: { value: true, version: 1 } });
  });

  it(`${kind}: bad writes are refused with the field named, and a stale version is refused`, async () => {
    const bad = await call('PUT', PATH, { body: { value: 'yes' } });
    expect([bad.status, bad.body.error.param]).toEqual([400, 'value']);
    expect(bad.body.error.message).toContain('true or false');
    const missing = await call('PUT', PATH, { body: {} });
    expect([missing.status, missing.body.error.param]).toEqual([400, 'value']);
    const extra = await call('PUT', PATH, { body: { value: true, colour: 'red' } });
    expect(extra.status).toBe(400);
    const unknown = await call('PUT', '/admin/settings/auto_mode_enable', { body: { value: true } });
    expect([unknown.status, unknown.body.error.code]).toEqual([404, 'setting_not_found']);
    expect(unknown.body.error.message).toContain("did you mean 'auto_mode_enabled'");
    const stale = await call('PUT', PATH, { body: { value: false }, ifMatch: '"0"' });
    expect([stale.status, stale.etag]).toEqual([412, '"1"']);
    const staleBody = await call('PUT', PATH, { body: { value: false, version: 0 } });
    expect(staleBody.status).toBe(409);
    expect(await autoStatus(gw)).toBe(200); // nothing changed
  });

  it(`${kind}: DELETE goes back to the gateway.yaml value (404 again); a second DELETE is a 404`, async () => {
    const del = await call('DELETE', PATH, { ifMatch: '"1"' });
    expect([del.status, del.etag]).toEqual([200, '"2"']);
    expect(del.body).toMatchObject({ value: false, source: 'gateway.yaml', override: null, version: 2 });
    expect(await listed(gw)).toEqual(['small']);
    expect(await autoStatus(gw)).toBe(404);
    const again = await call('DELETE', PATH);
    expect([again.status, again.body.error.code]).toEqual([404, 'override_not_found']);
  });

  if (kind !== 'memory') {
    it(`${kind}: a runtime value outlives a restart`, async () => {
      expect((await call('PUT', PATH, { body: { value: true } })).status).toBe(200);
      await gw.close();
      gw = await start();
      expect(await listed(gw)).toContain('auto-balance');
      expect((await call('GET', PATH)).body).toMatchObject({ value: true, source: 'runtime', version: 3 });
    });
  }
}

describe('runtime settings without a store', () => {
  scenario('memory', async () => undefined);
});

describe('runtime settings on PGlite', () => {
  scenario('pglite', async () => ({ kind: 'pglite', dir: freshPgliteDir() }));
});

describe.skipIf(!PG_URL)(`runtime settings on PostgreSQL${PG_SKIP ? ` (skipped: ${PG_SKIP})` : ''}`, () => {
  scenario('postgres', async () => ({ kind: 'postgres', url: await freshDatabase() }));

  describe('two replicas', () => {
    let emu: RunningEmulator;
    let a: RunningGateway;
    let b: RunningGateway;
    beforeAll(async () => {
      emu = await startEmulator({ mode: 'echo', echoText: 'hello' });
      const url = await freshDatabase();
      // Polling every ten minutes: only the change feed can carry the change in time.
      const start = () => startGateway({ config: autoConfig(emu, { store: { kind: 'postgres', url }, store_poll_ms: 600_000 }), host: '127.0.0.1', port: 0, seed: 4, logger: pino({ level: 'silent' }) });
      [a, b] = [await start(), await start()];
      await until(async () => (await listeners(url)).length === 2, 'both listeners');
    });
    afterAll(async () => {
      await Promise.all([a?.close(), b?.close()]);
      await emu?.close();
    });

    it('a change through one replica turns auto models on and off on the other', async () => {
      expect(await autoStatus(b)).toBe(404);
      expect((await adminCall(a.url, 'PUT', PATH, { body: { value: true } })).status).toBe(200);
      await until(async () => (await listed(b)).includes('auto-balance'), 'auto models on b');
      expect(await autoStatus(b)).toBe(200);
      expect((await adminCall(a.url, 'DELETE', PATH)).status).toBe(200);
      await until(async () => !(await listed(b)).includes('auto-balance'), 'auto models gone on b');
      expect(await autoStatus(b)).toBe(404);
    });
  });
});

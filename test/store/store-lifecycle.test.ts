// The store's life on a real PostgreSQL 15 server (and PGlite where it applies): an unreachable
// store refuses the start with the connection error; a store lost at run time degrades
// /health/deep and refuses changes with 503 while requests keep flowing on the last generation;
// a schema newer than the code refuses the start; two gateways migrating at once apply each
// migration once; a change made through one replica reaches the other by polling.
import { createServer } from 'node:net';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { openStore } from '../../gateway/store/sql-store.ts';
import { MIGRATIONS, SCHEMA_VERSION } from '../../gateway/store/migrations.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { endpointId } from '../../core/index.ts';
import { hello, KEYS, stackConfig, servedEndpoint } from '../gateway/harness.ts';
import OpenAI from 'openai';
import { adminCall, freshDatabase, freshPgliteDir, PG_SKIP, PG_URL, superuser, weightPath } from './harness.ts';

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const x of opened.splice(0).reverse()) await x.close();
});

async function gateway(store: Record<string, unknown>, emus: RunningEmulator[]): Promise<RunningGateway> {
  const gw = await startGateway({ config: stackConfig([{}, {}], emus, { store, store_poll_ms: 100 }), host: '127.0.0.1', port: 0, seed: 1, logger: pino({ level: 'silent' }) });
  opened.push(gw);
  return gw;
}

async function emulators(): Promise<RunningEmulator[]> {
  const emus = await Promise.all([startEmulator({ faults: { latency_scale: 0.02 } }), startEmulator({ faults: { latency_scale: 0.02 } })]);
  for (const e of emus) opened.push(e);
  return emus;
}

async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

describe.skipIf(!PG_URL)(`store life on PostgreSQL${PG_SKIP ? ` (skipped: ${PG_SKIP})` : ''}`, () => {
  it('an unreachable store refuses the start, naming the store and the connection error', async () => {
    const emus = await emulators();
    const url = `postgres://postgres@127.0.0.1:${await closedPort()}/postgres`;
    await expect(gateway({ kind: 'postgres', url, connect_timeout_ms: 2000 }, emus)).rejects.toThrow(/store \(postgres postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres\): cannot open: .*ECONNREFUSED/);
  });

  it('a store lost at run time: requests keep flowing, /health/deep says down, changes get 503', async () => {
    const emus = await emulators();
    const url = await freshDatabase();
    const gw = await gateway({ kind: 'postgres', url }, emus);
    const id = endpointId('demo', 'openai_compat', emus[0]!.baseUrl);
    expect((await adminCall(gw.url, 'PUT', weightPath('demo', id), { body: { weight: 0 } })).status).toBe(200);
    await superuser(`DROP DATABASE ${new URL(url).pathname.slice(1)} WITH (FORCE)`);
    const deep = (await adminCall(gw.url, 'GET', '/health/deep')).body;
    expect(deep.store).toMatchObject({ kind: 'postgres', status: 'down' });
    expect(deep.store.error).toMatch(/./);
    expect(deep.status).toBe('degraded');
    const put = await adminCall(gw.url, 'PUT', weightPath('demo', id), { body: { weight: 1 } });
    expect([put.status, put.body.error.code]).toEqual([503, 'store_unavailable']);
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: KEYS.admin, maxRetries: 0 });
    for (let i = 0; i < 5; i++) {
      const { response } = await client.chat.completions.create({ model: 'demo', messages: hello, max_tokens: 1 }).withResponse();
      expect(await servedEndpoint(gw, response)).not.toBe(id); // still drained
    }
  });

  it('a schema newer than the code refuses the start; two gateways migrating together apply each step once', async () => {
    const url = await freshDatabase();
    const [a, b] = await Promise.all([openStore({ kind: 'postgres', url, pool_size: 2, connect_timeout_ms: 5000 }), openStore({ kind: 'postgres', url, pool_size: 2, connect_timeout_ms: 5000 })]);
    expect([a.schemaVersion, b.schemaVersion]).toEqual([SCHEMA_VERSION, SCHEMA_VERSION]);
    expect((await a.query('SELECT version FROM schema_migrations ORDER BY version')).rows).toEqual(MIGRATIONS.map((m) => ({ version: m.version })));
    await a.query(`INSERT INTO schema_migrations (version, description) VALUES (${SCHEMA_VERSION + 1}, 'from the future')`);
    await Promise.all([a.close(), b.close()]);
    await expect(openStore({ kind: 'postgres', url, pool_size: 1, connect_timeout_ms: 5000 })).rejects.toThrow(new RegExp(`schema is at version ${SCHEMA_VERSION + 1}, newer than this gateway's ${SCHEMA_VERSION}`));
  });

  it('a change made through one replica reaches the other (store polling), learned state kept', async () => {
    const emus = await emulators();
    const url = await freshDatabase();
    const [a, b] = [await gateway({ kind: 'postgres', url }, emus), await gateway({ kind: 'postgres', url }, emus)];
    const id = endpointId('demo', 'openai_compat', emus[1]!.baseUrl);
    const otherId = endpointId('other', 'openai_compat', emus[0]!.baseUrl);
    b.core.health.markDegraded(otherId, performance.now());
    expect((await adminCall(a.url, 'PUT', weightPath('demo', id), { body: { weight: 0 } })).status).toBe(200);
    const deadline = Date.now() + 5000;
    while (b.core.model('demo')!.routes[1]!.effectiveWeight !== 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(b.core.model('demo')!.routes[1]!.exclusionReasons).toEqual(['weight_override']);
    expect(b.core.health.snapshotOf(otherId, performance.now()).state).toBe('open');
  });
});

describe('store life on PGlite', () => {
  it('a newer schema refuses the start; without a store the overlay lives in the process and routing.yaml still splits', async () => {
    const dir = freshPgliteDir();
    const s = await openStore({ kind: 'pglite', dir });
    await s.query(`INSERT INTO schema_migrations (version, description) VALUES (${SCHEMA_VERSION + 7}, 'from the future')`);
    await s.close();
    await expect(openStore({ kind: 'pglite', dir })).rejects.toThrow(/newer than this gateway's/);

    const emus = await emulators();
    const config = stackConfig([{ local: true }, { local: false }], emus);
    const withSplit = { ...config, models: { ...config.models, routing: { ...config.models.routing, local_weight_share: 1 } } };
    const gw = await startGateway({ config: withSplit, host: '127.0.0.1', port: 0, seed: 1, logger: pino({ level: 'silent' }) });
    opened.push(gw);
    const view = (await adminCall(gw.url, 'GET', '/admin/routing')).body;
    expect(view.persistent).toBe(false);
    expect(view.models[0].routes[1].exclusion_reasons).toEqual(['routing_yaml']);
    const put = await adminCall(gw.url, 'PUT', weightPath('demo', view.models[0].routes[0].endpoint_id), { body: { weight: 0 } });
    expect(put.status).toBe(200);
    expect((await adminCall(gw.url, 'GET', '/health/deep')).body.store).toBeUndefined();
  });
});

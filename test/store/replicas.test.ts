// Replicas on one PostgreSQL server: a change made through either gateway reaches the other by
// LISTEN/NOTIFY (polling is set to ten minutes here, so nothing else could carry it) and is
// applied as one new generation with learned state kept; after the listening connections are
// killed (pg_terminate_backend), a change that was never announced to them is picked up by the
// full reload that follows the reconnection. The feed itself: a signal per notification, and
// one per (re)connection.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointId } from '../../core/index.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { ChangeFeed, CHANGE_CHANNEL, type ChangeSignal } from '../../gateway/store/change-feed.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { adminCall, freshDatabase, PG_SKIP, PG_URL, weightPath } from './harness.ts';
import { rwConfig, until } from './harness-rw.ts';

const log = pino({ level: 'silent' });

/** Runs `sql` on `url` with a client of its own. */
async function sql<T = Record<string, unknown>>(url: string, text: string, params: unknown[] = []): Promise<T[]> {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text, params)).rows as T[];
  } finally {
    await c.end();
  }
}

const dbOf = (url: string) => new URL(url).pathname.slice(1);
const listeners = (url: string) => sql<{ pid: number }>(url, `SELECT pid FROM pg_stat_activity WHERE application_name = 'switchyard-listener' AND datname = $1 ORDER BY pid`, [dbOf(url)]);

describe.skipIf(!PG_URL)(`replicas on one PostgreSQL${PG_SKIP ? ` (skipped: ${PG_SKIP})` : ''}`, () => {
  let emus: RunningEmulator[] = [];
  let url: string;
  let a: RunningGateway;
  let b: RunningGateway;
  let ids: string[];
  const rwParams = (g: RunningGateway) => (g.core.model('rw')!.planner as unknown as { params: { slo_ms: number; budget_alpha: number } }).params;
  const generation = async (g: RunningGateway): Promise<number> => (await adminCall(g.url, 'GET', '/admin/routing')).body.generation;

  beforeAll(async () => {
    emus = await Promise.all([0, 1].map(() => startEmulator({ faults: { latency_scale: 0.02 } })));
    ids = emus.map((e) => endpointId('rw', 'openai_compat', e.baseUrl));
    url = await freshDatabase();
    const start = () => startGateway({ config: rwConfig(emus, { store: { kind: 'postgres', url }, store_poll_ms: 600_000 }), host: '127.0.0.1', port: 0, seed: 9, logger: log });
    [a, b] = [await start(), await start()];
    await until(async () => (await listeners(url)).length === 2, 'both listeners');
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await Promise.all(emus.map((e) => e.close()));
  });

  it('a change through either replica reaches the other as one new generation, learned state kept', async () => {
    b.core.health.markDegraded(ids[0]!, performance.now()); // learned on b only
    const genB = await generation(b);
    let t0 = performance.now();
    expect((await adminCall(a.url, 'PUT', weightPath('rw', ids[1]!), { body: { weight: 0 } })).status).toBe(200);
    await until(() => b.core.model('rw')!.routes[1]!.effectiveWeight === 0, 'weight on b');
    const weightMs = performance.now() - t0;
    expect(await generation(b)).toBe(genB + 1);
    expect(b.core.health.snapshotOf(ids[0]!, performance.now()).state).toBe('open');
    const genA = await generation(a);
    t0 = performance.now();
    expect((await adminCall(b.url, 'PATCH', '/admin/routewise/settings', { body: { budget_alpha: 0.2 } })).status).toBe(200);
    await until(() => rwParams(a).budget_alpha === 0.2, 'fallback setting on a');
    const settingMs = performance.now() - t0;
    expect(await generation(a)).toBe(genA + 1);
    // The writer's own notification reloads an equal overlay: no second generation there.
    await new Promise((r) => setTimeout(r, 200));
    expect(await generation(b)).toBe(genB + 2);
    console.log(`replica convergence by NOTIFY: weight ${weightMs.toFixed(0)} ms, RouteWise setting ${settingMs.toFixed(0)} ms`);
  });

  it('after the listening connections are killed, a change never announced to them still arrives', async () => {
    const killed = (await listeners(url)).map((r) => r.pid);
    expect(killed.length).toBe(2);
    // Written straight into the store with no NOTIFY: only a full reload can find it.
    await sql(url, `INSERT INTO routewise_settings (model_id, key, value, version, updated_by) VALUES ('rw', 'slo_ms', '1234'::jsonb, 1, 'psql')`);
    await sql(url, 'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = ANY($1)', [killed]);
    // And one through a replica while the connections are down (its notification is lost too).
    expect((await adminCall(a.url, 'PUT', weightPath('rw', ids[0]!), { body: { weight: 4 } })).status).toBe(200);
    await until(() => rwParams(a).slo_ms === 1234 && rwParams(b).slo_ms === 1234, 'the unannounced setting on both');
    await until(() => b.core.model('rw')!.routes[0]!.effectiveWeight === 4, 'the weight on b');
    await until(async () => (await listeners(url)).length === 2, 'listeners back');
    const fresh = (await listeners(url)).map((r) => r.pid);
    expect(fresh.some((p) => killed.includes(p))).toBe(false);
    // Notifications flow again on the new connections.
    expect((await adminCall(b.url, 'DELETE', weightPath('rw', ids[1]!))).status).toBe(200);
    await until(() => a.core.model('rw')!.routes[1]!.effectiveWeight === 1, 'the cleared weight on a');
    const deep = (await adminCall(a.url, 'GET', '/health/deep')).body;
    expect(deep.store).toMatchObject({ kind: 'postgres', status: 'ok' });
  });

  it('the feed signals once per notification and once per (re)connection', async () => {
    const signals: ChangeSignal[] = [];
    const feed = new ChangeFeed({ url, connectTimeoutMs: 5_000, retryMs: 20, onSignal: (s) => signals.push(s), log });
    try {
      feed.start();
      await until(() => signals.length === 1, 'first connection');
      expect(signals).toEqual(['reconnected']);
      await sql(url, `NOTIFY ${CHANGE_CHANNEL}`);
      await until(() => signals.length === 2, 'notification');
      // A notification of a rolled-back transaction is never delivered; the committed one after it is.
      const { default: pg } = await import('pg');
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query('BEGIN');
      await c.query('SELECT pg_notify($1, $2)', [CHANGE_CHANNEL, 'rolled back']);
      await c.query('ROLLBACK');
      await c.query('SELECT pg_notify($1, $2)', [CHANGE_CHANNEL, 'committed']);
      await c.end();
      await until(() => signals.length === 3, 'the committed notification');
      expect(signals).toEqual(['reconnected', 'notified', 'notified']);
      const pid = feed.pid!;
      await sql(url, 'SELECT pg_terminate_backend($1)', [pid]);
      await until(() => feed.connections === 2 && signals.length === 4, 'reconnection');
      expect(signals).toEqual(['reconnected', 'notified', 'notified', 'reconnected']);
      expect(feed.pid).not.toBe(pid);
    } finally {
      await feed.close();
    }
    expect(feed.pid).toBeNull();
  });
});

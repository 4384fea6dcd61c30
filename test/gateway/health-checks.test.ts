// Background health checks on loopback: a real gateway probing engine emulators. An enforcing
// check takes a failing target off a consistent-hash ring and puts it back once it passes; a
// report-only check changes no routing but shows in /health/deep; probes are counted in /metrics
// and written to the request log under the gateway's own caller id, never as caller traffic.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import { DuckDBInstance } from '@duckdb/node-api';
import { endpointId } from '../../core/index.ts';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { HEALTH_CHECK_CALLER_ID, ProbeSlots } from '../../gateway/health-checks/health-checker.ts';
import { exportRequestLog } from '../../gateway/request-log/export-trace.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { KEYS, servedEndpoint } from './harness.ts';

const dirs: string[] = [];
let gw: RunningGateway | null = null;
let emus: RunningEmulator[] = [];
afterEach(async () => {
  await gw?.close();
  gw = null;
  await Promise.all(emus.map((e) => e.close()));
  emus = [];
});
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const auth = { mode: 'keys', keys: [{ id: 'user', sha256: hashKey(KEYS.user) }, { id: 'admin', sha256: hashKey(KEYS.admin), admin: true }] };
/** Probes every 20 ms so that the test waits on state changes, never on a clock. */
const check = (mode: 'enforce' | 'report_only') => ({ mode, interval_sec: 0.02, timeout_ms: 2_000, unhealthy_threshold: 2, healthy_threshold: 2 });

async function getJson(url: string): Promise<any> {
  const r = await fetch(url, { headers: { authorization: `Bearer ${KEYS.admin}` } });
  expect(r.status, url).toBe(200);
  return r.json();
}

/** Polls `read` until `pred` holds (state changes driven by probes; no duration is asserted). */
async function until<T>(read: () => Promise<T>, pred: (v: T) => boolean, what: string): Promise<T> {
  for (let i = 0; i < 500; i++) {
    const v = await read();
    if (pred(v)) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`gave up waiting for ${what}`);
}

async function chat(model: string, key: string): Promise<{ status: number; servedBy: string | null }> {
  const r = await fetch(`${gw!.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEYS.user}`, 'content-type': 'application/json', 'x-switchyard-routing-key': key },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Hello there' }], max_tokens: 2 }),
  });
  await r.arrayBuffer();
  return { status: r.status, servedBy: await servedEndpoint(gw!, r) };
}

const callerRequests = (e: RunningEmulator) => e.log.all().filter((r) => !(r.requestId ?? '').startsWith('health-check-')).length;
const probesOf = (e: RunningEmulator) => e.log.all().filter((r) => (r.requestId ?? '').startsWith('health-check-')).length;

describe('background health checks', () => {
  it('enforce: a failing target leaves the hash ring (only its keys move) and returns after it passes; probes are not caller traffic', async () => {
    emus = await Promise.all([0, 1, 2].map(() => startEmulator({ mode: 'echo' })));
    const names = ['a', 'b', 'c'];
    const dir = mkdtempSync(join(tmpdir(), 'sy-hc-'));
    dirs.push(dir);
    const config = buildGatewayConfig({
      models: {
        models: [
          ...names.map((id, i) => ({ id, health_check: check('enforce'), route: [{ base_url: emus[i]!.baseUrl }] })),
          { id: 'ring', routing: { strategy: 'consistent_hash', targets: names.map((model) => ({ model })), retries: 0 } },
        ],
      },
      gateway: { auth, health: { failure_threshold: 1000 }, health_checks: { max_concurrent_probes: 2 }, request_log: { path: join(dir, 'log.duckdb') } },
    });
    gw = await startGateway({ config, host: '127.0.0.1', port: 0, adminPort: 0, adminHost: '127.0.0.1', seed: 3, logger: pino({ level: 'silent' }) });
    const ids = names.map((id, i) => endpointId(id, 'openai_compat', emus[i]!.baseUrl));
    const deep = () => getJson(`${gw!.url}/health/deep`);
    await until(deep, (d) => d.health_checks.length === 3 && d.health_checks.every((c: any) => c.probes >= 1), 'a first probe of every target');

    const keys = Array.from({ length: 60 }, (_, i) => `key-${i}`);
    const route = async () => {
      const out: Array<string | null> = [];
      for (const k of keys) {
        const r = await chat('ring', k);
        expect(r.status).toBe(200);
        out.push(r.servedBy);
      }
      return out;
    };
    const before = await route();
    expect(before.filter((x) => x === ids[1]).length).toBeGreaterThan(5);

    emus[1]!.setFaults({ error_rate: 1, error_status: 503 });
    const d1 = await until(deep, (d) => d.health_checks.find((c: any) => c.endpointId === ids[1]).excluded, 'b held out');
    expect(d1.health_checks.find((c: any) => c.endpointId === ids[1])).toMatchObject({ model: 'b', mode: 'enforce', state: 'unhealthy', lastResult: 'fail', lastFailureReason: 'http_503' });
    // Direct requests to model b are refused too (its only route is held out).
    expect([d1.status, d1.models_unavailable]).toEqual(['unavailable', ['b']]);
    // The probes touched no breaker: b's breaker is closed with no failure counted.
    expect(d1.providers[ids[1]!]).toMatchObject({ state: 'closed', consecutiveFailures: 0 });
    const routing = await getJson(`${gw!.url}/routing`);
    expect(routing.endpoint_health[ids[1]!]).toMatchObject({ mode: 'enforce', state: 'unhealthy', excluded: true, last_failure_reason: 'http_503' });
    // The weights a request sees: the held-out route reads 0, with the reason, in both views.
    const routeOf = (body: any) => body.models.find((m: any) => m.id === 'b').routes[0];
    expect(routeOf(routing)).toMatchObject({ effective_weight: 0, exclusion_reasons: ['health_check'] });
    expect(routeOf(await getJson(`${gw!.adminUrl}/admin/routing`))).toMatchObject({ effective_weight: 0, exclusion_reasons: ['health_check'] });
    // The console's live read carries the check per endpoint: mode, state, held out or not.
    const live = (await getJson(`${gw!.adminUrl}/admin/health/endpoints`)).endpoints.find((e: any) => e.endpoint_id === ids[1]);
    expect(live.health_check).toMatchObject({ mode: 'enforce', state: 'unhealthy', excluded: true, last_failure_reason: 'http_503', last_checked_age_ms: expect.any(Number) });
    // Times are wall-clock ISO strings, not the process's monotonic milliseconds.
    const checkB = d1.health_checks.find((c: any) => c.endpointId === ids[1]);
    expect(checkB.last_checked_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Math.abs(Date.parse(checkB.last_checked_at) - Date.now())).toBeLessThan(3_600_000);
    expect(checkB).not.toHaveProperty('lastCheckedAtMs');
    expect(d1.endpoints[0]).toHaveProperty('opened_at');
    expect(d1.endpoints[0]).not.toHaveProperty('openedAtMs');
    const status = await getJson(`${gw!.adminUrl}/status/models`);
    expect(status.find((m: any) => m.model === 'ring').targets[1]).toMatchObject({ model: 'b', status: 'unhealthy', status_reason: 'health_check_failed' });
    expect(status.find((m: any) => m.model === 'b')).toMatchObject({ status: 'unhealthy', status_reason: 'health_check_failed' });

    const callersAtB = callerRequests(emus[1]!);
    const during = await route();
    expect(callerRequests(emus[1]!)).toBe(callersAtB); // no caller request was even attempted on b
    for (let i = 0; i < keys.length; i++) {
      if (before[i] === ids[1]) expect(during[i]).not.toBe(ids[1]);
      else expect(during[i]).toBe(before[i]);
    }

    emus[1]!.setFaults({ error_rate: 0 });
    await until(deep, (d) => d.health_checks.find((c: any) => c.endpointId === ids[1]).state === 'healthy', 'b healthy again');
    expect(await route()).toEqual(before);

    // Metrics: probes by result and the state gauge; client request counts hold only the 180 client requests.
    const metrics = await (await fetch(`${gw!.url}/metrics`, { headers: { authorization: `Bearer ${KEYS.admin}` } })).text();
    expect(metrics).toMatch(new RegExp(`switchyard_health_checks_total\\{model="b",endpoint="${ids[1]}",mode="enforce",result="fail"\\} [1-9]`));
    expect(metrics).toMatch(new RegExp(`switchyard_health_checks_total\\{model="a",endpoint="${ids[0]}",mode="enforce",result="pass"\\} [1-9]`));
    expect(metrics).toContain(`switchyard_health_check_unhealthy{endpoint="${ids[1]}",mode="enforce"} 0`);
    const served = [...metrics.matchAll(/^switchyard_requests_total\{[^}]*\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
    expect(served).toBe(3 * keys.length);
    expect(probesOf(emus[1]!)).toBeGreaterThan(4);

    // max_concurrent_probes: 2 — at no moment did the three upstreams hold more than two probes.
    const spans = emus.flatMap((e) => e.log.all().filter((r) => (r.requestId ?? '').startsWith('health-check-')).map((r) => [r.receivedAtMs, r.endedAtMs ?? Number.POSITIVE_INFINITY] as const));
    const overlap = Math.max(...spans.map(([t]) => spans.filter(([a, b]) => a <= t && t < b).length));
    expect(overlap).toBeLessThanOrEqual(2);

    // Request log: probe rows under the gateway's own caller id, apart from the callers' rows.
    await gw.close();
    gw = null;
    const db = await DuckDBInstance.create(join(dir, 'log.duckdb'), { access_mode: 'READ_ONLY' });
    const conn = await db.connect();
    const rows = (await conn.runAndReadAll(`SELECT caller_id, count(*)::INTEGER AS n, count(DISTINCT endpoint_id)::INTEGER AS eps, sum(CASE WHEN status <> 'ok' THEN 1 ELSE 0 END)::INTEGER AS failed FROM requests GROUP BY caller_id ORDER BY caller_id`)).getRowObjectsJS();
    conn.closeSync();
    db.closeSync();
    expect(rows.find((r) => r.caller_id === 'user')).toMatchObject({ n: 3 * keys.length, failed: 0 });
    const probes = rows.find((r) => r.caller_id === HEALTH_CHECK_CALLER_ID)!;
    expect(probes).toMatchObject({ eps: 3 });
    expect(probes.failed as number).toBeGreaterThanOrEqual(2);
    // A trace exported from the log is the callers' workload only.
    expect((await exportRequestLog({ from: join(dir, 'log.duckdb'), to: join(dir, 'x.arrow') })).rows).toBe(3 * keys.length);
  }, 60_000);

  it('report_only: an unhealthy route keeps its traffic and shows in /health/deep; a reload stops and starts the checks', async () => {
    emus = [await startEmulator({ mode: 'echo' })];
    const models = (hc: Record<string, unknown> | null) => ({ models: [{ id: 'solo', route: [{ base_url: emus[0]!.baseUrl, ...(hc && { health_check: hc }) }] }] });
    const gateway = { auth, health: { failure_threshold: 1000 } };
    gw = await startGateway({ config: buildGatewayConfig({ models: models(check('report_only')), gateway }), host: '127.0.0.1', port: 0, seed: 3, logger: pino({ level: 'silent' }) });
    const id = endpointId('solo', 'openai_compat', emus[0]!.baseUrl);
    const deep = () => getJson(`${gw!.url}/health/deep`);
    emus[0]!.setFaults({ error_rate: 1, error_status: 500 });
    const d = await until(deep, (x) => x.health_checks[0]?.state === 'unhealthy', 'the report-only check to read unhealthy');
    expect(d.health_checks[0]).toMatchObject({ endpointId: id, model: 'solo', mode: 'report_only', excluded: false, lastFailureReason: 'http_500' });
    expect(d.status).toBe('ok'); // reporting only: not a verdict
    const callers = callerRequests(emus[0]!);
    expect((await chat('solo', 'k')).status).toBe(502); // still sent there: the upstream's 500, relayed as a bad gateway
    expect(callerRequests(emus[0]!)).toBe(callers + 1);

    gw.reload(buildGatewayConfig({ models: models(null), gateway }));
    expect((await deep()).health_checks).toEqual([]);
    gw.reload(buildGatewayConfig({ models: models(check('enforce')), gateway }));
    await until(deep, (x) => x.health_checks[0]?.excluded === true, 'the enforcing check to hold the route out');
    const r = await chat('solo', 'k');
    expect(r.status).toBe(503); // held out: nothing admitted, the upstream is not tried
    expect(callerRequests(emus[0]!)).toBe(callers + 1);
  }, 60_000);

  it('ProbeSlots runs at most `limit` at once, in arrival order; a raised limit starts the waiting ones', () => {
    const slots = new ProbeSlots(2);
    const started: number[] = [];
    const releases: Array<() => void> = [];
    for (let i = 0; i < 5; i++) slots.acquire((release) => (started.push(i), releases.push(release)));
    expect([started, slots.inFlight]).toEqual([[0, 1], 2]);
    releases[0]!();
    releases[0]!(); // a second release of the same slot is a no-op
    expect([started, slots.inFlight]).toEqual([[0, 1, 2], 2]);
    slots.setLimit(4);
    expect([started, slots.inFlight]).toEqual([[0, 1, 2, 3, 4], 4]);
    expect(() => slots.setLimit(0)).toThrow(/max_concurrent_probes must be an integer >= 1/);
  });

  it('gateway.yaml health_checks.max_concurrent_probes and caller ids are validated', () => {
    const models = { models: [{ id: 'm', route: [{ base_url: 'http://127.0.0.1:9/v1' }] }] };
    expect(() => buildGatewayConfig({ models, gateway: { health_checks: { max_concurrent_probes: 0 } } })).toThrow(/max_concurrent_probes/);
    expect(() => buildGatewayConfig({ models, gateway: { auth: { mode: 'keys', keys: [{ id: 'switchyard:health-check', sha256: hashKey('x') }] } } })).toThrow(/reserved for the gateway's own traffic/);
  });
});

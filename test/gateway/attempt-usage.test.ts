// Per-attempt usage of a multi-target alias (seed 003): every upstream attempt has its own row in
// the request log's attempts table — a failed one with zero tokens and no cost, the serving one
// with its tokens priced at its own target — and the answer names the direct model that served
// it in x-switchyard-served-by (a model with its own routes names none).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointId } from '../../core/index.ts';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { servedEndpoint } from './harness.ts';

const KEY = 'sk-attempt-usage';
let gw: RunningGateway;
let failing: RunningEmulator;
let good: RunningEmulator;
let dir: string;
let client: OpenAI;

beforeAll(async () => {
  [failing, good] = await Promise.all([startEmulator({ faults: { error_rate: 1, error_status: 500 } }), startEmulator({ faults: { latency_scale: 0.02 }, defaultOutputTokens: 5 })]);
  dir = mkdtempSync(join(tmpdir(), 'switchyard-attempt-usage-'));
  const config = buildGatewayConfig({
    models: {
      models: [
        { id: 'dear-broken', route: [{ base_url: failing.baseUrl, pricing: { input_usd_per_1m: 100, output_usd_per_1m: 100 } }] },
        { id: 'cheap', route: [{ base_url: good.baseUrl, pricing: { input_usd_per_1m: 1, output_usd_per_1m: 2 } }] },
        { id: 'pair', routing: { strategy: 'failover', targets: [{ model: 'dear-broken' }, { model: 'cheap' }] } },
      ],
    },
    gateway: {
      routing_settings: { affinity_enabled: false, prefill_aware_enabled: false },
      health: { failure_threshold: 1000 },
      auth: { mode: 'keys', keys: [{ id: 'u', sha256: hashKey(KEY) }] },
      request_log: { path: join(dir, 'log.duckdb') },
    },
  });
  gw = await startGateway({ config, host: '127.0.0.1', port: 0, seed: 3, logger: pino({ level: 'silent' }) });
  client = new OpenAI({ apiKey: KEY, baseURL: `${gw.url}/v1`, maxRetries: 0, timeout: 10_000 });
});

afterAll(async () => {
  await gw?.close();
  await Promise.all([failing, good].map((e) => e?.close()));
  rmSync(dir, { recursive: true, force: true });
});

describe('an alias that fails over', () => {
  it('names the serving direct model; each attempt is logged with its own tokens and cost', async () => {
    const { data, response } = await client.chat.completions.create({ model: 'pair', messages: [{ role: 'user', content: 'Hello there' }] }).withResponse();
    expect(data.model).toBe('pair');
    expect(response.headers.get('x-switchyard-served-by')).toBe('cheap');
    expect(await servedEndpoint(gw, response)).toBe(endpointId('cheap', 'openai_compat', good.baseUrl));
    const id = response.headers.get('x-request-id')!;
    const rows = await gw.requestLog!.query('SELECT attempt_index, target, outcome, input_tokens, output_tokens, cost_usd FROM attempts WHERE request_id = $1 ORDER BY attempt_index', [id]);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({ target: 'dear-broken', outcome: 'http_500', input_tokens: 0, output_tokens: 0, cost_usd: 0 });
    const served = rows[1]!;
    expect(served).toMatchObject({ target: 'cheap', outcome: 'ok', output_tokens: 5 });
    const input = served.input_tokens as number;
    expect(input).toBeGreaterThan(0);
    expect(served.cost_usd as number).toBeCloseTo((input * 1 + 5 * 2) / 1e6, 12);
    const [req] = await gw.requestLog!.query('SELECT cost_usd FROM requests WHERE request_id = $1', [id]);
    expect(req!.cost_usd as number).toBeCloseTo(served.cost_usd as number, 12);
  });

  it('a model with its own routes carries no served-by header', async () => {
    const { response } = await client.chat.completions.create({ model: 'cheap', messages: [{ role: 'user', content: 'Hi' }] }).withResponse();
    expect(response.headers.get('x-switchyard-served-by')).toBeNull();
    expect(await servedEndpoint(gw, response)).toBe(endpointId('cheap', 'openai_compat', good.baseUrl));
  });

  it('an error carries none either', async () => {
    const r = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'dear-broken', messages: [{ role: 'user', content: 'Hi' }] }) });
    expect(r.status).toBeGreaterThanOrEqual(500);
    expect(r.headers.get('x-switchyard-served-by')).toBeNull();
    expect(await servedEndpoint(gw, r)).toBeNull();
  });
});

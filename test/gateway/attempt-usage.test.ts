// Per-attempt usage of a multi-target alias (seed 003): every upstream attempt has its own row in
// the request log's attempts table — a failed one with zero tokens and no cost, the serving one
// with its tokens priced at its own target — and the answer names the direct model that served
// it in x-switchyard-served-by (a model with its own routes names none). The same holds for the
// families beyond chat (embeddings, images, rerank, audio): their attempts, the request log's
// `api` column, /metrics by family, and what least_latency / least_busy learn from them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointId } from '../../core/index.ts';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { servedEndpoint } from './harness.ts';

const KEY = 'sk-attempt-usage';
const ADMIN = 'sk-attempt-usage-admin';
/** Families and the direct model (own endpoint, same emulator) each is learned on. */
const LEARNED = ['embedding', 'image', 'rerank', 'speech', 'transcription'] as const;
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
        ...LEARNED.flatMap((f) => [
          { id: `learn-${f}`, route: [{ base_url: good.baseUrl }] },
          { id: `fast-${f}`, routing: { strategy: 'least_latency', targets: [{ model: `learn-${f}` }] } },
        ]),
      ],
    },
    gateway: {
      routing_settings: { affinity_enabled: false, prefill_aware_enabled: false },
      health: { failure_threshold: 1000 },
      auth: { mode: 'keys', keys: [{ id: 'u', sha256: hashKey(KEY) }, { id: 'ops', sha256: hashKey(ADMIN), admin: true }] },
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

describe('the families beyond chat, over the same alias', () => {
  const attemptsOf = (id: string) => gw.requestLog!.query('SELECT attempt_index, target, outcome, input_tokens, output_tokens, cost_usd FROM attempts WHERE request_id = $1 ORDER BY attempt_index', [id]);

  it('embeddings and images: each attempt its own row (the failed one zero tokens, no cost), the serving one priced at its target; the log names the family', async () => {
    const emb = await client.embeddings.create({ model: 'pair', input: 'hello there' }).withResponse();
    const img = await client.images.generate({ model: 'pair', prompt: 'a cat' }).withResponse();
    for (const [r, api] of [[emb.response, 'embedding'], [img.response, 'image_generation']] as const) {
      expect(r.headers.get('x-switchyard-served-by')).toBe('cheap');
      const id = r.headers.get('x-request-id')!;
      await servedEndpoint(gw, r);
      const rows = await attemptsOf(id);
      expect(rows.map((x) => x.target)).toEqual(['dear-broken', 'cheap']);
      expect(rows[0]).toMatchObject({ outcome: 'http_500', input_tokens: 0, output_tokens: 0, cost_usd: 0 });
      expect(rows[1]).toMatchObject({ outcome: 'ok' });
      const served = rows[1]!;
      expect(served.cost_usd as number).toBeCloseTo(((served.input_tokens as number) * 1 + (served.output_tokens as number) * 2) / 1e6, 12);
      const [req] = await gw.requestLog!.query('SELECT api, fallback, http_status FROM requests WHERE request_id = $1', [id]);
      expect(req).toMatchObject({ api, fallback: true, http_status: 200 });
    }
    const embRows = await attemptsOf(emb.response.headers.get('x-request-id')!);
    expect(embRows[1]!.input_tokens as number).toBeGreaterThan(0);
    const text = await (await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN}` } })).text();
    for (const api of ['embedding', 'image_generation']) expect(text).toMatch(new RegExp(`^switchyard_api_requests_total\\{api="${api}",status="200"\\} [1-9]`, 'm'));
    expect(Number(/^switchyard_fallbacks_total\{model="pair"\} (\d+)$/m.exec(text)?.[1] ?? 0)).toBeGreaterThanOrEqual(2);
  });

  it('least_latency and least_busy learn from every family: a latency sample each, nothing left in flight', async () => {
    const file = () => toFile(Buffer.from('RIFF....WAVEfmt '), 'a.wav', { type: 'audio/wav' });
    const ids = Object.fromEntries(LEARNED.map((f) => [f, endpointId(`learn-${f}`, 'openai_compat', good.baseUrl)]));
    for (const f of LEARNED) expect(gw.core.endpointStats.latencyMs(ids[f]!), f).toBeNull();
    const answers: Array<{ headers: { get(name: string): string | null } }> = [];
    answers.push((await client.embeddings.create({ model: 'fast-embedding', input: 'x' }).withResponse()).response);
    answers.push((await client.images.generate({ model: 'fast-image', prompt: 'x' }).withResponse()).response);
    const rr = await fetch(`${gw.url}/v1/rerank`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'fast-rerank', query: 'q', documents: ['a', 'b'] }) });
    expect(rr.status).toBe(200);
    await rr.arrayBuffer();
    answers.push(rr);
    const speech = await client.audio.speech.create({ model: 'fast-speech', voice: 'alloy', input: 'hello' });
    await speech.arrayBuffer();
    answers.push(speech);
    const { data: stream, response } = await client.audio.transcriptions.create({ model: 'fast-transcription', file: await file(), stream: true }).withResponse();
    for await (const _ of stream) void _;
    answers.push(response);
    const served = await Promise.all(answers.map((r) => servedEndpoint(gw, r)));
    expect(served).toEqual(LEARNED.map((f) => ids[f]));
    for (const f of LEARNED) {
      expect(gw.core.endpointStats.latencyMs(ids[f]!), f).not.toBeNull();
      expect(gw.core.endpointStats.inFlight(ids[f]!), f).toBe(0);
    }
  });
});

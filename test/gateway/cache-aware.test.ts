// The gateway runs a cache-aware strategy end to end: two emulated engines, a model whose router
// is llm_d, sglang_cache_aware or dynamo_kv. The gateway hashes each prompt's prefix blocks for
// such a model, so a session's second turn lands where its first turn's prefix went, and a new
// session goes to the other engine (SGLang: the smaller tree; llm-d: no prefix anywhere, the draw).
// Upstreams send the gateway no KV events, so dynamo_kv runs on its approximation: the blocks it
// believes each engine holds are the prefix hashes it sent there.
import { afterAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { endpointId } from '../../core/index.ts';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { routeRequestOf } from '../../gateway/server/route-request.ts';
import { prefixBlockHashes, serializedPrompt } from '../../gateway/request-log/prefix-hashes.ts';
import { DynamoKvPlanner } from '../../core/strategies/dynamo-kv/dynamo-kv.ts';
import { servedEndpoint } from './harness.ts';

const KEY = 'sk-cache-aware';
const running: Array<{ close(): Promise<void> }> = [];
afterAll(async () => {
  for (const r of running.reverse()) await r.close();
});

async function stack(router: string): Promise<{ gw: RunningGateway; emus: RunningEmulator[]; ids: string[] }> {
  const emus = await Promise.all([0, 1].map(() => startEmulator({ mode: 'echo' })));
  running.push(...emus);
  const config = buildGatewayConfig({
    models: { models: [{ id: 'demo', router, route: emus.map((e) => ({ base_url: e.baseUrl })) }] },
    gateway: { routing_settings: { affinity_enabled: false, prefill_aware_enabled: false }, auth: { mode: 'keys', keys: [{ id: 'u', sha256: hashKey(KEY), allowed_models: ['demo'] }] } },
  });
  const gw = await startGateway({ config, host: '127.0.0.1', port: 0, seed: 7, logger: pino({ level: 'silent' }) });
  running.push(gw);
  return { gw, emus, ids: emus.map((e) => endpointId('demo', 'openai_compat', e.baseUrl)) };
}

async function servedBy(gw: RunningGateway, messages: unknown[]): Promise<string> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'demo', messages, max_tokens: 4 }),
  });
  expect(res.status).toBe(200);
  await res.text();
  return (await servedEndpoint(gw, res))!;
}

const system = (topic: string) => ({ role: 'system', content: `${topic}: ${'context '.repeat(1_500)}` }); // ~12 KB: 5 full blocks

describe('gateway: cache-aware strategies end to end', () => {
  for (const router of ['sglang_cache_aware', 'llm_d']) {
    it(`${router}: a session's second turn lands where its prefix is`, async () => {
      const { gw, ids } = await stack(router);
      const turn1 = [system('alpha'), { role: 'user', content: 'first question' }];
      const first = await servedBy(gw, turn1);
      expect(ids).toContain(first);
      const turn2 = [...turn1, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'second question' }];
      for (let i = 0; i < 3; i++) expect(await servedBy(gw, turn2)).toBe(first);
      if (router === 'sglang_cache_aware') expect(await servedBy(gw, [system('beta'), { role: 'user', content: 'q' }])).not.toBe(first);
    });
  }

  it('dynamo_kv: with no KV events from upstreams, overlap comes from the prefix hashes the gateway sent', async () => {
    const { gw, ids } = await stack('dynamo_kv');
    const turn1 = [system('alpha'), { role: 'user', content: 'first question' }];
    const first = await servedBy(gw, turn1);
    expect(ids).toContain(first);
    const planner = gw.core.model('demo')!.planner as DynamoKvPlanner;
    const sent1 = prefixBlockHashes(serializedPrompt({ model: 'demo', messages: turn1, max_tokens: 4 }));
    expect(sent1.length).toBeGreaterThanOrEqual(5);
    // What the planner believes `first` holds is exactly what was sent there; the other holds nothing.
    expect(planner.index.size(first)).toBe(sent1.length);
    expect(planner.index.size(ids.find((i) => i !== first)!)).toBe(0);
    const turn2 = [...turn1, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'second question' }];
    const sent2 = prefixBlockHashes(serializedPrompt({ model: 'demo', messages: turn2, max_tokens: 4 }));
    const shared = planner.index.matchedBlocks(first, sent2, performance.now()); // the gateway's clock
    expect(shared).toBeGreaterThanOrEqual(5); // the system prompt's full blocks
    for (let i = 0; i < 3; i++) expect(await servedBy(gw, turn2)).toBe(first);
    for (const id of ids) expect(gw.core.engineSignals.reportsKvEvents(id)).toBe(false);
  });

  it('routeRequestOf hashes the prompt only when asked, with the request log’s blocks', () => {
    const body = { model: 'demo', messages: [system('alpha')] };
    const req = { model: 'demo', body, stream: false, inputTokens: 3_000, outputTokensHint: null, modalities: [], endpoint: 'chat', family: { endpoint: 'chat' } } as never;
    const meta = { requestId: 'r', sessionId: null, affinityKey: null, pin: null, routingTags: null, clientIp: null, headers: null, cookies: null } as never;
    expect(routeRequestOf(req, meta).prefixHashes).toBeNull();
    const hashes = routeRequestOf(req, meta, true).prefixHashes!;
    expect(hashes).toEqual(prefixBlockHashes(serializedPrompt(body)));
    expect(hashes.length).toBeGreaterThanOrEqual(5);
  });
});

// Three gateways in one process (distinct seeds, each with its own Redis clients) over three
// equal upstreams with session affinity on: a caller whose requests alternate between the
// replicas stays on the endpoint its first request was pinned to.
import pino from 'pino';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig } from '../../gateway/config/load.ts';
import { startGateway, type RunningGateway } from '../../gateway/gateway.ts';
import { startEmulator, type RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { hello, KEYS } from '../gateway/harness.ts';

const url = inject('redisUrl');
const skip = inject('redisSkip');
if (skip) console.warn(`affinity tests skipped: ${skip}`);

const gws: RunningGateway[] = [];
const emus: RunningEmulator[] = [];

afterAll(async () => {
  for (const g of gws) await g.close();
  for (const e of emus) await e.close();
});

describe.skipIf(!!skip)('affinity pins shared through Redis', () => {
  it('keeps a caller alternating between replicas on its pinned endpoint', async () => {
    for (let i = 0; i < 3; i++) emus.push(await startEmulator({ faults: { latency_scale: 0.05 } }));
    const config = buildGatewayConfig({
      models: { models: [{ id: 'demo', route: emus.map((e) => ({ base_url: e.baseUrl, weight: 1 })) }] },
      gateway: {
        routing_settings: { affinity_enabled: true, prefill_aware_enabled: false },
        state: { backend: 'redis', url, prefix: `aff${process.pid}:`, max_staleness_ms: 200 },
        auth: { mode: 'keys', keys: [{ id: 'user', sha256: hashKey(KEYS.user) }] },
      },
    });
    for (const seed of [11, 12, 13]) gws.push(await startGateway({ config, host: '127.0.0.1', port: 0, seed, logger: pino({ level: 'silent' }) }));
    const ask = async (g: RunningGateway) => {
      const r = await fetch(`${g.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEYS.user}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'demo', messages: hello, max_tokens: 3 }),
      });
      expect(r.status).toBe(200);
      await r.text();
      return r.headers.get('x-switchyard-served-by');
    };
    const first = await ask(gws[0]!);
    await vi.waitFor(() => expect(gws.map((g) => g.core.affinity.size)).toEqual([1, 1, 1]));
    const served: (string | null)[] = [];
    for (let round = 0; round < 4; round++) for (const g of gws) served.push(await ask(g));
    expect(new Set(served)).toEqual(new Set([first]));
  });
});

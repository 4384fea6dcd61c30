// Three gateway processes (`switchyard gateway`) sharing breakers through Redis, over one failing
// upstream (weight 1000, always 500) and a healthy fallback: one failure reaches each process, and
// together (threshold 3) they shut the failing provider on all three; while it is open no process
// sends to it; after the cooldown exactly one half-open probe reaches it across the processes.
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { askProcess, gatewayDir, PROCESS_KEY, startCountingUpstream, startGatewayProcess, type CountingUpstream, type GatewayProcess } from './gateway-processes.ts';

const url = inject('redisUrl');
const skip = inject('redisSkip');
if (skip) console.warn(`breaker process tests skipped: ${skip}`);

const procs: GatewayProcess[] = [];
const ups: CountingUpstream[] = [];

afterAll(async () => {
  await Promise.all(procs.map((p) => p.stop()));
  await Promise.all(ups.map((u) => u.close()));
});

const stateOf = async (gw: GatewayProcess, base: string): Promise<string> => {
  const deep = (await (await fetch(`${gw.url}/health/deep`, { headers: { authorization: `Bearer ${PROCESS_KEY}` } })).json()) as { endpoints: Array<{ endpointId: string; state: string }> };
  const port = new URL(base).port;
  const ep = deep.endpoints.find((e) => e.endpointId.endsWith(`-${port}`));
  return ep?.state ?? `no endpoint for ${base} in ${JSON.stringify(deep.endpoints)}`;
};

describe.skipIf(!!skip)('three gateway processes sharing breakers through Redis', () => {
  it('count failures across processes, shut the provider on all, and send one probe after the cooldown', async () => {
    const bad = await startCountingUpstream(0, () => 500);
    const good = await startCountingUpstream(0);
    ups.push(bad, good);
    const models = `models:\n  - id: m\n    route:\n      - base_url: ${bad.baseUrl}\n        weight: 1000\n      - base_url: ${good.baseUrl}\n        weight: 1\n`;
    const extra = [
      'routing_settings:\n  affinity_enabled: false\n  prefill_aware_enabled: false',
      'health:\n  failure_threshold: 3\n  cooldown_sec: 3',
      `state:\n  backend: redis\n  url: ${url}\n  prefix: "brkp${process.pid}:"\n  acquire_timeout_ms: 200\n  max_staleness_ms: 200`,
      '',
    ].join('\n');
    const dir = gatewayDir(models, extra);
    procs.push(...(await Promise.all([0, 1, 2].map(() => startGatewayProcess(dir)))));
    // One failure per process: none reaches the threshold alone, together they do.
    for (const p of procs) expect(await askProcess(p)).toBe(200);
    expect(bad.hits).toBe(3);
    await vi.waitFor(async () => expect(await Promise.all(procs.map((p) => stateOf(p, bad.baseUrl)))).toEqual(['open', 'open', 'open']), { timeout: 5_000, interval: 50 });
    for (let round = 0; round < 3; round++) for (const p of procs) expect(await askProcess(p)).toBe(200);
    expect(bad.hits).toBe(3);
    // After the cooldown: traffic on every process until the one probe has gone out …
    await vi.waitFor(
      async () => {
        for (const p of procs) await askProcess(p);
        expect(bad.hits).toBeGreaterThanOrEqual(4);
      },
      { timeout: 10_000, interval: 100 },
    );
    // … and a while longer: still that one (it failed, so the provider is shut again everywhere).
    for (let round = 0; round < 5; round++) for (const p of procs) expect(await askProcess(p)).toBe(200);
    expect(bad.hits).toBe(4);
  });
});

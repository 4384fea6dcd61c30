// Three gateway processes (`switchyard gateway`, each its own Node process and Redis clients) share
// one provider key whose outbound limit is 3 (`upstream_concurrency_initial_limit` = max = 3).
// Under load spread over the three, the upstream never sees more than 3 requests at once: the
// limit holds replica-wide, not once per replica (3 × 3 without the shared leases).
import { afterAll, describe, expect, inject, it } from 'vitest';
import { askProcess, gatewayDir, startCountingUpstream, startGatewayProcess, type CountingUpstream, type GatewayProcess } from './gateway-processes.ts';

const url = inject('redisUrl');
const skip = inject('redisSkip');
if (skip) console.warn(`outbound replica tests skipped: ${skip}`);

const procs: GatewayProcess[] = [];
let up: CountingUpstream | null = null;

afterAll(async () => {
  await Promise.all(procs.map((p) => p.stop()));
  await up?.close();
});

describe.skipIf(!!skip)('three gateway processes sharing outbound limits through Redis', () => {
  it("keep a key's concurrency at the upstream within its outbound limit under load", async () => {
    const LIMIT = 3;
    up = await startCountingUpstream(60);
    const models = `models:\n  - id: m\n    route:\n      - base_url: ${up.baseUrl}\n        local: false\n        api_key: sk-upstream\n`;
    const extra = [
      'routing_settings:',
      `  upstream_concurrency_initial_limit: ${LIMIT}`,
      `  upstream_concurrency_max_limit: ${LIMIT}`,
      '  affinity_enabled: false',
      'health:\n  failure_threshold: 1000',
      `state:\n  backend: redis\n  url: ${url}\n  prefix: "outp${process.pid}:"\n  acquire_timeout_ms: 100\n  max_staleness_ms: 200`,
      '',
    ].join('\n');
    const dir = gatewayDir(models, extra);
    procs.push(...(await Promise.all([0, 1, 2].map(() => startGatewayProcess(dir)))));
    const statuses: number[] = [];
    // Two waves of 45 concurrent requests, round robin over the replicas.
    for (let wave = 0; wave < 2; wave++) {
      statuses.push(...(await Promise.all(Array.from({ length: 45 }, (_, i) => askProcess(procs[i % 3]!)))));
    }
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(up.hits).toBe(90);
    expect(up.maxInFlight).toBeLessThanOrEqual(LIMIT);
    expect(up.maxInFlight).toBeGreaterThanOrEqual(2); // the shares are used, not starved
  });
});

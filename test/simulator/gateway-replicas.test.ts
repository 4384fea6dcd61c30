// Gateway replicas in the simulator: N cores behind a load balancer, sharing breakers, the probe
// claim, pins and outbound limits through delayed sync events — or nothing.
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { readTrace } from '../../traces/arrow-trace.ts';
import type { TraceRow } from '../../traces/trace-row.ts';
import { replicaFactory } from '../../simulator/engine/replica-config.ts';
import { parseExperiment } from '../../simulator/experiment.ts';
import { replayRun, type RunResult } from '../../simulator/replay.ts';
import { GatewayPicker, SharedStore } from '../../simulator/replay/gateways.ts';
import { selectRows } from '../../simulator/sim-command.ts';
import { azureConv, mixedExperiment } from './fixtures.ts';

let allRows: TraceRow[];
beforeAll(async () => {
  allRows = (await readTrace(azureConv)).rows;
});

/** deepinfra answers 503 to every attempt from 10 s to 40 s. */
const OUTAGE = { kind: 'error_burst', endpoint: 'deepinfra', status: 503, from_ms: 10_000, to_ms: 40_000 };
const HEALTH = { failure_threshold: 3, cooldown_ms: 5_000 };

function run(over: Record<string, unknown>, seed = 5, checkInvariants = false): RunResult {
  const exp = mixedExperiment({ health: HEALTH, faults: [OUTAGE], ...over });
  return replayRun({
    experiment: exp,
    rows: selectRows(allRows, exp),
    run: { strategy: 'round_robin', params: {}, label: 'round_robin' },
    runId: 'r',
    seed,
    makeReplica: replicaFactory(exp.replicas, 512),
    checkInvariants,
  });
}

const gateways = (count: number, state: 'local' | 'shared', delay = 0, lb = 'round_robin') => ({
  gateway_replicas: { count, state, load_balancer: lb, ...(state === 'shared' && { propagation_delay_ms: delay }) },
});
const failedAt = (r: RunResult, ep: string) => r.attempts.filter((a) => a.endpointId === ep && a.status === 503);
const syncOpens = (r: RunResult) => r.events.filter((e) => e.kind === 'sync' && JSON.parse(e.detailJson).event === 'breaker_opened');
const strip = (r: RunResult) => ({ requests: r.requests, attempts: r.attempts, events: r.events, samples: r.samples });

describe('gateway_replicas: schema', () => {
  const base = { name: 'x', trace: azureConv, model: 'm', replicas: { count: 1, profile: 'llama2-70b-h100-tp4' }, runs: [{ strategy: 'fixed' }], output: 'o.duckdb' };

  it('defaults to one gateway with local state', () => {
    expect(parseExperiment(base, 'x.yaml').gateway_replicas).toEqual({ count: 1, load_balancer: 'round_robin', state: 'local', propagation_delay_ms: 0 });
  });

  it('refuses a propagation delay without shared state, naming the field and the fix', () => {
    expect(() => parseExperiment({ ...base, gateway_replicas: { count: 4, propagation_delay_ms: 50 } }, 'x.yaml')).toThrow(/gateway_replicas\.propagation_delay_ms: applies to state: shared only; set state: shared/);
    expect(() => parseExperiment({ ...base, runs: [{ strategy: 'fixed', gateway_replicas: { propagation_delay_ms: 50 } }] }, 'x.yaml')).toThrow(/runs\.0\.gateway_replicas\.propagation_delay_ms: applies to state: shared only/);
  });

  it('names the allowed load balancers', () => {
    expect(() => parseExperiment({ ...base, gateway_replicas: { load_balancer: 'least_conn' } }, 'x.yaml')).toThrow(/gateway_replicas\.load_balancer:.*random.*round_robin.*sticky_caller/);
  });
});

describe('gateway_replicas: load balancer', () => {
  it('sticky_caller keeps a caller on one replica over requests and tries; every policy stays in range', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 16 }), fc.string(), fc.array(fc.tuple(fc.nat(10_000), fc.nat(3)), { minLength: 1, maxLength: 20 }), fc.integer(), (n, caller, tries, seed) => {
        const sticky = new GatewayPicker('sticky_caller', n, seed);
        const first = sticky.pick(0, 0, caller);
        for (const [req, tryNo] of tries) expect(sticky.pick(req, tryNo, caller)).toBe(first);
        for (const lb of ['random', 'round_robin'] as const) {
          const p = new GatewayPicker(lb, n, seed);
          for (const [req, tryNo] of tries) {
            const g = p.pick(req, tryNo, caller);
            expect(Number.isInteger(g) && g >= 0 && g < n).toBe(true);
          }
        }
      }),
    );
  });

  it('round_robin cycles in order; random is a keyed draw (same request and try, same replica)', () => {
    const rr = new GatewayPicker('round_robin', 3, 1);
    expect([0, 1, 2, 3, 4].map((i) => rr.pick(i, 0, 'c'))).toEqual([0, 1, 2, 0, 1]);
    const a = new GatewayPicker('random', 4, 9);
    const b = new GatewayPicker('random', 4, 9);
    const picks = Array.from({ length: 400 }, (_, i) => a.pick(i, 0, 'c'));
    expect(Array.from({ length: 400 }, (_, i) => b.pick(399 - i, 0, 'c')).reverse()).toEqual(picks);
    for (let g = 0; g < 4; g++) expect(picks.filter((x) => x === g).length).toBeGreaterThan(60); // about 100 each
  });
});

describe('gateway_replicas: the shared store', () => {
  it('opens once at the threshold counted across replicas, and only the probe holder closes it', () => {
    const st = new SharedStore(3, 1000);
    expect(st.report(0, { kind: 'failure_counted', endpointId: 'e', count: 1 }, 0)).toEqual([]);
    expect(st.report(1, { kind: 'failure_counted', endpointId: 'e', count: 1 }, 1)).toEqual([]);
    expect(st.report(2, { kind: 'failure_counted', endpointId: 'e', count: 1 }, 2)).toEqual([{ kind: 'breaker_opened', endpointId: 'e', untilMs: 1002 }]);
    expect(st.report(3, { kind: 'failure_counted', endpointId: 'e', count: 3 }, 3)).toEqual([]); // already open
    expect(st.claimProbe(1, 'e', 1001, 1001)).toBe(true);
    expect(st.claimProbe(2, 'e', 1001, 1001)).toBe(false);
    expect(st.report(2, { kind: 'success_counted', endpointId: 'e' }, 1100)).toEqual([]);
    expect(st.report(1, { kind: 'success_counted', endpointId: 'e' }, 1100)).toEqual([{ kind: 'breaker_closed', endpointId: 'e' }]);
    expect(st.isOpen('e', 1100)).toBe(false);
  });
});

describe('gateway_replicas: replay', () => {
  it('one gateway gives exactly the rows of a run without the block, whatever its other fields', () => {
    const plain = run({});
    expect(strip(run(gateways(1, 'shared', 500, 'random')))).toEqual(strip(plain));
    expect(strip(run({ gateway_replicas: { count: 1 } }))).toEqual(strip(plain));
  });

  it('is deterministic: same seed, same rows (4 shared replicas, random balancer, 50 ms delay), invariants held', () => {
    const a = run(gateways(4, 'shared', 50, 'random'), 11, true);
    const b = run(gateways(4, 'shared', 50, 'random'), 11);
    expect(strip(a)).toEqual(strip(b));
    expect(a.requests.length).toBe(300);
  });

  it('shared state with 0 ms opens every replica after the threshold counted across them: fewer failed attempts than local', () => {
    const ep = 'm:deepinfra';
    const local = run(gateways(4, 'local'));
    const shared = run(gateways(4, 'shared', 0));
    expect(failedAt(shared, ep).length).toBeLessThan(failedAt(local, ep).length);
    const open = syncOpens(shared).find((e) => e.endpointId === ep)!;
    const ends = failedAt(shared, ep).map((a) => a.endMs).sort((x, y) => x - y);
    // The third failure, wherever it was served, opens it (at the same virtual ms, delay 0).
    expect(open.atMs).toBe(ends[HEALTH.failure_threshold - 1]);
    // Every replica's breaker opens then, by the shared fact (`degraded`), not by its own count.
    const opened = shared.events.filter((e) => e.kind === 'breaker' && e.endpointId === ep && e.atMs === open.atMs).map((e) => JSON.parse(e.detailJson));
    expect(new Set(opened.filter((d) => d.to === 'open').map((d) => d.gateway))).toEqual(new Set([0, 1, 2, 3]));
    // Local: no replica opens until it counted its own threshold.
    const firstLocal = local.events.find((e) => e.kind === 'breaker' && e.endpointId === ep && JSON.parse(e.detailJson).to === 'open')!;
    expect(JSON.parse(firstLocal.detailJson).reason).toBe('consecutive_failures');
    expect(syncOpens(local)).toEqual([]);
  });

  it('a propagation delay moves the shared open by exactly that delay after the failure that reached the threshold', () => {
    const ep = 'm:deepinfra';
    for (const delay of [0, 50, 500]) {
      const r = run(gateways(4, 'shared', delay));
      const open = syncOpens(r).find((e) => e.endpointId === ep)!;
      const ends = failedAt(r, ep).map((a) => a.endMs).sort((x, y) => x - y);
      expect(open.atMs).toBe(ends[HEALTH.failure_threshold - 1]! + delay);
      // No replica is told before the delay has passed: every breaker event before it is a replica's own.
      for (const e of r.events.filter((x) => x.kind === 'breaker' && x.endpointId === ep && x.atMs < open.atMs)) {
        expect(JSON.parse(e.detailJson).reason).not.toBe('degraded');
      }
    }
  });

  it('one half-open probe across shared replicas per cooldown; local replicas each send their own', () => {
    const ep = 'm:deepinfra';
    const probes = (r: RunResult) => r.events.filter((e) => e.kind === 'breaker' && e.endpointId === ep && JSON.parse(e.detailJson).reason === 'probe_started' && e.atMs < OUTAGE.to_ms);
    const shared = probes(run(gateways(4, 'shared', 0)));
    const local = probes(run(gateways(4, 'local')));
    expect(shared.length).toBeGreaterThan(0);
    expect(local.length).toBeGreaterThan(shared.length);
    const times = shared.map((e) => e.atMs).sort((x, y) => x - y);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(HEALTH.cooldown_ms - 1);
  });

  it('sticky_caller serves every request of a caller on one replica; round_robin spreads them', () => {
    const byCaller = (r: RunResult) => {
      const m = new Map<string, Set<number>>();
      for (const q of r.requests) m.set(q.callerId!, (m.get(q.callerId!) ?? new Set()).add(q.gatewayReplica));
      return m;
    };
    const sticky = run(gateways(4, 'shared', 50, 'sticky_caller'));
    for (const set of byCaller(sticky).values()) expect(set.size).toBe(1);
    expect(new Set(sticky.requests.map((q) => q.gatewayReplica)).size).toBeGreaterThan(1);
    const rr = run(gateways(4, 'shared', 50, 'round_robin'));
    expect([...byCaller(rr).values()].some((set) => set.size > 1)).toBe(true);
  });

  it('outbound limits: local replicas each take the full per-key limit (more 429s at a concurrency-limited provider); shared ones one limit between them', () => {
    const providers = [
      { name: 'deepinfra', profile: 'minimax-m2.5-openrouter/deepinfra' },
      { name: 'minimax', profile: 'minimax-m2.5-openrouter/minimax', limits: { concurrency: 4 } },
    ];
    const over = { providers, faults: [], routing: { upstream_concurrency_initial_limit: 4, upstream_concurrency_max_limit: 4 }, rate_scale: 2 };
    const r429 = (r: RunResult) => r.attempts.filter((a) => a.endpointId === 'm:minimax' && a.status === 429).length;
    const one = r429(run(over));
    const local = r429(run({ ...over, ...gateways(4, 'local') }));
    const shared = r429(run({ ...over, ...gateways(4, 'shared', 0) }));
    expect(one).toBe(0); // the limiter holds 4, the provider allows 4
    expect(shared).toBe(0); // one limit of 4 across the replicas
    expect(local).toBeGreaterThan(0); // 4 × 4 in flight at most
  });
});

/**
 * Micro benchmarks of the routing core's hot operations (tinybench). Each task runs an inner
 * loop of `BATCH` operations per sample so sub-microsecond operations are measured above the
 * timer's resolution; results are ns per operation (median and p99 over samples), plus the
 * ratio to a reference operation (a plain `Map` lookup loop) measured in the same run, so
 * numbers from noisy machines can be compared by ratio.
 */
import { Bench } from 'tinybench';
import { createParser } from 'eventsource-parser';
import { deriveRng, RoutingCore, parseModelsConfig, type Outcome, type StrategyDefinition } from '../core/index.ts';
import { BUILTIN_STRATEGIES, StrategyRegistry } from '../core/strategies/registry.ts';
import { HealthRegistry } from '../core/health/health-registry.ts';

/** Operations per sample: keeps each sample well above timer resolution. */
export const BATCH = 1_000;

/** One benchmark result. */
export interface MicroResult {
  name: string;
  medianNs: number;
  p99Ns: number;
  /** medianNs / the reference op's medianNs in the same run. */
  ratio: number;
}

/** Options of `runMicro`. */
export interface MicroOptions {
  /** Wall ms per task (tinybench `time`). */
  timeMs?: number;
  /** Only tasks whose name contains one of these. */
  only?: string[];
  /** Wrap this strategy with a deliberate busy loop (regression-gate self-test). */
  slowStrategy?: string;
}

const ok: Outcome = { kind: 'ok' };

function coreFor(strategy: string, registry: StrategyRegistry): RoutingCore {
  return new RoutingCore(
    parseModelsConfig({
      models: [{ id: 'm', router: strategy, route: Array.from({ length: 8 }, (_, i) => ({ base_url: `sim://r${i}`, weight: 1 + (i % 3) })) }],
    }),
    { registry },
  );
}

/** A copy of the built-in strategies with `name` slowed by ~20 µs per pick. */
function registryWithSlow(name: string | undefined): StrategyRegistry {
  const defs: StrategyDefinition<any>[] = BUILTIN_STRATEGIES.map((d) =>
    d.name !== name
      ? d
      : {
          ...d,
          create(params: unknown, routes) {
            const inner = d.create(params, routes);
            return {
              ...inner,
              pick(c, r, n, rng) {
                const until = performance.now() + 0.02;
                while (performance.now() < until);
                return inner.pick(c, r, n, rng);
              },
            };
          },
        },
  );
  return new StrategyRegistry(defs);
}

/** Runs the micro suite and returns one row per task (reference first). */
export async function runMicro(opts: MicroOptions = {}): Promise<MicroResult[]> {
  const bench = new Bench({ time: opts.timeMs ?? 300, warmup: true });
  const want = (name: string) => !opts.only || opts.only.some((o) => name.includes(o));

  const map = new Map<string, number>(Array.from({ length: 64 }, (_, i) => [`k${i}`, i]));
  const keys = Array.from({ length: 64 }, (_, i) => `k${i}`);
  let sink = 0;
  bench.add('reference: Map.get', () => {
    for (let i = 0; i < BATCH; i++) sink += map.get(keys[i & 63]!)!;
  });

  const registry = registryWithSlow(opts.slowStrategy);
  for (const def of BUILTIN_STRATEGIES) {
    const name = `decision: ${def.name} over 8 routes`;
    if (!want(name)) continue;
    const core = coreFor(def.name, registry);
    const rng = deriveRng(1, 'bench');
    const request = { requestId: 'x', model: 'm', sessionId: null, callerId: 'c', inputTokens: 1000, outputTokensHint: 100, stream: true, modalities: [], pin: null, prefixHashes: null } as const;
    bench.add(name, () => {
      for (let i = 0; i < BATCH; i++) {
        const { life, actions } = core.start(request, i, rng);
        const d = actions[0]!;
        if (d.kind === 'dispatch') life.step({ kind: 'finished', attemptId: d.attemptId, usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 } }, i);
      }
    });
  }

  if (want('breaker')) {
    const health = new HealthRegistry();
    bench.add('breaker: allow + begin + end', () => {
      for (let i = 0; i < BATCH; i++) {
        const id = keys[i & 7]!;
        if (health.allowRequest(id, i)) health.endDispatch(health.beginDispatch(id, i)!, ok, i);
      }
    });
  }

  if (want('lifecycle')) {
    const core = coreFor('fixed', registry);
    const rng = deriveRng(2, 'bench');
    const request = { requestId: 'x', model: 'm', sessionId: null, callerId: null, inputTokens: 1000, outputTokensHint: 100, stream: true, modalities: [], pin: null, prefixHashes: null } as const;
    bench.add('lifecycle: first_token step', () => {
      for (let i = 0; i < BATCH; i++) {
        const { life, actions } = core.start(request, i, rng);
        const d = actions[0]!;
        if (d.kind !== 'dispatch') continue;
        sink += life.step({ kind: 'first_token', attemptId: d.attemptId }, i).length;
        life.step({ kind: 'client_gone' }, i);
      }
    });
  }

  if (want('sse')) {
    const chunk = `data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'x'.repeat(900) } }] })}\n\n`;
    const bytes = new TextEncoder().encode(chunk);
    const decoder = new TextDecoder();
    const parser = createParser({ onEvent: (e) => (sink += e.data.length) });
    bench.add('sse: parse a 1 KiB chunk', () => {
      for (let i = 0; i < BATCH; i++) parser.feed(decoder.decode(bytes, { stream: true }));
    });
  }

  await bench.run();
  if (sink === -1) console.log(sink); // keep the sink observable so loops are not eliminated
  const rows = bench.tasks.map((t) => {
    const r = t.result as { latency?: { p50: number; p99: number } } | undefined;
    if (!r?.latency) throw new Error(`benchmark '${t.name}' produced no result`);
    return { name: t.name, medianNs: (r.latency.p50 * 1e6) / BATCH, p99Ns: (r.latency.p99 * 1e6) / BATCH };
  });
  const ref = rows[0]!.medianNs;
  return rows.map((r) => ({ ...r, ratio: r.medianNs / ref }));
}

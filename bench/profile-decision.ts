/**
 * CPU-profiling harness for one decision op of `bench/decision-compare.ts` (same setup): runs
 * `RoutingCore.start` plus its `finished` step in a loop for `--seconds` of wall time.
 * Run: `node --cpu-prof --cpu-prof-dir=DIR --import tsx bench/profile-decision.ts --op fixed [--seconds 5]`.
 */
import { parseArgs } from 'node:util';
import { RoutingCore, parseModelsConfig, deriveRng } from '../core/index.ts';
import { StrategyRegistry } from '../core/strategies/registry.ts';

const { values } = parseArgs({ options: { op: { type: 'string', default: 'fixed' }, seconds: { type: 'string', default: '5' } } });
const c = new RoutingCore(
  parseModelsConfig({ models: [{ id: 'm', router: values.op!, route: Array.from({ length: 8 }, (_, i) => ({ base_url: `sim://r${i}`, weight: 1 + (i % 3) })) }] }),
  { registry: new StrategyRegistry() },
);
const rng = deriveRng(1, 'bench');
const request = { requestId: 'x', model: 'm', sessionId: null, callerId: 'c', inputTokens: 1000, outputTokensHint: 100, stream: true, modalities: [], pin: null, prefixHashes: null };
const usage = { inputTokens: 1, outputTokens: 1, cachedTokens: 0 };
let now = 0;
let sink = 0;
const end = Date.now() + Number(values.seconds) * 1000;
while (Date.now() < end) {
  for (let i = 0; i < 10000; i++) {
    const { life, actions } = c.start(request as never, ++now, rng);
    const d = actions[0]!;
    if (d.kind === 'dispatch') sink += life.step({ kind: 'finished', attemptId: d.attemptId, usage }, now).length;
  }
}
console.log(values.op, 'decisions', now, sink);

/**
 * Side-by-side decision benchmark: the micro suite's `decision: <strategy> over 8 routes` ops
 * (one `RoutingCore.start` plus its `finished` step per op, the same setup as `bench/micro.ts`)
 * for this checkout and for another checkout of the repository, loaded into the SAME process and
 * timed in alternating samples, next to the reference op (a `Map.get` loop) timed in between.
 * Absolute times on a shared machine drift by 2×; ratios measured in one run, sample by sample
 * interleaved, hold.
 *
 * Prints per op: ns per decision (median over samples) and ratio to the reference median for
 * both checkouts, and their quotient (this checkout's ratio / the other's; > 1 means slower),
 * plus the median of the per-round quotients of paired samples.
 * Each checkout's `core/` is imported from its own path, so each resolves its own dependencies
 * from its own `node_modules`; only `core/index.ts` and `core/strategies/registry.ts` are read.
 *
 * Run: `npx tsx bench/decision-compare.ts --compare-root /path/to/other/checkout
 *       [--samples 200] [--only least_busy,least_latency]`.
 * @throws Error when `--compare-root` is missing or is not a checkout with `core/index.ts`.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

/** Decisions per timed sample: keeps each sample (~100 µs) well above timer resolution. */
const BATCH = 1_000;

const { values } = parseArgs({
  options: { 'compare-root': { type: 'string' }, samples: { type: 'string' }, only: { type: 'string' } },
});
const otherRoot = values['compare-root'];
if (otherRoot === undefined || !existsSync(join(otherRoot, 'core', 'index.ts'))) {
  throw new Error(`--compare-root must name a checkout containing core/index.ts (got ${otherRoot ?? 'nothing'}); e.g. --compare-root /work/wt-base`);
}
const samples = Number(values.samples ?? 200);
if (!Number.isInteger(samples) || samples < 10) throw new Error(`--samples must be an integer ≥ 10 (got ${values.samples})`);
const only = values.only?.split(',').filter((s) => s !== '');

/** What one checkout contributes: its strategy names and a factory of timed decision loops. */
interface Checkout {
  label: string;
  strategies: string[];
  /** A function running BATCH decisions of `strategy` on one long-lived core. */
  op(strategy: string): () => void;
}

let sink = 0;

async function load(label: string, root: string): Promise<Checkout> {
  const url = (p: string) => pathToFileURL(join(resolve(root), p)).href;
  const core = await import(url('core/index.ts'));
  const registry = await import(url('core/strategies/registry.ts'));
  const strategies: string[] = registry.BUILTIN_STRATEGIES.map((d: { name: string }) => d.name);
  return {
    label,
    strategies,
    op(strategy) {
      const c = new core.RoutingCore(
        core.parseModelsConfig({
          models: [{ id: 'm', router: strategy, route: Array.from({ length: 8 }, (_, i) => ({ base_url: `sim://r${i}`, weight: 1 + (i % 3) })) }],
        }),
        { registry: new registry.StrategyRegistry() },
      );
      const rng = core.deriveRng(1, 'bench');
      const request = { requestId: 'x', model: 'm', sessionId: null, callerId: 'c', inputTokens: 1000, outputTokensHint: 100, stream: true, modalities: [], pin: null, prefixHashes: null };
      const usage = { inputTokens: 1, outputTokens: 1, cachedTokens: 0 };
      let now = 0;
      return () => {
        for (let i = 0; i < BATCH; i++) {
          const { life, actions } = c.start(request, ++now, rng);
          const d = actions[0];
          if (d.kind === 'dispatch') sink += life.step({ kind: 'finished', attemptId: d.attemptId, usage }, now).length;
        }
      };
    },
  };
}

const here = await load('this', join(import.meta.dirname, '..'));
const other = await load('other', otherRoot);

const map = new Map<string, number>(Array.from({ length: 64 }, (_, i) => [`k${i}`, i]));
const keys = Array.from({ length: 64 }, (_, i) => `k${i}`);
const reference = (): void => {
  for (let b = 0; b < BATCH; b++) sink += map.get(keys[b & 63]!)!;
};

const names = here.strategies.filter((s) => other.strategies.includes(s) && (!only || only.includes(s)));
interface Task {
  key: string;
  run: () => void;
  ns: number[];
}
const tasks: Task[] = [{ key: 'reference', run: reference, ns: [] }];
for (const s of names) {
  tasks.push({ key: `other ${s}`, run: other.op(s), ns: [] });
  tasks.push({ key: `this ${s}`, run: here.op(s), ns: [] });
}

const time = (t: Task): number => {
  const t0 = performance.now();
  t.run();
  return ((performance.now() - t0) * 1e6) / BATCH;
};

// Warm-up: every op until its JIT tiers settle, untimed.
for (let w = 0; w < 30; w++) for (const t of tasks) t.run();
// Timed rounds: one sample of every op per round, reference between each pair, and the order of
// the two checkouts flipped every round so neither always runs first.
for (let r = 0; r < samples; r++) {
  for (let k = 1; k < tasks.length; k += 2) {
    const pair = r % 2 === 0 ? [tasks[k]!, tasks[k + 1]!] : [tasks[k + 1]!, tasks[k]!];
    tasks[0]!.ns.push(time(tasks[0]!));
    for (const t of pair) t.ns.push(time(t));
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};
const refNs = median(tasks[0]!.ns);
const fmt = (x: number) => Number(x.toPrecision(4));
const rows = names.map((s) => {
  const os = tasks.find((t) => t.key === `other ${s}`)!.ns;
  const o = median(os);
  const hs = tasks.find((t) => t.key === `this ${s}`)!.ns;
  const h = median(hs);
  // Paired: this sample over the other's sample of the same round, whose time is within a few
  // hundred µs of it (cancels drift of the machine's load over the run).
  const paired = median(hs.map((x, r) => x / os[r]!));
  return { op: `decision: ${s}`, 'other ns': fmt(o), 'this ns': fmt(h), 'other ratio': fmt(o / refNs), 'this ratio': fmt(h / refNs), 'this/other': fmt(h / o), 'paired this/other': fmt(paired) };
});
console.log(`reference Map.get: ${fmt(refNs)} ns/op; other = ${resolve(otherRoot)}; ${samples} samples of ${BATCH} per op`);
console.table(rows);
if (sink === -1) console.log(sink); // keeps the loops observable

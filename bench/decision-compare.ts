/**
 * Side-by-side decision benchmark: the micro suite's `decision: <strategy> over 8 routes` ops
 * (one `RoutingCore.start` plus its `finished` step per op, the same setup as `bench/micro.ts`)
 * for this checkout and for another checkout of the repository, next to the reference op (a
 * `Map.get` loop).
 *
 * Each side runs in its own child process, so neither side's inline caches, hidden classes,
 * garbage or JIT decisions reach the other's. A third process loads THIS checkout again: the
 * control. Its quotient against this checkout must read ~1.00; its spread is the measurement's
 * own noise, printed next to every result of the same run.
 * - Timing is CPU time of the child (`process.cpuUsage`, user + system, µs), so time the
 *   machine gives to other work does not count. Children run V8 with `--single-threaded`
 *   (compiler and GC on the main thread), so the process's CPU time is the op's own.
 * - Each sample is one batch of decisions sized to take about `--batch-ms` of CPU. Short batches
 *   on purpose: on a shared VM the same batch runs up to ~2× slower for stretches of ~100 ms
 *   (neighbours' load), so the three batches of a pair must run within a few ms of each other;
 *   many short pairs and a median beat few long ones.
 * - Warm-up: every op runs until its batch time settles (median of the last 5 batches within
 *   2 % of the 5 before) or for 3 s at most, untimed.
 * - Rounds: each round takes every op once, ops in random order; for each op the three processes
 *   run one batch each in a random order. A round's quotient pairs batches run within tens of ms
 *   of each other. Each process also times the reference once per round.
 *
 * Prints per op: ns per decision (median) and ratio to the reference for both sides, then the
 * median of the paired quotients (this / other; > 1 means this checkout is slower) with its
 * interquartile range and a 95 % confidence interval of the median (order statistics), and the
 * same for the control (control / this).
 *
 * Run: `npx tsx bench/decision-compare.ts --compare-root /path/to/other/checkout
 *       [--rounds 200] [--batch-ms 2] [--only least_busy,fixed] [--threads] [--v8-flags=...]`.
 * `--threads` keeps V8's background threads (then CPU time includes their work); `--v8-flags`
 * adds flags to the children's command line (space-separated, e.g. `--v8-flags=--max-semi-space-size=1`).
 * @throws Error when `--compare-root` is missing or is not a checkout with `core/index.ts`.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

/** Parent → child: build ops, run warm-up, or time one batch. */
type Command =
  | { cmd: 'load'; root: string }
  | { cmd: 'warm'; op: string; n: number }
  | { cmd: 'time'; op: string; n: number };
/** Child → parent: strategy names after `load`; CPU µs of the batch after `warm`/`time`. */
type Reply = { strategies: string[] } | { cpuUs: number };

const REFERENCE = 'reference';

// ---------------------------------------------------------------------------------------------
// Child: one checkout's ops.

async function child(): Promise<void> {
  const ops = new Map<string, (n: number) => void>();
  let sink = 0;
  const send = (r: Reply) => process.send!(r);
  process.on('message', async (m: Command) => {
    if (typeof m !== 'object' || m === null || !('cmd' in m)) return;
    if (m.cmd === 'load') {
      const url = (p: string) => pathToFileURL(join(resolve(m.root), p)).href;
      const core = await import(url('core/index.ts'));
      const registry = await import(url('core/strategies/registry.ts'));
      const strategies: string[] = registry.BUILTIN_STRATEGIES.map((d: { name: string }) => d.name);
      for (const strategy of strategies) {
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
        ops.set(strategy, (n) => {
          for (let i = 0; i < n; i++) {
            const { life, actions } = c.start(request, ++now, rng);
            const d = actions[0];
            if (d.kind === 'dispatch') sink += life.step({ kind: 'finished', attemptId: d.attemptId, usage }, now).length;
          }
        });
      }
      const map = new Map<string, number>(Array.from({ length: 64 }, (_, i) => [`k${i}`, i]));
      const keys = Array.from({ length: 64 }, (_, i) => `k${i}`);
      ops.set(REFERENCE, (n) => {
        for (let b = 0; b < n; b++) sink += map.get(keys[b & 63]!)!;
      });
      send({ strategies });
      return;
    }
    const op = ops.get(m.op)!;
    const t0 = process.cpuUsage();
    op(m.n);
    const t = process.cpuUsage(t0);
    send({ cpuUs: t.user + t.system + (sink === -1 ? 1 : 0) });
  });
}

// ---------------------------------------------------------------------------------------------
// Parent: orchestrates the three children and prints the table.

/** A child process with a request/response call. */
class Side {
  private readonly proc: ChildProcess;
  private pending: ((r: Reply) => void) | null = null;
  constructor(readonly label: string, threads: boolean, v8Flags: string[]) {
    const execArgv = [...process.execArgv, ...(threads ? [] : ['--single-threaded']), ...v8Flags];
    this.proc = fork(import.meta.filename, ['--child'], { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.proc.on('message', (r: Reply) => {
      // tsx's own loader also talks over this channel; only replies to a command count.
      if (typeof r !== 'object' || r === null || !('cpuUs' in r || 'strategies' in r)) return;
      const p = this.pending!;
      this.pending = null;
      p(r);
    });
    this.proc.on('exit', (code) => {
      if (this.pending !== null) throw new Error(`${label} child exited (${code}) mid-command`);
    });
  }
  call(c: Command): Promise<Reply> {
    return new Promise((res) => {
      this.pending = res;
      this.proc.send(c);
    });
  }
  async cpuUs(c: Command): Promise<number> {
    return ((await this.call(c)) as { cpuUs: number }).cpuUs;
  }
  close(): void {
    this.proc.disconnect();
  }
}

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  return s[lo]! + (s[Math.min(lo + 1, s.length - 1)]! - s[lo]!) * (pos - lo);
};
const median = (xs: number[]) => quantile(xs, 0.5);
/** 95 % CI of the median from order statistics: ranks n/2 ∓ 0.98·√n (normal approximation). */
const medianCi = (xs: number[]): [number, number] => {
  const s = [...xs].sort((a, b) => a - b);
  const h = 0.98 * Math.sqrt(s.length);
  return [s[Math.max(0, Math.floor(s.length / 2 - h))]!, s[Math.min(s.length - 1, Math.ceil(s.length / 2 + h))]!];
};
/** Fisher–Yates with Math.random: the orders only need to vary, not to replay. */
const shuffled = <T>(xs: T[]): T[] => {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
};

async function parent(): Promise<void> {
  const { values } = parseArgs({
    options: {
      'compare-root': { type: 'string' },
      rounds: { type: 'string' },
      'batch-ms': { type: 'string' },
      only: { type: 'string' },
      threads: { type: 'boolean' },
      'v8-flags': { type: 'string' },
    },
  });
  const otherRoot = values['compare-root'];
  if (otherRoot === undefined || !existsSync(join(otherRoot, 'core', 'index.ts'))) {
    throw new Error(`--compare-root must name a checkout containing core/index.ts (got ${otherRoot ?? 'nothing'}); e.g. --compare-root /work/wt-base`);
  }
  const rounds = Number(values.rounds ?? 200);
  if (!Number.isInteger(rounds) || rounds < 10) throw new Error(`--rounds must be an integer ≥ 10 (got ${values.rounds})`);
  const batchMs = Number(values['batch-ms'] ?? 2);
  if (!(batchMs >= 1)) throw new Error(`--batch-ms must be ≥ 1 (got ${values['batch-ms']})`);
  const only = values.only?.split(',').filter((s) => s !== '');
  const threads = values.threads === true;
  const thisRoot = join(import.meta.dirname, '..');

  const v8Flags = (values['v8-flags'] ?? '').split(' ').filter((f) => f !== '');
  const sides = { this: new Side('this', threads, v8Flags), other: new Side('other', threads, v8Flags), control: new Side('control', threads, v8Flags) };
  const all = [sides.this, sides.other, sides.control];
  const roots = new Map([[sides.this, thisRoot], [sides.other, otherRoot], [sides.control, thisRoot]]);
  const lists = await Promise.all(all.map(async (s) => ((await s.call({ cmd: 'load', root: roots.get(s)! })) as { strategies: string[] }).strategies));
  const names = lists[0]!.filter((s) => lists[1]!.includes(s) && (!only || only.includes(s)));
  const ops = [REFERENCE, ...names];

  // Batch size per op: decisions for ~batchMs of CPU on the other side, after a first warm-up.
  const n = new Map<string, number>();
  for (const op of ops) {
    let k = op === REFERENCE ? 10_000 : 200;
    for (let i = 0; i < 5; i++) for (const s of all) await s.cpuUs({ cmd: 'warm', op, n: k });
    const us: number[] = [];
    for (let i = 0; i < 3; i++) us.push(await sides.other.cpuUs({ cmd: 'time', op, n: k }));
    n.set(op, Math.max(1, Math.ceil((k * batchMs * 1_000) / Math.max(median(us), 1))));
  }
  // Warm-up until each side's batch time settles.
  for (const op of ops) {
    for (const s of all) {
      const ts: number[] = [];
      let spent = 0;
      for (;;) {
        const us = await s.cpuUs({ cmd: 'warm', op, n: n.get(op)! });
        ts.push(us);
        spent += us;
        if (spent > 3e6) break;
        if (ts.length >= 10 && Math.abs(median(ts.slice(-5)) / median(ts.slice(-10, -5)) - 1) < 0.02) break;
      }
    }
  }

  const samples = new Map<Side, Map<string, number[]>>(all.map((s) => [s, new Map(ops.map((o) => [o, []]))]));
  for (let r = 0; r < rounds; r++) {
    for (const op of shuffled(ops)) {
      for (const s of shuffled(all)) samples.get(s)!.get(op)!.push(((await s.cpuUs({ cmd: 'time', op, n: n.get(op)! })) * 1_000) / n.get(op)!);
    }
  }
  for (const s of all) s.close();

  const fmt = (x: number) => Number(x.toPrecision(4));
  const get = (s: Side, op: string) => samples.get(s)!.get(op)!;
  const pairs = (a: number[], b: number[]) => a.map((x, i) => x / b[i]!);
  const spread = (q: number[]) => {
    const [lo, hi] = medianCi(q);
    return { med: fmt(median(q)), iqr: `${fmt(quantile(q, 0.25))}–${fmt(quantile(q, 0.75))}`, ci: `${fmt(lo)}–${fmt(hi)}` };
  };
  const refThis = median(get(sides.this, REFERENCE));
  const refOther = median(get(sides.other, REFERENCE));
  const rows = names.map((op) => {
    const h = get(sides.this, op);
    const o = get(sides.other, op);
    const q = spread(pairs(h, o));
    const c = spread(pairs(get(sides.control, op), h));
    return {
      op: `decision: ${op}`,
      'other ns': fmt(median(o)),
      'this ns': fmt(median(h)),
      'other ratio': fmt(median(o) / refOther),
      'this ratio': fmt(median(h) / refThis),
      'ratio quotient': fmt(median(h) / refThis / (median(o) / refOther)),
      'paired this/other': q.med,
      'IQR': q.iqr,
      '95% CI': q.ci,
      'control/this': c.med,
      'control IQR': c.iqr,
      'control CI': c.ci,
    };
  });
  const refQ = spread(pairs(get(sides.this, REFERENCE), get(sides.other, REFERENCE)));
  console.log(
    `other = ${resolve(otherRoot)}; ${rounds} rounds; CPU time per batch of ~${batchMs} ms; ${threads ? 'V8 background threads on' : 'V8 --single-threaded'}\n` +
      `reference Map.get: this ${fmt(refThis)} ns/op, other ${fmt(refOther)} ns/op, paired this/other ${refQ.med} (IQR ${refQ.iqr})`,
  );
  console.table(rows);
}

if (process.argv.includes('--child')) await child();
else await parent();

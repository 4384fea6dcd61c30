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
 * - Each sample is one batch sized to take about `--batch-ms` of CPU. Short batches on purpose:
 *   on a shared VM the same batch runs up to ~2× slower for stretches of ~100 ms (neighbours'
 *   load), so the three batches of a pair must run within a few ms of each other; many short
 *   pairs and a median beat few long ones.
 * - One process pair carries a bias of its own of up to ~±8 % (code layout, JIT timing) that
 *   no number of samples removes, so the rounds are split over `--processes` fresh sets of the
 *   three processes and pooled; the table shows each set's median next to the pooled one.
 * - Warm-up, per set: every op runs until its batch time settles (median of the last 5 batches
 *   within 2 % of the 5 before) or for 3 s at most, untimed.
 * - Rounds: each round takes every op once, ops in random order; for each op the three processes
 *   run one batch each, in random order. Each process times the reference once per round.
 *
 * Prints per op: ns per decision (pooled median) for both sides; `ratio quot.`, this side's
 * ratio to its reference over the other's (the figure the gate names); `this/other`,
 * the median of the paired quotients (> 1: this checkout is slower), their interquartile range
 * and the range of the per-set medians; and the same three for the control (control / this).
 *
 * Run: `npx tsx bench/decision-compare.ts --compare-root /path/to/other/checkout
 *       [--rounds 240] [--processes 6] [--batch-ms 2] [--only least_busy,fixed] [--threads]
 *       [--v8-flags=...]`.
 * `--threads` keeps V8's background threads (then CPU time includes their work); `--v8-flags`
 * adds flags to the children's command line (space-separated, e.g. `--v8-flags=--max-semi-space-size=1`).
 * @throws Error when `--compare-root` is missing or is not a checkout with `core/index.ts`, or
 * when `--rounds`, `--processes` or `--batch-ms` is out of range.
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
const pairs = (a: number[], b: number[]) => a.map((x, i) => x / b[i]!);
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
      processes: { type: 'string' },
    },
  });
  const otherRoot = values['compare-root'];
  if (otherRoot === undefined || !existsSync(join(otherRoot, 'core', 'index.ts'))) {
    throw new Error(`--compare-root must name a checkout containing core/index.ts (got ${otherRoot ?? 'nothing'}); e.g. --compare-root /work/wt-base`);
  }
  const rounds = Number(values.rounds ?? 240);
  if (!Number.isInteger(rounds) || rounds < 10) throw new Error(`--rounds must be an integer ≥ 10 (got ${values.rounds})`);
  const batchMs = Number(values['batch-ms'] ?? 2);
  if (!(batchMs >= 1)) throw new Error(`--batch-ms must be ≥ 1 (got ${values['batch-ms']})`);
  const only = values.only?.split(',').filter((s) => s !== '');
  const threads = values.threads === true;
  const thisRoot = join(import.meta.dirname, '..');

  const processes = Number(values.processes ?? 6);
  if (!Number.isInteger(processes) || processes < 1 || rounds < processes * 10) throw new Error(`--processes must be an integer ≥ 1 with ≥ 10 rounds each (got ${values.processes}, ${rounds} rounds)`);
  const v8Flags = (values['v8-flags'] ?? '').split(' ').filter((f) => f !== '');

  const ROLES = ['this', 'other', 'control'] as const;
  type Role = (typeof ROLES)[number];
  const rootOf: Record<Role, string> = { this: thisRoot, other: otherRoot, control: thisRoot };
  let names: string[] = [];
  let ops: string[] = [];
  /** Decisions (or Map.gets) per batch, per op: fixed by the first set of processes. */
  const n = new Map<string, number>();
  /** Pooled ns per op call, per role and op; and each set of processes' median paired quotients. */
  const samples = new Map<Role, Map<string, number[]>>(ROLES.map((r) => [r, new Map()]));
  const epochMedians = new Map<string, { q: number[]; c: number[] }>();

  for (let e = 0; e < processes; e++) {
    const sides = new Map(ROLES.map((r) => [r, new Side(r, threads, v8Flags)]));
    const all = [...sides.values()];
    const lists = await Promise.all(ROLES.map(async (r) => ((await sides.get(r)!.call({ cmd: 'load', root: rootOf[r] })) as { strategies: string[] }).strategies));
    if (e === 0) {
      names = lists[0]!.filter((s) => lists[1]!.includes(s) && (!only || only.includes(s)));
      ops = [REFERENCE, ...names];
      for (const r of ROLES) for (const op of ops) samples.get(r)!.set(op, []);
      for (const op of names) epochMedians.set(op, { q: [], c: [] });
      // Batch size per op: calls for ~batchMs of CPU on the other side, after a first warm-up.
      for (const op of ops) {
        const k = op === REFERENCE ? 10_000 : 200;
        for (let i = 0; i < 5; i++) for (const s of all) await s.cpuUs({ cmd: 'warm', op, n: k });
        const us: number[] = [];
        for (let i = 0; i < 3; i++) us.push(await sides.get('other')!.cpuUs({ cmd: 'time', op, n: k }));
        n.set(op, Math.max(1, Math.ceil((k * batchMs * 1_000) / Math.max(median(us), 1))));
      }
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
    const mine = new Map<Role, Map<string, number[]>>(ROLES.map((r) => [r, new Map(ops.map((o) => [o, []]))]));
    const share = Math.floor(rounds / processes) + (e < rounds % processes ? 1 : 0);
    for (let r = 0; r < share; r++) {
      for (const op of shuffled(ops)) {
        for (const role of shuffled([...ROLES])) {
          const ns = ((await sides.get(role)!.cpuUs({ cmd: 'time', op, n: n.get(op)! })) * 1_000) / n.get(op)!;
          mine.get(role)!.get(op)!.push(ns);
          samples.get(role)!.get(op)!.push(ns);
        }
      }
    }
    for (const s of all) s.close();
    for (const op of names) {
      const h = mine.get('this')!.get(op)!;
      epochMedians.get(op)!.q.push(median(pairs(h, mine.get('other')!.get(op)!)));
      epochMedians.get(op)!.c.push(median(pairs(mine.get('control')!.get(op)!, h)));
    }
  }

  const fmt = (x: number) => Number(x.toPrecision(3));
  const get = (r: Role, op: string) => samples.get(r)!.get(op)!;
  const range = (xs: number[]) => `${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))}`;
  const iqr = (q: number[]) => `${fmt(quantile(q, 0.25))}–${fmt(quantile(q, 0.75))}`;
  const refThis = median(get('this', REFERENCE));
  const refOther = median(get('other', REFERENCE));
  const rows = names.map((op) => {
    const h = get('this', op);
    const o = get('other', op);
    const q = pairs(h, o);
    const c = pairs(get('control', op), h);
    return {
      op,
      'other ns': fmt(median(o)),
      'this ns': fmt(median(h)),
      'ratio quot.': fmt(median(h) / refThis / (median(o) / refOther)),
      'this/other': fmt(median(q)),
      IQR: iqr(q),
      'per process': range(epochMedians.get(op)!.q),
      'control': fmt(median(c)),
      'control IQR': iqr(c),
      'ctl per process': range(epochMedians.get(op)!.c),
    };
  });
  const refQ = pairs(get('this', REFERENCE), get('other', REFERENCE));
  console.log(
    `other = ${resolve(otherRoot)}; ${rounds} rounds over ${processes} sets of processes; CPU time per batch of ~${batchMs} ms; ${threads ? 'V8 background threads on' : 'V8 --single-threaded'}\n` +
      `reference Map.get: this ${fmt(refThis)} ns/op, other ${fmt(refOther)} ns/op, paired this/other ${fmt(median(refQ))} (IQR ${iqr(refQ)})`,
  );
  console.table(rows);
}

if (process.argv.includes('--child')) await child();
else await parent();

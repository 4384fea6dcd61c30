/**
 * Summarises the issue-4 study (experiments/affinity-p2c.yaml) over seeds: for each run label,
 * the mean and a 95 % Student-t interval over seeds of prefix-cache hit rate, TTFT p50 / p99 and
 * goodput, then the paired difference of every label against `plain` (the runs of one seed share
 * arrivals and caller assignment, so per-seed differences cancel most of the trace's noise).
 *
 * Reads the `summary` table of each DuckDB file given (one file per seed, as written by
 * `switchyard sim … --seed N --output results/affinity-p2c-seedN.duckdb`).
 * Usage: `npx tsx bench/affinity-p2c-study.ts results/affinity-p2c-seed*.duckdb [--baseline plain] [--markdown]`
 */
import { parseArgs } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';

/** Two-sided 97.5 % quantiles of Student's t for df = 1..30 (then the normal 1.96). */
const T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042];

/** Mean and half-width of the 95 % t-interval of `xs` (half-width NaN for fewer than 2 values). */
function tInterval(xs: readonly number[]): { mean: number; half: number } {
  const n = xs.length;
  const mean = xs.reduce((a, b) => a + b, 0) / n;
  if (n < 2) return { mean, half: Number.NaN };
  const sd = Math.sqrt(xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (n - 1));
  return { mean, half: (T975[n - 2] ?? 1.96) * (sd / Math.sqrt(n)) };
}

interface Row {
  label: string;
  seed: number;
  hit: number;
  ttftP50: number;
  ttftP99: number;
  goodput: number;
}

const METRICS: Array<{ key: keyof Row; name: string; scale: number; digits: number }> = [
  { key: 'hit', name: 'prefix hit %', scale: 100, digits: 2 },
  { key: 'ttftP50', name: 'TTFT p50 ms', scale: 1, digits: 0 },
  { key: 'ttftP99', name: 'TTFT p99 ms', scale: 1, digits: 0 },
  { key: 'goodput', name: 'goodput %', scale: 100, digits: 2 },
];

const { values, positionals } = parseArgs({ allowPositionals: true, options: { baseline: { type: 'string', default: 'plain' }, markdown: { type: 'boolean' } } });
if (positionals.length === 0) {
  console.error('usage: npx tsx bench/affinity-p2c-study.ts results/affinity-p2c-seed*.duckdb [--baseline plain] [--markdown]');
  process.exit(2);
}

const rows: Row[] = [];
for (const file of positionals) {
  const db = await DuckDBInstance.create(file, { access_mode: 'READ_ONLY' });
  const c = await db.connect();
  const r = await c.runAndReadAll(
    'select s.strategy as label, r.seed as seed, s.prefix_cache_hit_rate as hit, s.ttft_p50_ms as p50, s.ttft_p99_ms as p99, s.goodput as goodput from summary s join runs r using (run_id)',
  );
  for (const o of r.getRowObjectsJS() as Array<Record<string, unknown>>) {
    rows.push({ label: String(o.label), seed: Number(o.seed), hit: Number(o.hit), ttftP50: Number(o.p50), ttftP99: Number(o.p99), goodput: Number(o.goodput) });
  }
  c.closeSync();
  db.closeSync();
}

const labels = [...new Set(rows.map((r) => r.label))];
const seeds = [...new Set(rows.map((r) => r.seed))].sort((a, b) => a - b);
const fmt = (v: { mean: number; half: number }, scale: number, digits: number) =>
  `${(v.mean * scale).toFixed(digits)} ± ${Number.isNaN(v.half) ? '?' : (v.half * scale).toFixed(digits)}`;
const print = (title: string, header: string[], body: string[][]) => {
  console.log(`\n${title}`);
  if (values.markdown) {
    console.log(`| ${header.join(' | ')} |\n|${header.map(() => ' --- ').join('|')}|`);
    for (const b of body) console.log(`| ${b.join(' | ')} |`);
    return;
  }
  const w = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ');
  console.log([line(header), ...body.map(line)].join('\n'));
};

console.log(`${rows.length} runs from ${positionals.length} file(s); seeds ${seeds.join(', ')}; mean ± 95 % t-interval half-width over seeds`);
print(
  'per variant',
  ['run', 'n', ...METRICS.map((m) => m.name)],
  labels.map((l) => {
    const mine = rows.filter((r) => r.label === l);
    return [l, String(mine.length), ...METRICS.map((m) => fmt(tInterval(mine.map((r) => r[m.key] as number)), m.scale, m.digits))];
  }),
);

const base = values.baseline!;
if (labels.includes(base)) {
  print(
    `paired difference vs '${base}' (same seed), mean ± 95 % t-interval`,
    ['run', 'pairs', ...METRICS.map((m) => `Δ ${m.name}`)],
    labels
      .filter((l) => l !== base)
      .map((l) => {
        const pairs = seeds.flatMap((s) => {
          const a = rows.find((r) => r.label === l && r.seed === s);
          const b = rows.find((r) => r.label === base && r.seed === s);
          return a && b ? [[a, b] as const] : [];
        });
        return [l, String(pairs.length), ...METRICS.map((m) => fmt(tInterval(pairs.map(([a, b]) => (a[m.key] as number) - (b[m.key] as number))), m.scale, m.digits))];
      }),
  );
}

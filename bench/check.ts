/**
 * The benchmark regression gate. `npm run bench:check` runs the fast subset (micro ratios and
 * routing quality on the reference slice) and compares with `bench/baseline.json`; exits 1 with
 * a readable diff when a metric is worse than its tolerance. `npm run bench:update` rewrites the
 * baseline deliberately. Every run is appended to `results/bench-history.duckdb`.
 *
 * Micro metrics are compared as ratios to a reference op measured in the same run (absolute
 * times drift between machines and runs; ratios measured together hold).
 * Flags: --update, --slow-strategy NAME (self-test: wraps a strategy in a busy loop).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import { runMicro } from './micro.ts';
import { runQuality } from './quality.ts';

/** One gated metric: `higherIsWorse` metrics fail above baseline × (1 + tolerance). */
interface Metric {
  name: string;
  value: number;
  tolerance: number;
  higherIsWorse: boolean;
}

const BASELINE = join(import.meta.dirname, 'baseline.json');

async function measure(slowStrategy: string | undefined): Promise<Metric[]> {
  const micro = await runMicro({ timeMs: 250, ...(slowStrategy !== undefined && { slowStrategy }) });
  const metrics: Metric[] = micro.slice(1).map((m) => ({ name: `micro ratio: ${m.name}`, value: m.ratio, tolerance: 3, higherIsWorse: true }));
  for (const q of await runQuality()) {
    metrics.push({ name: `quality ${q.strategy}: TTFT p99 ms`, value: q.ttftP99Ms, tolerance: 0.05, higherIsWorse: true });
    metrics.push({ name: `quality ${q.strategy}: goodput`, value: q.goodput, tolerance: 0.02, higherIsWorse: false });
  }
  return metrics;
}

async function appendHistory(metrics: Metric[]): Promise<void> {
  let rev = 'unknown';
  try {
    rev = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {}
  const { mkdirSync } = await import('node:fs');
  mkdirSync(join(import.meta.dirname, '..', 'results'), { recursive: true });
  const db = await DuckDBInstance.create(join(import.meta.dirname, '..', 'results', 'bench-history.duckdb'));
  const c = await db.connect();
  await c.run('create table if not exists bench_history (measured_at varchar, git_revision varchar, node_version varchar, metric varchar, value double)');
  const at = new Date().toISOString();
  for (const m of metrics) await c.run('insert into bench_history values ($1, $2, $3, $4, $5)', [at, rev, process.version, m.name, m.value]);
  c.closeSync();
  db.closeSync();
}

const { values } = parseArgs({ options: { update: { type: 'boolean' }, 'slow-strategy': { type: 'string' }, 'no-history': { type: 'boolean' } } });
const metrics = await measure(values['slow-strategy']);
if (!values['no-history']) await appendHistory(metrics);

if (values.update) {
  writeFileSync(BASELINE, `${JSON.stringify({ note: 'Rewritten by npm run bench:update; compared by npm run bench:check.', metrics }, null, 2)}\n`);
  console.log(`baseline written: ${BASELINE} (${metrics.length} metrics)`);
  process.exit(0);
}

const baseline = JSON.parse(readFileSync(BASELINE, 'utf8')) as { metrics: Metric[] };
const byName = new Map(baseline.metrics.map((m) => [m.name, m]));
let failed = 0;
const lines: string[] = [];
for (const m of metrics) {
  const b = byName.get(m.name);
  if (!b) {
    lines.push(`  new      ${m.name}: ${m.value.toPrecision(4)} (not in baseline; run npm run bench:update)`);
    continue;
  }
  const limit = b.higherIsWorse ? b.value * (1 + b.tolerance) : b.value * (1 - b.tolerance);
  const bad = b.higherIsWorse ? m.value > limit : m.value < limit;
  if (bad) failed++;
  lines.push(`  ${bad ? 'WORSE ' : 'ok    '}  ${m.name}: ${m.value.toPrecision(4)} vs baseline ${b.value.toPrecision(4)} (limit ${limit.toPrecision(4)})`);
}
console.log(lines.join('\n'));
if (failed > 0) {
  console.error(`\nbench:check: ${failed} metric(s) regressed beyond tolerance`);
  process.exit(1);
}
console.log('\nbench:check: no regression');

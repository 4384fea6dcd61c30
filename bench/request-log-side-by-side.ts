/**
 * The request log's cost in two checkouts, side by side: runs `bench/request-log.bench.ts` of
 * this checkout and of another one (`--base DIR`) alternately, `--runs` times each, and prints
 * each run's gateway-thread append ns/row and writer µs/row (wall), and the process's CPU per row
 * over appending and closing (`request-log-cpu.ts`, every thread), then the range of each.
 *
 *   npx tsx bench/request-log-side-by-side.ts --base /work/wt-base [--runs 3] [--rows 50000]
 *
 * Alternating keeps both checkouts under the same load on a shared machine; compare ranges, not
 * single runs.
 */
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { base: { type: 'string' }, runs: { type: 'string', default: '3' }, rows: { type: 'string', default: '50000' } } });
if (values.base === undefined) throw new Error('--base DIR (the other checkout) is required');
const dirs = { this: resolve(import.meta.dirname, '..'), base: resolve(values.base) };
const out: Record<string, { append: number[]; writer: number[]; cpuUs: number[] }> = { this: { append: [], writer: [], cpuUs: [] }, base: { append: [], writer: [], cpuUs: [] } };
for (let i = 0; i < Number(values.runs); i++) {
  for (const name of i % 2 === 0 ? (['base', 'this'] as const) : (['this', 'base'] as const)) {
    const text = execFileSync('npx', ['tsx', 'bench/request-log.bench.ts', '--rows', values.rows], { cwd: dirs[name], encoding: 'utf8' });
    const cpu = execFileSync('npx', ['tsx', join(dirs.this, 'bench/request-log-cpu.ts'), '--dir', dirs[name], '--rows', values.rows], { cwd: dirs[name], encoding: 'utf8' });
    out[name]!.cpuUs.push((JSON.parse(cpu.trim().split('\n').at(-1)!) as { cpuUsPerRow: number }).cpuUsPerRow);
    for (const line of text.split('\n')) {
      if (!line.startsWith('{')) continue;
      const l = JSON.parse(line) as { bench: string; nsPerRow?: number; usPerRow?: number };
      if (l.bench === 'request-log/append') out[name]!.append.push(l.nsPerRow!);
      if (l.bench === 'request-log/writer') out[name]!.writer.push(l.usPerRow!);
    }
    console.log(JSON.stringify({ run: i + 1, checkout: name, appendNsPerRow: out[name]!.append.at(-1), writerUsPerRow: out[name]!.writer.at(-1), cpuUs: out[name]!.cpuUs.at(-1) }));
  }
}
const range = (v: number[]): string => `${Math.min(...v)}–${Math.max(...v)}`;
for (const name of ['base', 'this'] as const) console.log(JSON.stringify({ checkout: name, dir: dirs[name], appendNsPerRow: range(out[name]!.append), writerUsPerRow: range(out[name]!.writer), cpuUs: range(out[name]!.cpuUs) }));

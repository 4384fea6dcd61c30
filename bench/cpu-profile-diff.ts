/**
 * Compares two sets of V8 CPU profiles (`.cpuprofile` JSON, as `node --cpu-prof` writes them, e.g.
 * from `bench/gateway-overhead.ts --cpu-prof DIR`) by self time per function, and prints the
 * functions whose self time differs most between them.
 *
 *   npx tsx bench/cpu-profile-diff.ts DIR_OR_FILE_A DIR_OR_FILE_B [--top 40] [--share]
 *
 * Every `.cpuprofile` under a directory is summed (a gateway's worker threads write their own).
 * Functions are keyed by name and origin (`app` for the gateway's own code, the package name for
 * `node_modules`, `node` for Node's internals), not by line: two checkouts' bundles differ in line
 * numbers. Self time of a node is its sample count times the profile's mean sampling interval
 * (`(endTime - startTime) / samples.length`, µs). Under the same fixed-rate load both sides serve
 * the same number of requests, so differences in self time are differences in CPU per request;
 * `--share` sorts by the change in share of busy time instead (for runs of unequal counts).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

/** The parts of a `.cpuprofile` this script reads (V8's `Profiler.Profile`; times in µs). */
interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number }>;
  samples: number[];
  startTime: number;
  endTime: number;
}

/** Where a function comes from: `node_modules/<pkg>` → the package, `node:` → `node`, else `app`. */
function originOf(url: string): string {
  if (url === '') return 'native';
  if (url.startsWith('node:')) return 'node';
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  return m ? m[1]! : 'app';
}

/** Self time per `name [origin]`, µs, summed over every profile under `path` (a file or directory). */
export function selfTimeByFunction(path: string): Map<string, number> {
  const files = statSync(path).isDirectory()
    ? readdirSync(path, { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.cpuprofile'))
        .map((f) => join(path, f))
    : [path];
  const out = new Map<string, number>();
  for (const f of files) {
    const p = JSON.parse(readFileSync(f, 'utf8')) as CpuProfile;
    const usPerSample = p.samples.length > 0 ? (p.endTime - p.startTime) / p.samples.length : 0;
    const hits = new Map<number, number>();
    for (const id of p.samples) hits.set(id, (hits.get(id) ?? 0) + 1);
    for (const n of p.nodes) {
      const h = hits.get(n.id) ?? 0;
      if (h === 0) continue;
      const key = `${n.callFrame.functionName || '(anonymous)'} [${originOf(n.callFrame.url)}]`;
      out.set(key, (out.get(key) ?? 0) + h * usPerSample);
    }
  }
  return out;
}

if (process.argv[1] !== undefined && process.argv[1].endsWith('cpu-profile-diff.ts')) {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '40' }, share: { type: 'boolean', default: false } } });
  if (positionals.length !== 2) {
    process.stderr.write('usage: cpu-profile-diff.ts A B [--top N] [--share]  (A, B: a .cpuprofile file or a directory of them)\n');
    process.exit(2);
  }
  const [a, b] = positionals.map(selfTimeByFunction) as [Map<string, number>, Map<string, number>];
  const total = (m: Map<string, number>) => [...m.values()].reduce((s, x) => s + x, 0);
  const idle = (m: Map<string, number>) => m.get('(idle) [native]') ?? 0;
  const busyA = total(a) - idle(a);
  const busyB = total(b) - idle(b);
  const ms = (x: number) => (x / 1000).toFixed(1).padStart(9);
  process.stdout.write(`busy (total minus idle) self time: A ${ms(busyA)} ms, B ${ms(busyB)} ms, B/A ×${(busyB / busyA).toFixed(3)}\n`);
  // Shares of busy time too: when the two sides served different request counts (a max-rate run),
  // a function's share moves only if its cost per request moved relative to the rest.
  process.stdout.write(`${'B−A ms'.padStart(9)} ${'A ms'.padStart(9)} ${'B ms'.padStart(9)} ${'B−A pp'.padStart(7)}  function [origin]   (pp: points of busy-time share)\n`);
  const keys = new Set([...a.keys(), ...b.keys()]);
  keys.delete('(idle) [native]');
  const rows = [...keys].map((k) => ({ k, a: a.get(k) ?? 0, b: b.get(k) ?? 0 })).map((r) => ({ ...r, pp: (100 * r.b) / busyB - (100 * r.a) / busyA }));
  const by = values.share ? (r: (typeof rows)[number]) => Math.abs(r.pp) : (r: (typeof rows)[number]) => Math.abs(r.b - r.a);
  rows.sort((x, y) => by(y) - by(x));
  for (const r of rows.slice(0, Number(values.top))) process.stdout.write(`${ms(r.b - r.a)} ${ms(r.a)} ${ms(r.b)} ${r.pp.toFixed(2).padStart(7)}  ${r.k}\n`);
}

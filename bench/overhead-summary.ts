/**
 * The summary table of the gateway benchmark (`bench/gateway-overhead.ts`): one row per metric,
 * each path's number and the ratios (floor/direct, switchyard/direct, switchyard/portkey, and
 * switchyard/floor for max req/s and gateway CPU per request).
 */
import type { GatewayOverheadResult } from './gateway-overhead.ts';
import type { PathRun } from './load-runs.ts';

/** Median of a non-empty list. */
export function median(xs: number[]): number {
  const a = [...xs].sort((x, y) => x - y);
  const m = a.length >> 1;
  return a.length % 2 === 1 ? a[m]! : (a[m - 1]! + a[m]!) / 2;
}

/** The summary table: one row per metric, the paths and the ratios. */
export function writeSummary(r: GatewayOverheadResult, write: (t: string) => void): void {
  const hasPeer = r.rssMb.portkey !== undefined;
  const hasFloor = r.cases.some((c) => c.maxRatio.floorToDirect !== null);
  const v = (x: number | undefined | null, digits: number) => (x === undefined || x === null || Number.isNaN(x) ? '—' : x.toFixed(digits)).padStart(10);
  const q = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || !(b > 0) ? '—' : (a / b).toFixed(2)).padStart(10);
  write(`\nsummary (sy = switchyard; floor = bare uWS → undici proxy; latency and RSS: < 1 is better for switchyard; req/s: > 1 is better)\n`);
  write(`${'case'.padEnd(11)} ${'metric'.padEnd(16)} ${'direct'.padStart(10)} ${'floor'.padStart(10)} ${'switchyard'.padStart(10)} ${'portkey'.padStart(10)} ${'floor/dir'.padStart(10)} ${'sy/direct'.padStart(10)} ${'sy/portkey'.padStart(10)}\n`);
  const row = (c: string, metric: string, d: number | undefined, f: number | undefined, s: number | undefined, p: number | undefined, digits: number, ratios?: [number | null, number, number | null]) =>
    write(
      `${c.padEnd(11)} ${metric.padEnd(16)} ${v(d, digits)} ${hasFloor ? v(f, digits) : '—'.padStart(10)} ${v(s, digits)} ${hasPeer ? v(p, digits) : '—'.padStart(10)} ` +
        (ratios ? `${v(ratios[0], 2)} ${v(ratios[1], 2)} ${v(ratios[2], 2)}\n` : `${hasFloor ? q(f, d) : '—'.padStart(10)} ${q(s, d)} ${hasPeer ? q(s, p) : '—'.padStart(10)}\n`),
    );
  for (const cs of r.cases) {
    for (const st of cs.steps) {
      const { direct: d, floor: f, switchyard: s, portkey: p } = st.byPath;
      row(cs.case, `p50 ms @${st.rateRps}/s`, d?.p50Ms, f?.p50Ms, s?.p50Ms, p?.p50Ms, 3);
      row(cs.case, `p99 ms @${st.rateRps}/s`, d?.p99Ms, f?.p99Ms, s?.p99Ms, p?.p99Ms, 3);
    }
    // Ratios of max req/s are medians of per-round ratios (see GatewayOverheadOptions.maxRounds).
    row(cs.case, 'max req/s', cs.max.direct?.rps, cs.max.floor?.rps, cs.max.switchyard?.rps, cs.max.portkey?.rps, 0, [cs.maxRatio.floorToDirect, cs.maxRatio.direct, cs.maxRatio.portkey]);
    const cpu = (x: PathRun | undefined) => x?.cpuUsPerRequest ?? undefined;
    row(cs.case, 'CPU µs/req, max', undefined, cpu(cs.max.floor), cpu(cs.max.switchyard), cpu(cs.max.portkey), 0, [null, Number.NaN, cs.max.portkey ? (cpu(cs.max.switchyard) ?? Number.NaN) / (cpu(cs.max.portkey) ?? Number.NaN) : null]);
    if (hasFloor) write(`${cs.case.padEnd(11)} ${'sy/floor'.padEnd(16)} max req/s ×${(cs.maxRatio.floor ?? Number.NaN).toFixed(2)}, gateway CPU µs/req ×${(cs.cpuRatioToFloor ?? Number.NaN).toFixed(2)} (medians of per-round ratios)\n`);
  }
  row('process', 'RSS MB now', undefined, undefined, r.rssMb.switchyard?.nowMb, r.rssMb.portkey?.nowMb, 0);
  row('process', 'RSS MB peak', undefined, undefined, r.rssMb.switchyard?.peakMb, r.rssMb.portkey?.peakMb, 0);
}

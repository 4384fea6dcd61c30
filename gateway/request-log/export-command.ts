/**
 * `switchyard trace export --from <request-log.duckdb> [--to trace.arrow] [--since T] [--until T]`
 * — turns the gateway's request log into an Arrow trace that `switchyard sim` replays as is.
 * T is an ISO date-time (`2026-11-30T10:00:00Z`), Unix ms, or a duration back from now (`15m`, `2h`, `1d`).
 */
import { parseArgs } from 'node:util';
import { UsageError, type CliCommand } from '../../bin/command.ts';
import { exportRequestLog, resolveRequestLogs } from './export-trace.ts';

const USAGE = `usage: switchyard trace export --from <request-log.duckdb> [--from <another.duckdb> …] [--to <trace.arrow>] [--since T] [--until T]

Writes the gateway's request log as an Arrow trace (traces/README.md) that 'switchyard sim'
replays unchanged. Arrival times start at 0 at the first exported request.
  --from    a request log; repeat it to merge several by arrival time. A gateway run with
            --workers N writes <name>.worker-<i>.duckdb per worker: the configured path
            (<name>.duckdb) merges it (if it exists) and all of them; or give one worker file
  --to      output file (default: the (first) log's name with .arrow)
  --since   only requests that arrived at or after T; --until: before T
            T: ISO date-time (2026-11-30T10:00:00Z), Unix ms, or an age (30s, 15m, 2h, 1d)`;

const AGE = /^(\d+(?:\.\d+)?)(s|m|h|d)$/;
const AGE_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Parses a `--since`/`--until` value to Unix ms (`nowMs` anchors ages).
 * @throws UsageError for anything else.
 */
export function parseTimeArg(name: string, v: string, nowMs: number): number {
  const age = AGE.exec(v);
  if (age) return nowMs - Number(age[1]) * AGE_MS[age[2]!]!;
  if (/^\d+$/.test(v)) return Number(v);
  const t = Date.parse(v);
  if (Number.isNaN(t)) throw new UsageError(`--${name} '${v}' is not an ISO date-time, Unix ms or an age like 15m`);
  return t;
}

/**
 * `switchyard trace export --from <db> [--from <db> …] [--to file] [--since t] [--until t]`:
 * request log(s) → Arrow trace. A `--from` path is read with its `.worker-<i>.duckdb` siblings
 * (whether or not the path itself exists); one with neither exits 1 saying so. Every file merged
 * is named on stderr, and one named twice is read once, saying so.
 */
export const traceExportCommand: CliCommand = {
  name: 'trace export',
  summary: 'write the gateway request log (DuckDB) as an Arrow trace the simulator replays',
  usage: USAGE,
  async run(args) {
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: false,
      options: { from: { type: 'string', multiple: true }, to: { type: 'string' }, since: { type: 'string' }, until: { type: 'string' } },
    });
    if (positionals.length > 0 || !values.from || values.from.length === 0) throw new UsageError('trace export needs --from <request-log.duckdb>');
    const files: string[] = [];
    for (const f of values.from) {
      let found: ReturnType<typeof resolveRequestLogs>;
      try {
        found = resolveRequestLogs(f);
      } catch (e) {
        process.stderr.write(`switchyard: ${(e as Error).message}\n`);
        return 1;
      }
      if (found.workers.length > 0) {
        const base = found.files.length > found.workers.length ? `${f} and ` : `${f} does not exist; merging `;
        process.stderr.write(`switchyard: ${base}the per-worker logs of a --workers gateway: ${found.workers.join(', ')}\n`);
      }
      for (const x of found.files) {
        if (files.includes(x)) process.stderr.write(`switchyard: ${x} is named twice (by --from ${f}); it is read once\n`);
        else files.push(x);
      }
    }
    if (files.length > 1) process.stderr.write(`switchyard: merging ${files.length} request logs by arrival time: ${files.join(', ')}\n`);
    const now = Date.now();
    const to = values.to ?? values.from[0]!.replace(/\.duckdb$/, '') + '.arrow';
    const r = await exportRequestLog({
      from: files,
      to,
      ...(values.since !== undefined && { sinceUnixMs: parseTimeArg('since', values.since, now) }),
      ...(values.until !== undefined && { untilUnixMs: parseTimeArg('until', values.until, now) }),
    });
    const span = r.firstUnixMs === null ? '' : ` from ${new Date(r.firstUnixMs).toISOString()} to ${new Date(r.lastUnixMs!).toISOString()}`;
    process.stdout.write(`wrote ${r.rows} request(s)${span} to ${to}\n`);
    return 0;
  },
};

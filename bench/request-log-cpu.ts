/**
 * CPU of the request log for a given checkout: imports `RequestLog` from `--dir`'s
 * `gateway/request-log/request-log.ts`, appends `--rows` single-attempt rows (1,000 at a time,
 * yielding between, as `bench/request-log.bench.ts` does), closes the log, and prints the
 * process's CPU (user + system, every thread: the gateway thread and the writer) per row, µs.
 * Used by `bench/request-log-side-by-side.ts` so that an older checkout is measured by the same
 * code.
 *
 *   npx tsx bench/request-log-cpu.ts --dir /path/to/checkout [--rows 50000]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { dir: { type: 'string' }, rows: { type: 'string', default: '50000' } } });
const rows = Math.max(1, Number(values.rows));
const dir = resolve(values.dir ?? '.');
const { RequestLog } = (await import(pathToFileURL(join(dir, 'gateway/request-log/request-log.ts')).href)) as typeof import('../gateway/request-log/request-log.ts');
const tmp = mkdtempSync(join(tmpdir(), 'switchyard-log-cpu-'));
try {
  const base = {
    arrivalUnixMs: Date.now(), requestId: '', sessionId: null, callerId: 'bench', model: 'bench', inputTokens: 10, outputTokens: 1, hashIds: [1, 2], stream: false, ttftMs: 1.25, e2eMs: 1.5, api: 'chat',
    endpointId: 'bench/0', attempts: 1, httpStatus: 200, status: 'ok', fallback: false, cachedTokens: 0, costUsd: 0, prompt: null, offloadReason: null, strategy: 'fixed',
    attemptLog: [{ endpointId: 'm:local-8000', target: null, outcome: 'ok', reason: 'primary', startOffsetMs: 0, endOffsetMs: 12, inputTokens: 10, outputTokens: 1, cachedTokens: 0, costUsd: 0 }],
  };
  const log = await RequestLog.open({ path: join(tmp, 'log.duckdb'), bufferRows: rows + 1, batchRows: 256, flushIntervalMs: 100, memoryLimitMb: 64 });
  const c0 = process.cpuUsage();
  for (let i = 0; i < rows; i += 1_000) {
    for (let j = i; j < Math.min(rows, i + 1_000); j++) log.append({ ...base, requestId: `r-${j}`, arrivalUnixMs: base.arrivalUnixMs + j });
    await new Promise((r) => setImmediate(r));
  }
  await log.close();
  const c = process.cpuUsage(c0);
  console.log(JSON.stringify({ bench: 'request-log/cpu', dir, rows, cpuUsPerRow: +((c.user + c.system) / rows).toFixed(2), lost: log.lostRows }));
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

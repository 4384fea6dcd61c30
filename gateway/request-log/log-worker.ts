/**
 * The request log's writer thread: owns the DuckDB file, appends the batches the gateway thread
 * posts (`{rows}`), and answers `{flush: id}` with `{flushed: id}` once everything before it is
 * on disk, and `{close: true}` by closing the database and posting `{closed: true}`. DuckDB's
 * `memory_limit` bounds its buffer memory. Started by `request-log.ts` through
 * `log-worker-entry.mjs` (which registers tsx in this thread). Creates the file's folder.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { DuckDBInstance, listValue, type DuckDBAppender } from '@duckdb/node-api';
import { REQUEST_LOG_DDL, type RequestLogRow } from './log-row.ts';

/** What the gateway thread posts. */
export type LogWorkerMessage = { rows: RequestLogRow[] } | { flush: number } | { close: true };

const { path, memoryLimitMb } = workerData as { path: string; memoryLimitMb: number };
const port = parentPort!;

function appendRow(a: DuckDBAppender, r: RequestLogRow): void {
  a.appendDouble(r.arrivalUnixMs);
  a.appendVarchar(r.requestId);
  str(a, r.sessionId);
  str(a, r.callerId);
  str(a, r.model);
  a.appendInteger(r.inputTokens);
  a.appendInteger(r.outputTokens);
  if (r.hashIds === null) a.appendNull();
  else a.appendList(listValue(r.hashIds));
  a.appendBoolean(r.stream);
  if (r.ttftMs === null) a.appendNull();
  else a.appendDouble(r.ttftMs);
  a.appendDouble(r.e2eMs);
  a.appendVarchar(r.api);
  str(a, r.endpointId);
  a.appendInteger(r.attempts);
  a.appendInteger(r.httpStatus);
  a.appendVarchar(r.status);
  a.appendBoolean(r.fallback);
  a.appendInteger(r.cachedTokens);
  a.appendDouble(r.costUsd);
  str(a, r.prompt);
  a.endRow();
}

function str(a: DuckDBAppender, v: string | null): void {
  if (v === null) a.appendNull();
  else a.appendVarchar(v);
}

try {
  mkdirSync(dirname(path), { recursive: true });
  const instance = await DuckDBInstance.create(path, { memory_limit: `${memoryLimitMb}MB`, threads: '1' });
  const conn = await instance.connect();
  await conn.run(REQUEST_LOG_DDL);
  // Messages are handled one at a time, in order, so a flush answers after every earlier batch.
  let chain: Promise<void> = Promise.resolve();
  port.on('message', (m: LogWorkerMessage) => {
    chain = chain.then(async () => {
      if ('rows' in m) {
        const a = await conn.createAppender('requests');
        for (const r of m.rows) appendRow(a, r);
        a.closeSync();
        port.postMessage({ written: m.rows.length });
      } else if ('flush' in m) {
        port.postMessage({ flushed: m.flush });
      } else {
        conn.closeSync();
        instance.closeSync();
        port.postMessage({ closed: true });
        port.close();
      }
    }).catch((e: unknown) => port.postMessage({ error: (e as Error).message, ...('rows' in m && { written: m.rows.length }) }));
  });
  port.postMessage({ ready: true });
} catch (e) {
  port.postMessage({ error: (e as Error).message });
}

// @ts-check
/**
 * The request log's writer thread: owns the DuckDB file, appends the batches the gateway thread
 * posts (`{rows}`), and answers `{flush: id}` with `{flushed: id}` once everything before it is
 * on disk, and `{close: true}` by closing the database and posting `{closed: true}`. DuckDB's
 * `memory_limit` bounds its buffer memory. Started by `request-log.ts`, which passes the file,
 * the limit and the table's DDL in `workerData`. Creates the file's folder.
 *
 * Plain JavaScript on purpose: a thread that registered tsx would carry its own loader thread
 * and transpiler (about 18 MB of resident memory) for one small file.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { DuckDBInstance, listValue } from '@duckdb/node-api';

/** @type {{ path: string, memoryLimitMb: number, ddl: string }} */
const { path, memoryLimitMb, ddl } = workerData;
const port = /** @type {import('node:worker_threads').MessagePort} */ (parentPort);

/**
 * Appends one row in `RequestLogRow` order (see `log-row.ts`).
 * @param {import('@duckdb/node-api').DuckDBAppender} a
 * @param {import('./log-row.ts').RequestLogRow} r
 */
function appendRow(a, r) {
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

/**
 * @param {import('@duckdb/node-api').DuckDBAppender} a
 * @param {string | null} v
 */
function str(a, v) {
  if (v === null) a.appendNull();
  else a.appendVarchar(v);
}

try {
  mkdirSync(dirname(path), { recursive: true });
  const instance = await DuckDBInstance.create(path, { memory_limit: `${memoryLimitMb}MB`, threads: '1' });
  const conn = await instance.connect();
  await conn.run(ddl);
  // One appender for the thread's life; each batch is flushed (committed) before the next
  // message is read. Handling a message synchronously keeps a backlog in the port's queue as
  // compact serialized bytes instead of as deserialized rows held by pending promises, and a
  // flush answers after every earlier batch by construction.
  let appender = await conn.createAppender('requests');
  /**
   * Messages that arrived while a broken appender was being replaced, in order; else null.
   * @type {import('./request-log.ts').LogWorkerMessage[] | null}
   */
  let held = null;
  const replaceAppender = async () => {
    held = [];
    try {
      appender.closeSync();
    } catch {
      // Already broken; it is replaced below.
    }
    appender = await conn.createAppender('requests');
    const later = held;
    held = null;
    for (const m of later) handle(m);
  };
  /** @param {import('./request-log.ts').LogWorkerMessage} m */
  const handle = (m) => {
    if (held !== null) {
      held.push(m);
      return;
    }
    if ('rows' in m) {
      try {
        for (const r of m.rows) appendRow(appender, r);
        appender.flushSync();
        port.postMessage({ written: m.rows.length });
      } catch (e) {
        // A failed append leaves the appender unusable: that batch is lost (and reported).
        port.postMessage({ error: /** @type {Error} */ (e).message, written: m.rows.length });
        replaceAppender().catch((e2) => port.postMessage({ error: /** @type {Error} */ (e2).message }));
      }
    } else if ('flush' in m) {
      port.postMessage({ flushed: m.flush });
    } else {
      try {
        appender.closeSync();
      } catch (e) {
        port.postMessage({ error: /** @type {Error} */ (e).message });
      }
      conn.closeSync();
      instance.closeSync();
      port.postMessage({ closed: true });
      port.close();
    }
  };
  port.on('message', handle);
  port.postMessage({ ready: true });
} catch (e) {
  port.postMessage({ error: /** @type {Error} */ (e).message });
}

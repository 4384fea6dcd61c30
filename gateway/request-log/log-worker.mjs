// @ts-check
/**
 * The request log's writer thread: owns the DuckDB file, appends the batches the gateway thread
 * posts (`{columns, rows}`, columns in `REQUEST_LOG_COLUMNS` order) as DuckDB data chunks, and answers `{flush: id}` with `{flushed: id}` once everything before it is
 * on disk, and `{close: true}` by closing the database and posting `{closed: true}`. DuckDB's
 * `memory_limit` bounds its buffer memory. Started by `request-log.ts`, which passes the file,
 * the limit, the table's DDL and its column types in `workerData`. Creates the file's folder.
 *
 * Plain JavaScript on purpose: a thread that registered tsx would carry its own loader thread
 * and transpiler (about 18 MB of resident memory) for one small file.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { BOOLEAN, DOUBLE, DuckDBDataChunk, DuckDBInstance, INTEGER, LIST, listValue, VARCHAR } from '@duckdb/node-api';

/** @type {{ path: string, memoryLimitMb: number, ddl: string, types: import('./log-row.ts').LogColumnType[] }} */
const { path, memoryLimitMb, ddl, types } = workerData;
const port = /** @type {import('node:worker_threads').MessagePort} */ (parentPort);

const DUCKDB_TYPES = { DOUBLE, VARCHAR, INTEGER, BOOLEAN, 'INTEGER[]': LIST(INTEGER) };
const chunkTypes = types.map((t) => DUCKDB_TYPES[t]);
/** Rows per data chunk: DuckDB's vector size. */
const CHUNK_ROWS = 2048;

/**
 * Appends a posted batch: a data chunk per `CHUNK_ROWS` rows (about half the cost of appending
 * value by value, measured: 11 vs 24 µs per row). List columns become DuckDB list values here.
 * @param {import('@duckdb/node-api').DuckDBAppender} a
 * @param {unknown[][]} columns
 * @param {number} rows
 */
function appendColumns(a, columns, rows) {
  for (let from = 0; from < rows; from += CHUNK_ROWS) {
    const to = Math.min(rows, from + CHUNK_ROWS);
    const chunk = DuckDBDataChunk.create(chunkTypes, to - from);
    chunk.setColumns(
      columns.map((values, c) => {
        const part = from === 0 && to === rows ? values : values.slice(from, to);
        return types[c] === 'INTEGER[]' ? part.map((v) => (v === null ? null : listValue(/** @type {number[]} */ (v)))) : part;
      }),
    );
    a.appendDataChunk(chunk);
  }
}

try {
  mkdirSync(dirname(path), { recursive: true });
  // DuckDB's allocator keeps freed memory cached up to 128 MB (512 MB after bulk frees) by
  // default; a log writer's allocations are small and steady, so it hands them back early
  // (without this the gateway's resident memory jumped by ~50 MB in half the benchmark runs).
  const instance = await DuckDBInstance.create(path, {
    memory_limit: `${memoryLimitMb}MB`,
    threads: '1',
    allocator_flush_threshold: '8MB',
    allocator_bulk_deallocation_flush_threshold: '8MB',
  });
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
    if ('columns' in m) {
      try {
        appendColumns(appender, /** @type {unknown[][]} */ (m.columns), m.rows);
        appender.flushSync();
        port.postMessage({ written: m.rows });
      } catch (e) {
        // A failed append may leave the appender unusable: that batch is lost (and reported).
        port.postMessage({ error: /** @type {Error} */ (e).message, written: m.rows });
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

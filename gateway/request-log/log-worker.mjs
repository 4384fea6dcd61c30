// @ts-check
/**
 * The request log's writer thread: owns the DuckDB file, appends the batches the gateway thread
 * posts (`{columns, rows, attemptColumns, attemptCounts, attemptRows}`: the `requests` rows in
 * `REQUEST_LOG_COLUMNS` order, their attempts' own fields, completed here to the
 * `ATTEMPT_LOG_COLUMNS` order by `attemptSources`) as DuckDB data
 * chunks to the `requests` and `attempts` tables, and answers `{flush: id}` with `{flushed: id}`
 * once everything before it is
 * on disk, `{query: id, sql, params}` with `{queryId: id, rows}` (or `{queryId, queryError}`)
 * read on a second connection after committing what it holds, so operators' reports read the
 * live file through its one owner, and `{close: true}` by closing the database and posting
 * `{closed: true}`. At open it brings a file of an older layout up to date (`migrations`, each
 * step in one transaction). DuckDB's
 * `memory_limit` bounds its buffer memory. Started by `request-log.ts`, which passes the file,
 * the limit, the table's DDL and its column types in `workerData`. Creates the file's folder.
 *
 * Plain JavaScript on purpose: a thread that registered tsx would carry its own loader thread
 * and transpiler (about 18 MB of resident memory) for one small file.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { DuckDBInstance } from '@duckdb/node-api';
import { CHUNK_ROWS, chunkWriter } from './log-chunks.mjs';

/** @type {{ path: string, memoryLimitMb: number, ddl: string, migrations: import('./log-layout.ts').LogMigration[], types: import('./log-row.ts').LogColumnType[], notNull: boolean[], attemptTypes: import('./log-row.ts').LogColumnType[], attemptNotNull: boolean[], attemptSources: import('./log-layout.ts').WriterAttemptSource[] }} */
const { path, memoryLimitMb, ddl, migrations, types, notNull, attemptTypes, attemptNotNull, attemptSources } = workerData;
const port = /** @type {import('node:worker_threads').MessagePort} */ (parentPort);

/** Both tables' NOT NULL flags and data-chunk writers. */
const REQUESTS = { notNull, chunks: chunkWriter(types) };
const ATTEMPTS = { notNull: attemptNotNull, chunks: chunkWriter(attemptTypes) };
/** Rows appended before a commit. */
const COMMIT_ROWS = 4000;
/**
 * Characters of long strings (prompts, mostly) appended before a commit, whatever the rows: a
 * commit holds its rows in DuckDB's memory, within `memory_limit`.
 */
const COMMIT_HEAP_CHARS = 4_000_000;
/** Characters of long strings appended and not yet committed. */
let pendingHeapChars = 0;
/**
 * Longest time an appended row waits for its commit, ms. A second, so that a gateway serving
 * about 1,000 requests a second commits about 1,000 rows at a time.
 */
const COMMIT_INTERVAL_MS = 1000;

/**
 * The first NOT NULL column holding a null in a posted batch, or null. DuckDB only refuses such a
 * row when the appender commits, which would take every row appended since the last commit with
 * it; checked here, only the faulty batch is lost.
 * @param {{ notNull: boolean[] }} table
 * @param {unknown[][]} columns
 * @param {number} rows
 * @returns {string | null}
 */
function nullInNotNull(table, columns, rows) {
  const { notNull } = table;
  for (let c = 0; c < columns.length; c++) {
    if (!notNull[c]) continue;
    const values = columns[c];
    if (!values || values.length !== rows) return `column ${c + 1} has ${values?.length ?? 0} values for ${rows} rows`;
    for (let r = 0; r < rows; r++) if (values[r] === null || values[r] === undefined) return `column ${c + 1} (NOT NULL) is null in row ${r + 1} of the batch`;
  }
  return null;
}

/**
 * The `attempts` columns of a posted batch, in table order: the posted attempt columns, the
 * request id and arrival repeated from each attempt's request row, the 1-based attempt index,
 * offsets turned into Unix ms.
 * @param {unknown[][]} columns the batch's `requests` columns
 * @param {unknown[][]} posted its attempts' posted columns
 * @param {number[]} counts attempts per request row
 * @param {number} n attempts in all
 * @returns {unknown[][]}
 */
function attemptColumnsOf(columns, posted, counts, n) {
  if (n === counts.length && counts.every((c) => c === 1)) {
    // One attempt per request (the common case): attempt k belongs to row k.
    return attemptSources.map((s) => {
      if ('request' in s) return columns[s.request];
      if ('index' in s) return new Array(n).fill(1);
      const values = posted[s.posted];
      if (s.arrival < 0) return values;
      const arrival = /** @type {number[]} */ (columns[s.arrival]);
      return values.map((v, a) => arrival[a] + /** @type {number} */ (v));
    });
  }
  const requestOf = new Array(n);
  const index = new Array(n);
  let k = 0;
  for (let r = 0; r < counts.length; r++) for (let i = 1; i <= counts[r]; i++, k++) (requestOf[k] = r), (index[k] = i);
  return attemptSources.map((s) => {
    if ('request' in s) {
      const values = columns[s.request];
      return requestOf.map((r) => values[r]);
    }
    if ('index' in s) return index;
    const values = posted[s.posted];
    if (s.arrival < 0) return values;
    const arrival = /** @type {number[]} */ (columns[s.arrival]);
    return values.map((v, a) => arrival[requestOf[a]] + /** @type {number} */ (v));
  });
}

/**
 * Appends a posted batch: a data chunk per `CHUNK_ROWS` rows, filled column by column
 * (`log-chunks.mjs`).
 * @param {import('@duckdb/node-api').DuckDBAppender} a
 * @param {{ chunks: ReturnType<typeof chunkWriter> }} table
 * @param {unknown[][]} columns
 * @param {number} rows
 * @returns {number} rows appended (all of them unless it throws)
 * @throws {Error & { appendedRows: number }} when a chunk is refused; the chunks before it are in the appender
 */
function appendColumns(a, table, columns, rows) {
  let appended = 0;
  try {
    for (let from = 0; from < rows; from += CHUNK_ROWS) {
      const to = Math.min(rows, from + CHUNK_ROWS);
      a.appendDataChunk(table.chunks.fill(columns, from, to));
      pendingHeapChars += table.chunks.heapChars;
      appended = to;
    }
  } catch (e) {
    throw Object.assign(/** @type {Error} */ (e), { appendedRows: appended });
  }
  return appended;
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
  for (const m of migrations) {
    if (m.when !== undefined && !(await conn.runAndReadAll(m.when)).getRows()[0]?.[0]) continue;
    await conn.run('BEGIN TRANSACTION');
    try {
      for (const sql of m.statements) await conn.run(sql);
      await conn.run('COMMIT');
    } catch (e) {
      await conn.run('ROLLBACK');
      throw new Error(`migrating the file (${m.name}): ${/** @type {Error} */ (e).message}`);
    }
  }
  /** Reads (operators' reports) run here, beside the appender's connection. */
  const reader = await instance.connect();
  // One appender per table for the thread's life, both on `conn`, which always holds an open
  // transaction. Posted batches are appended as they arrive (a backlog stays in the port's queue
  // as compact serialized bytes) and acknowledged then (`accepted`: they no longer count against
  // the gateway thread's bound), and committed together: both appenders are flushed into the
  // open transaction and it is committed (one WAL write for both tables), a commit per
  // COMMIT_ROWS rows, COMMIT_HEAP_CHARS or COMMIT_INTERVAL_MS, whichever comes first, because each commit has a
  // fixed cost of a few ms of CPU whatever its size (an appender flush per table, the WAL write
  // and its sync), about as much as appending a few hundred rows (`bench/request-log-cpu.ts`
  // prints the cost per row, commits included). A crash loses the rows appended since the last commit (at most
  // COMMIT_ROWS rows or COMMIT_INTERVAL_MS of them, plus what the port still queued); a request's
  // attempts are committed in the same transaction as the request, so the file never holds a
  // request row without its attempts. A flush, query or close message commits first, so it
  // answers after every earlier row is on disk. Lost rows are reported as `{error, lostRows}`.
  let appender = await conn.createAppender('requests');
  let attemptAppender = await conn.createAppender('attempts');
  await conn.run('BEGIN TRANSACTION');
  /** Rows appended and not yet committed. */
  let pending = 0;
  /** @type {NodeJS.Timeout | null} */
  let commitTimer = null;
  /**
   * Messages that arrived while a commit or an appender replacement was under way, in order
   * (handled once it is done); else null.
   * @type {import('./request-log.ts').LogWorkerMessage[] | null}
   */
  let held = null;
  const lost = (/** @type {unknown} */ e, /** @type {number} */ rows) => port.postMessage({ error: /** @type {Error} */ (e).message, lostRows: rows });
  /**
   * Runs `f` with every message that arrives meanwhile held, then handles those in order.
   * @param {() => Promise<void>} f
   */
  const exclusive = (f) => {
    held = [];
    void f()
      .catch((e) => port.postMessage({ error: /** @type {Error} */ (e).message }))
      .finally(() => {
        const later = /** @type {import('./request-log.ts').LogWorkerMessage[]} */ (held);
        held = null;
        for (const m of later) handle(m);
        if (held === null && pending > 0 && commitTimer === null) commitTimer = setTimeout(commit, COMMIT_INTERVAL_MS);
      });
  };
  /** Closes both appenders (errors ignored: the caller has counted their rows) and opens new ones. */
  const newAppenders = async () => {
    for (const a of [attemptAppender, appender]) {
      try {
        a.closeSync();
      } catch {
        // Reported by the caller.
      }
    }
    appender = await conn.createAppender('requests');
    attemptAppender = await conn.createAppender('attempts');
  };
  /**
   * Starts committing the pending rows; messages are held until it is done.
   * @returns {boolean} whether a commit was started (false: nothing pending, or one is under way)
   */
  const commit = () => {
    if (commitTimer !== null) clearTimeout(commitTimer);
    commitTimer = null;
    if (pending === 0 || held !== null) return false;
    const rows = pending;
    pending = 0;
    pendingHeapChars = 0;
    exclusive(async () => {
      try {
        attemptAppender.flushSync();
        appender.flushSync();
        await conn.run('COMMIT');
        port.postMessage({ committed: rows });
      } catch (e) {
        // The transaction is aborted: closing the appenders cannot write their rest into it, and
        // the rollback takes both tables' rows with it.
        lost(e, rows);
        await newAppenders();
        await conn.run('ROLLBACK').catch(() => {});
      }
      await conn.run('BEGIN TRANSACTION');
    });
    return true;
  };
  /** Replaces appenders that refused a chunk; what they hold stays in the open transaction. */
  const replaceAppenders = () => exclusive(newAppenders);
  /** @param {import('./request-log.ts').LogWorkerMessage} m */
  const handle = (m) => {
    if (held !== null) {
      held.push(m);
      return;
    }
    if ('columns' in m) {
      const columns = /** @type {unknown[][]} */ (m.columns);
      port.postMessage({ accepted: m.rows });
      const attemptColumns = m.attemptRows > 0 ? attemptColumnsOf(columns, m.attemptColumns, m.attemptCounts, m.attemptRows) : [];
      const refused = nullInNotNull(REQUESTS, columns, m.rows) ?? nullInNotNull(ATTEMPTS, attemptColumns, m.attemptRows);
      if (refused !== null) {
        lost(new Error(`a request-log batch was refused: ${refused}`), m.rows);
        return;
      }
      try {
        if (m.attemptRows > 0) appendColumns(attemptAppender, ATTEMPTS, attemptColumns, m.attemptRows);
      } catch (e) {
        // None of the batch's requests were appended; attempts of it already in the appender stay as orphans.
        lost(e, m.rows);
        replaceAppenders();
        return;
      }
      try {
        pending += appendColumns(appender, REQUESTS, columns, m.rows);
      } catch (e) {
        // The chunks before the refused one are in the appender; the rest of the batch is lost.
        const appended = /** @type {{ appendedRows?: number }} */ (e).appendedRows ?? 0;
        pending += appended;
        lost(e, m.rows - appended);
        replaceAppenders();
        return;
      }
      if (pending >= COMMIT_ROWS || pendingHeapChars >= COMMIT_HEAP_CHARS) commit();
      else if (commitTimer === null) commitTimer = setTimeout(commit, COMMIT_INTERVAL_MS);
    } else if (commit()) {
      // Answered once the rows before it are committed.
      /** @type {import('./request-log.ts').LogWorkerMessage[]} */ (held).push(m);
    } else if ('query' in m) {
      const id = m.query;
      reader.runAndReadAll(m.sql, /** @type {never} */ (m.params)).then(
        (r) => port.postMessage({ queryId: id, rows: r.getRowObjectsJson() }),
        (e) => port.postMessage({ queryId: id, queryError: /** @type {Error} */ (e).message }),
      );
    } else if ('flush' in m) {
      port.postMessage({ flushed: m.flush });
    } else {
      try {
        attemptAppender.closeSync();
        appender.closeSync();
      } catch (e) {
        port.postMessage({ error: /** @type {Error} */ (e).message });
      }
      reader.closeSync();
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

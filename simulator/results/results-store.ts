/**
 * The simulator's results store: one DuckDB file per experiment holding the tables declared in
 * schema.ts. Small rows (experiments, runs) go in through parameterised inserts; the per-request,
 * per-attempt, time-series and event rows go in through DuckDB's appender, which is what keeps a
 * 24k-request run's write in the tens of milliseconds. Run summaries are computed in SQL.
 */
import { rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  BIGINT,
  BOOLEAN,
  DOUBLE,
  DuckDBDataChunk,
  DuckDBInstance,
  INTEGER,
  VARCHAR,
  type DuckDBAppender,
  type DuckDBConnection,
  type DuckDBType,
  type DuckDBValue,
} from './duckdb-api.ts';
import type {
  AttemptRow,
  ComparisonRow,
  EndpointSampleRow,
  EventRow,
  ExperimentRow,
  RequestRow,
  RunRow,
  SummaryRow,
} from './result-rows.ts';
import {
  RESULTS_SCHEMA_SQL,
  TABLE_NAMES,
  TABLES,
  type ColumnDef,
  type SqlType,
  type TableDef,
} from './schema.ts';
import { createFolders } from './output-shape.ts';
import { parquetDirSchemaSql } from './parquet-dir.ts';
import { checkValue, INT32_MAX, INT32_MIN } from './value-check.ts';
import type { ColumnarRows } from './columnar-rows.ts';
import { phase } from '../phase-clock.ts';

/** A value bound to a `$n` / `$name` placeholder of {@link ResultsStore.query}. */
export type SqlParam = string | number | bigint | boolean | null;

/** Positional (`$1`, `$2`, … or `?`) or named (`$name`) parameters of a query. */
export type SqlParams = readonly SqlParam[] | Readonly<Record<string, SqlParam>>;

/** Options of {@link ResultsStore.open}. */
export interface OpenOptions {
  /** Delete an existing database file (and its `.wal`) first, starting empty. Default false. */
  overwrite?: boolean;
  /**
   * DuckDB worker threads (its `threads` setting; default: DuckDB's, one per core). The results
   * thread of `switchyard sim` uses 1, so DuckDB does not compete with the replay for cores.
   */
  threads?: number;
}

/** SLOs and virtual duration that {@link ResultsStore.computeSummary} needs besides the rows. */
export interface SummaryOptions {
  /** TTFT objective, ms; a request meets it when `ttft_ms <= sloTtftMs`. */
  sloTtftMs: number;
  /** TPOT objective, ms; a request meets it when `tpot_ms` is null or `<= sloTpotMs`. */
  sloTpotMs: number;
  /** Virtual duration of the run, ms (> 0); denominator of the throughput figures. */
  durationMs: number;
  /** Subscription fees of the run, USD (≥ 0). Default 0. */
  fixedCostUsd?: number;
  /** GPU-hours of the local replicas (≥ 0). Default 0. */
  gpuHours?: number;
  /** GPU cost of the run, USD (≥ 0). Default 0. */
  gpuCostUsd?: number;
}

const DUCKDB_TYPES: { readonly [T in SqlType]: DuckDBType } = {
  VARCHAR,
  DOUBLE,
  INTEGER,
  BIGINT,
  BOOLEAN,
};

function checkRows(table: TableDef, rows: readonly object[]): void {
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as Record<string, unknown>;
    for (const col of table.columns) checkValue(table.name, i, col, row[col.field]);
  }
}

/** Writes one checked, non-null value of a column to the appender. */
type CellWriter = (appender: DuckDBAppender, value: unknown) => void;

const CELL_WRITERS: { readonly [T in SqlType]: CellWriter } = {
  VARCHAR: (a, v) => a.appendVarchar(v as string),
  DOUBLE: (a, v) => a.appendDouble(v as number),
  INTEGER: (a, v) => a.appendInteger(v as number),
  BIGINT: (a, v) => a.appendBigInt(BigInt(v as number)),
  BOOLEAN: (a, v) => a.appendBoolean(v as boolean),
};

/** Cheap per-cell type test; {@link checkValue} runs only when it fails, to build the error. */
const CELL_OK: { readonly [T in SqlType]: (v: unknown) => boolean } = {
  VARCHAR: (v) => typeof v === 'string',
  DOUBLE: (v) => typeof v === 'number' && Number.isFinite(v),
  INTEGER: (v) => typeof v === 'number' && Number.isInteger(v) && v >= INT32_MIN && v <= INT32_MAX,
  BIGINT: (v) => typeof v === 'number' && Number.isSafeInteger(v),
  BOOLEAN: (v) => typeof v === 'boolean',
};

/**
 * Checks and appends `rows` in one pass, throwing (TypeError / RangeError from
 * {@link checkValue}) at the first bad value; the caller rolls the batch back.
 */
function appendChecked(appender: DuckDBAppender, table: TableDef, rows: readonly object[]): void {
  const cols = table.columns.map((c) => ({
    def: c,
    field: c.field,
    nullable: c.nullable,
    ok: CELL_OK[c.type],
    write: CELL_WRITERS[c.type],
  }));
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as Record<string, unknown>;
    for (const c of cols) {
      const v = row[c.field];
      if (v === null && c.nullable) appender.appendNull();
      else if (c.ok(v)) c.write(appender, v);
      else {
        checkValue(table.name, i, c.def, v); // throws: CELL_OK and checkValue agree
        throw new Error(`${table.name}[${i}].${c.field}: rejected value`);
      }
    }
    appender.endRow();
  }
}

/**
 * DuckDB result values as plain JSON-able JS: BIGINT / HUGEINT → number (exact up to 2^53),
 * recursively through lists and structs; dates and blobs pass through. Shared with the dashboard.
 */
export function toPlain(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (Array.isArray(value)) return value.map(toPlain);
  if (value !== null && typeof value === 'object' && !(value instanceof Date) && !(value instanceof Uint8Array)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = toPlain(v);
    return out;
  }
  return value;
}

/**
 * A results database opened for writing and querying. Methods may be called without awaiting
 * the previous one: operations run one at a time, in call order, on a single connection (an
 * appender batch is a transaction, and two interleaved ones would collide).
 *
 * Errors: every method rejects with `Error('ResultsStore is closed')` after {@link close};
 * DuckDB failures (I/O, SQL, constraint violations) surface as DuckDB's own `Error`s.
 */
export class ResultsStore {
  /** Path of the database file, as given to {@link ResultsStore.open}. */
  readonly path: string;
  private readonly instance: DuckDBInstance;
  private readonly connection: DuckDBConnection;
  private tail: Promise<unknown> = Promise.resolve();
  private closed = false;
  private closing: Promise<void> | undefined;

  private constructor(path: string, instance: DuckDBInstance, connection: DuckDBConnection) {
    this.path = path;
    this.instance = instance;
    this.connection = connection;
  }

  /**
   * Opens (creating if needed) the DuckDB file at `path`, creating its parent folder and every
   * results table (`CREATE TABLE IF NOT EXISTS`, so reopening keeps existing rows). With
   * `overwrite`, an existing file and its `.wal` are deleted first. `':memory:'` opens a
   * throwaway in-memory database.
   *
   * Do not open the same file twice at once (in this or another process): DuckDB allows one
   * writer per file and rejects (or, within one process, does not coordinate) a second one.
   *
   * @throws Error when the file cannot be created or opened, or when an existing table's
   *   columns differ from schema.ts (an older file: reopen with `overwrite`).
   */
  static async open(path: string, opts: OpenOptions = {}): Promise<ResultsStore> {
    if (path !== ':memory:') {
      createFolders(dirname(path));
      if (opts.overwrite === true) {
        await rm(path, { force: true });
        await rm(`${path}.wal`, { force: true });
      }
    }
    const instance = await DuckDBInstance.create(path, opts.threads === undefined ? undefined : { threads: String(opts.threads) });
    let connection: DuckDBConnection | undefined;
    try {
      connection = await instance.connect();
      await connection.run(RESULTS_SCHEMA_SQL);
      await checkSchema(connection, path);
      return new ResultsStore(path, instance, connection);
    } catch (err) {
      connection?.closeSync();
      instance.closeSync();
      throw err;
    }
  }

  /**
   * Opens a directory of Parquet results (parquet-dir.ts; what `sim --shard` writes) in place: an
   * in-memory database whose results tables are views over the directory's files, so every
   * query of this class works on it; writes to those tables fail. Files added later are not seen.
   * @throws Error when a file is not Parquet or its columns differ from schema.ts.
   */
  static async openParquetDir(dir: string): Promise<ResultsStore> {
    const instance = await DuckDBInstance.create(':memory:');
    let connection: DuckDBConnection | undefined;
    try {
      connection = await instance.connect();
      await connection.run(parquetDirSchemaSql(dir));
      await checkSchema(connection, dir);
      return new ResultsStore(dir, instance, connection);
    } catch (err) {
      connection?.closeSync();
      instance.closeSync();
      throw err;
    }
  }

  /**
   * Inserts one `experiments` row.
   * @throws TypeError / RangeError for a field of the wrong type or range (nothing written);
   *   a DuckDB constraint Error when `experimentId` already exists.
   */
  async addExperiment(row: ExperimentRow): Promise<void> {
    await this.insertRow(TABLES.experiments, row);
  }

  /**
   * Inserts one `runs` row.
   * @throws TypeError / RangeError for a field of the wrong type or range (nothing written);
   *   a DuckDB constraint Error when `runId` already exists.
   */
  async addRun(row: RunRow): Promise<void> {
    await this.insertRow(TABLES.runs, row);
  }

  /**
   * Appends `requests` rows in one transaction (all or none).
   * @throws TypeError / RangeError naming `requests[i].field` for the first bad value (wrong JS
   *   type, null in a NOT NULL column, non-finite double, fractional or out-of-range integer);
   *   the batch is rolled back, so nothing of it is written.
   */
  async appendRequests(rows: readonly RequestRow[]): Promise<void> {
    await this.appendRows(TABLES.requests, rows);
  }

  /** Appends `attempts` rows in one transaction; errors as {@link appendRequests}. */
  async appendAttempts(rows: readonly AttemptRow[]): Promise<void> {
    await this.appendRows(TABLES.attempts, rows);
  }

  /** Appends `endpoint_timeseries` rows in one transaction; errors as {@link appendRequests}. */
  async appendTimeseries(rows: readonly EndpointSampleRow[]): Promise<void> {
    await this.appendRows(TABLES.endpoint_timeseries, rows);
  }

  /** Appends `events` rows in one transaction; errors as {@link appendRequests}. */
  async appendEvents(rows: readonly EventRow[]): Promise<void> {
    await this.appendRows(TABLES.events, rows);
  }

  /**
   * Appends rows encoded as columns (columnar-rows.ts; already checked by the encoder) to their
   * table in one transaction, as DuckDB data chunks of up to 2,048 rows: numeric columns are
   * copied into each chunk's vectors in JS and handed over with one copy per vector, so a row
   * costs a call into DuckDB per string column, not per column.
   * @throws DuckDB's Error for a failed write; the batch is rolled back.
   */
  async appendColumns(batch: ColumnarRows): Promise<void> {
    if (batch.length === 0) return;
    const def = TABLES[batch.table];
    const types = def.columns.map((c) => DUCKDB_TYPES[c.type]);
    await this.exclusive(async () => {
      const conn = this.connection;
      await conn.run('BEGIN TRANSACTION');
      try {
        const appender = await conn.createAppender(def.name);
        try {
          for (let from = 0; from < batch.length; from += CHUNK_ROWS) {
            const n = Math.min(CHUNK_ROWS, batch.length - from);
            const chunk = DuckDBDataChunk.create(types, n);
            def.columns.forEach((c, ci) => fillVector(chunk, ci, c.type, batch.columns[ci]!, from, n));
            appender.appendDataChunk(chunk);
          }
        } finally {
          appender.closeSync(); // flushes
        }
        await conn.run('COMMIT');
      } catch (err) {
        await conn.run('ROLLBACK');
        throw err;
      }
    });
  }

  /**
   * Inserts one `summary` row computed elsewhere (the planner computes summaries in a scratch
   * store and keeps only them).
   * @throws TypeError / RangeError for a field of the wrong type or range (nothing written);
   *   a DuckDB constraint Error when the run already has a summary.
   */
  async addSummary(row: SummaryRow): Promise<void> {
    await this.insertRow(TABLES.summary, row);
  }

  /**
   * Computes the summary of run `runId` in SQL from its `requests` rows, stores it in `summary`
   * (replacing an earlier summary of the same run) and returns it.
   *
   * - `ttft/tpot/e2e P50/P90/P99` (ms): `quantile_cont` over rows with status `ok` (nulls
   *   ignored); null when there is no such value.
   * - `throughputRps`: ok requests / (durationMs / 1000); `outputTokensPerSec`: output tokens of
   *   ok requests / (durationMs / 1000).
   * - `prefixCacheHitRate`: Σ cached_tokens / Σ input_tokens over all rows; 0 without input.
   * - `goodput`: rows that are ok with `ttft_ms <= sloTtftMs` and (`tpot_ms` null or
   *   `<= sloTpotMs`), over all rows; 0 when the run has no rows.
   * - `successRate`: ok rows / rows (0 without rows); `failedRequests`: rows not ok;
   *   `rateLimitedRequests`: status `upstream_rate_limited`; `clientGoneRequests`: status
   *   `client_timeout`, `client_abandoned` or `client_gone`; `retriedRequests`: tries > 1;
   *   `fallbackRequests`: fallbacks > 0.
   * - costs: `tokenCostUsd` = Σ cost_usd; fixed, GPU-hours and GPU cost as given;
   *   `totalCostUsd` = token + fixed + GPU; `costPer1kRequestsUsd` = total / rows × 1000 (0 without rows).
   *
   * A run without rows yields counts 0, rates 0 and null percentiles.
   * @throws RangeError unless the SLOs and costs are finite and ≥ 0 and `durationMs` is finite and > 0.
   */
  async computeSummary(runId: string, strategy: string, opts: SummaryOptions): Promise<SummaryRow> {
    const { sloTtftMs, sloTpotMs, durationMs } = opts;
    const fixedCostUsd = opts.fixedCostUsd ?? 0;
    const gpuHours = opts.gpuHours ?? 0;
    const gpuCostUsd = opts.gpuCostUsd ?? 0;
    for (const [name, v] of [['sloTtftMs', sloTtftMs], ['sloTpotMs', sloTpotMs], ['fixedCostUsd', fixedCostUsd], ['gpuHours', gpuHours], ['gpuCostUsd', gpuCostUsd]] as const) {
      if (!Number.isFinite(v) || v < 0) throw new RangeError(`${name} must be a finite number ≥ 0, got ${v}`);
    }
    if (!Number.isFinite(durationMs) || durationMs <= 0) {
      throw new RangeError(`durationMs must be a finite number > 0, got ${durationMs}`);
    }
    const cols = TABLES.summary.columns;
    // One statement computes, stores and returns the row, so what is returned is what is stored.
    const sql = `
      INSERT OR REPLACE INTO summary (${cols.map((c) => c.column).join(', ')})
      WITH r AS (SELECT * FROM requests WHERE run_id = $run_id),
      ok AS (SELECT * FROM r WHERE status = 'ok')
      SELECT
        $run_id, $strategy,
        (SELECT count(*) FROM r),
        (SELECT count(*) FROM ok),
        (SELECT quantile_cont(ttft_ms, 0.5) FROM ok),
        (SELECT quantile_cont(ttft_ms, 0.9) FROM ok),
        (SELECT quantile_cont(ttft_ms, 0.99) FROM ok),
        (SELECT quantile_cont(tpot_ms, 0.5) FROM ok),
        (SELECT quantile_cont(tpot_ms, 0.9) FROM ok),
        (SELECT quantile_cont(tpot_ms, 0.99) FROM ok),
        (SELECT quantile_cont(e2e_ms, 0.5) FROM ok),
        (SELECT quantile_cont(e2e_ms, 0.9) FROM ok),
        (SELECT quantile_cont(e2e_ms, 0.99) FROM ok),
        (SELECT count(*) FROM ok) / ($duration_ms / 1000.0),
        (SELECT coalesce(sum(output_tokens), 0) FROM ok) / ($duration_ms / 1000.0),
        (SELECT coalesce(sum(cached_tokens)::DOUBLE / nullif(sum(input_tokens), 0), 0) FROM r),
        $slo_ttft_ms, $slo_tpot_ms,
        (SELECT coalesce(
           count(*) FILTER (WHERE status = 'ok' AND ttft_ms <= $slo_ttft_ms
                            AND (tpot_ms IS NULL OR tpot_ms <= $slo_tpot_ms))::DOUBLE
           / nullif(count(*), 0), 0) FROM r),
        (SELECT coalesce(count(*) FILTER (WHERE status = 'ok')::DOUBLE / nullif(count(*), 0), 0) FROM r),
        (SELECT count(*) FILTER (WHERE status <> 'ok') FROM r),
        (SELECT count(*) FILTER (WHERE status = 'upstream_rate_limited') FROM r),
        (SELECT count(*) FILTER (WHERE status IN ('client_timeout', 'client_abandoned', 'client_gone')) FROM r),
        (SELECT count(*) FILTER (WHERE tries > 1) FROM r),
        (SELECT count(*) FILTER (WHERE fallbacks > 0) FROM r),
        (SELECT coalesce(fsum(cost_usd), 0) FROM r),
        $fixed_cost_usd, $gpu_hours, $gpu_cost_usd,
        (SELECT coalesce(fsum(cost_usd), 0) FROM r) + $fixed_cost_usd + $gpu_cost_usd,
        (SELECT coalesce(((SELECT coalesce(fsum(cost_usd), 0) FROM r) + $fixed_cost_usd + $gpu_cost_usd) * 1000.0 / nullif(count(*), 0), 0) FROM r),
        $duration_ms
      RETURNING *`;
    const rows = await this.read<Record<string, unknown>>(
      sql,
      {
        run_id: runId,
        strategy,
        slo_ttft_ms: sloTtftMs,
        slo_tpot_ms: sloTpotMs,
        duration_ms: durationMs,
        fixed_cost_usd: fixedCostUsd,
        gpu_hours: gpuHours,
        gpu_cost_usd: gpuCostUsd,
      },
      {
        run_id: VARCHAR,
        strategy: VARCHAR,
        slo_ttft_ms: DOUBLE,
        slo_tpot_ms: DOUBLE,
        duration_ms: DOUBLE,
        fixed_cost_usd: DOUBLE,
        gpu_hours: DOUBLE,
        gpu_cost_usd: DOUBLE,
      },
    );
    const stored = rows[0];
    if (stored === undefined) throw new Error(`summary insert for run ${runId} returned no row`);
    const out: Record<string, unknown> = {};
    for (const c of cols) out[c.field] = stored[c.column];
    return out as unknown as SummaryRow;
  }

  /**
   * Merges a comparison into the table in one transaction: the rows of (`experimentId`,
   * `baseline`) for the `metrics` compared are replaced with `rows`; rows of other metrics (an
   * experiment's own `compare:` block, an earlier `switchyard compare --metrics …`) are kept. So
   * re-running `compare` with the same baseline and metrics leaves one set, and never drops what
   * another comparison stored.
   * @throws TypeError / RangeError naming `comparisons[i].field` for a bad value (nothing changed).
   */
  async mergeComparisons(experimentId: string, baseline: string, metrics: readonly string[], rows: readonly ComparisonRow[]): Promise<void> {
    checkRows(TABLES.comparisons, rows);
    const replaced = [...new Set([...metrics, ...rows.map((r) => r.metric)])];
    await this.exclusive(async () => {
      const conn = this.connection;
      await conn.run('BEGIN TRANSACTION');
      try {
        for (const metric of replaced) {
          await conn.run('DELETE FROM comparisons WHERE experiment_id = $1 AND baseline = $2 AND metric = $3', [experimentId, baseline, metric], [VARCHAR, VARCHAR, VARCHAR]);
        }
        if (rows.length > 0) {
          const appender = await conn.createAppender('comparisons');
          appendChecked(appender, TABLES.comparisons, rows);
          appender.closeSync();
        }
        await conn.run('COMMIT');
      } catch (err) {
        await conn.run('ROLLBACK');
        throw err;
      }
    });
  }

  /**
   * Runs `sql` (one or more statements; the last one's rows are returned) with optional
   * parameters and returns its rows as plain objects keyed by column name. Integers of every
   * width come back as JS numbers (BIGINT / HUGEINT converted with `Number`, exact up to 2^53),
   * DOUBLE as number, VARCHAR as string, NULL as null. `T` is asserted, not checked.
   * @throws DuckDB's Error for invalid SQL or a failed statement.
   */
  async query<T = Record<string, unknown>>(sql: string, params?: SqlParams): Promise<T[]> {
    return this.read<T>(sql, params);
  }

  /**
   * Checkpoints: folds the WAL into the database file (the rows written so far), so that
   * {@link close} has only what comes after to fold.
   * @throws DuckDB's Error for a failed write.
   */
  async checkpoint(): Promise<void> {
    await this.exclusive(() => this.connection.run('CHECKPOINT'));
  }

  /**
   * Checkpoints (folding the WAL into the database file, so the file alone holds every row)
   * and closes the connection and database. Waits for operations already called; later calls
   * reject. Idempotent: every call returns the same promise.
   */
  close(): Promise<void> {
    this.closing ??= this.exclusive(async () => {
      this.closed = true;
      try {
        await this.connection.run('CHECKPOINT');
        phase('results', 'checkpointed');
      } finally {
        this.connection.closeSync();
        this.instance.closeSync();
      }
    });
    return this.closing;
  }

  /** {@link query} with optional explicit parameter types (else inferred from the JS values). */
  private read<T>(
    sql: string,
    params?: SqlParams,
    types?: readonly DuckDBType[] | Readonly<Record<string, DuckDBType>>,
  ): Promise<T[]> {
    return this.exclusive(async () => {
      const reader = await this.connection.runAndReadAll(
        sql,
        params as DuckDBValue[] | Record<string, DuckDBValue> | undefined,
        types as DuckDBType[] | Record<string, DuckDBType> | undefined,
      );
      return reader.getRowObjectsJS().map((row) => toPlain(row) as T);
    });
  }

  /** Runs `fn` after every operation called before it; rejects once the store is closed. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(() => {
      if (this.closed) throw new Error('ResultsStore is closed');
      return fn();
    });
    this.tail = run.catch(() => undefined);
    return run;
  }

  private async insertRow(table: TableDef, row: object): Promise<void> {
    checkRows(table, [row]);
    const r = row as Record<string, unknown>;
    const sql = `INSERT INTO ${table.name} (${table.columns.map((c) => c.column).join(', ')}) VALUES (${table.columns
      .map((_, i) => `$${i + 1}`)
      .join(', ')})`;
    // Explicit types: inferring from JS values would bind 3.0 as INTEGER and a seed as HUGEINT.
    const values = table.columns.map((c) => r[c.field] as DuckDBValue);
    const types = table.columns.map((c) => DUCKDB_TYPES[c.type]);
    await this.exclusive(() => this.connection.run(sql, values, types));
  }

  private async appendRows(table: TableDef, rows: readonly object[]): Promise<void> {
    if (rows.length === 0) return;
    await this.exclusive(async () => {
      const conn = this.connection;
      // The appender writes through the connection's open transaction, so a bad row found
      // halfway, or a failure while flushing, rolls the whole batch back: all rows or none.
      await conn.run('BEGIN TRANSACTION');
      let appender: DuckDBAppender | undefined;
      try {
        appender = await conn.createAppender(table.name);
        appendChecked(appender, table, rows);
        const a = appender;
        appender = undefined;
        a.closeSync(); // flushes
        await conn.run('COMMIT');
      } catch (err) {
        if (appender !== undefined) {
          try {
            appender.clear();
            appender.closeSync();
          } catch {
            // The batch is being abandoned; the rollback below is what matters.
          }
        }
        await conn.run('ROLLBACK');
        throw err;
      }
    });
  }
}

/** Rows per data chunk: DuckDB's vector size. */
const CHUNK_ROWS = 2048;

/** Writes rows [from, from + n) of column `d` into vector `ci` of `chunk` and flushes it. */
function fillVector(chunk: DuckDBDataChunk, ci: number, type: SqlType, d: ColumnarRows['columns'][number], from: number, n: number): void {
  const v = chunk.getColumnVector(ci);
  if (d.kind === 'str') {
    for (let i = 0; i < n; i++) {
      const code = d.codes[from + i]!;
      v.setItem(i, code < 0 ? null : d.dict[code]!);
    }
  } else {
    const { values, nulls } = d;
    for (let i = 0; i < n; i++) {
      const k = from + i;
      if (nulls !== null && nulls[k] === 1) v.setItem(i, null);
      else if (type === 'BIGINT') v.setItem(i, BigInt(values[k]!));
      else if (type === 'BOOLEAN') v.setItem(i, values[k] === 1);
      else v.setItem(i, values[k]!);
    }
  }
  v.flush();
}

/** Throws if a table that already existed has columns other than schema.ts declares. */
async function checkSchema(connection: DuckDBConnection, path: string): Promise<void> {
  const reader = await connection.runAndReadAll(
    `SELECT table_name, column_name, data_type FROM duckdb_columns()
     WHERE database_name = current_database() AND schema_name = current_schema()
     ORDER BY table_name, column_index`,
  );
  const actual = new Map<string, string[]>();
  for (const row of reader.getRowObjectsJS()) {
    const name = String(row.table_name);
    const list = actual.get(name) ?? [];
    list.push(`${String(row.column_name)} ${String(row.data_type)}`);
    actual.set(name, list);
  }
  for (const name of TABLE_NAMES) {
    const want = TABLES[name].columns.map((c) => `${c.column} ${c.type}`).join(', ');
    const got = (actual.get(name) ?? []).join(', ');
    if (got !== want) {
      throw new Error(
        `${path}: table ${name} has columns (${got}), expected (${want}); ` +
          'it was written by another schema version; reopen with { overwrite: true }',
      );
    }
  }
}

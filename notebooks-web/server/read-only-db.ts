/**
 * A results database opened read-only for the dashboard. DuckDB's `READ_ONLY` access mode means
 * no query the server runs can change the file, and other read-only openers may share it. Each
 * query runs on its own short-lived connection, so concurrent requests do not queue behind one.
 */
import { BIGINT, DOUBLE, DuckDBInstance, LIST, VARCHAR, listValue, type DuckDBType, type DuckDBValue } from '@duckdb/node-api';
import { isParquetResultsDir, parquetDirSchemaSql } from '../../simulator/results/parquet-dir.ts';
import { toPlain } from '../../simulator/results/results-store.ts';

/** Named parameters of a query (`$name`), each with its DuckDB type. */
export type BoundParams = Readonly<Record<string, { value: DuckDBValue; type: DuckDBType }>>;

/** A DuckDB file opened with `access_mode = READ_ONLY`. */
export class ReadOnlyDb {
  private tableCache: Map<string, string[]> | undefined;

  private constructor(
    /** Absolute path of the file. */
    readonly path: string,
    private readonly instance: DuckDBInstance,
  ) {}

  /**
   * Opens `path` read-only: a DuckDB file, or a directory of Parquet results read in place.
   * @throws Error (DuckDB's) when the file is missing, not a DuckDB database, or locked by a
   *   writer in another process.
   */
  static async open(path: string): Promise<ReadOnlyDb> {
    if (isParquetResultsDir(path)) {
      // Read in place: an in-memory database whose tables are views over the directory's files.
      const instance = await DuckDBInstance.create(':memory:');
      try {
        const connection = await instance.connect();
        try {
          await connection.run(parquetDirSchemaSql(path));
        } finally {
          connection.closeSync();
        }
      } catch (err) {
        instance.closeSync();
        throw err;
      }
      return new ReadOnlyDb(path, instance);
    }
    const instance = await DuckDBInstance.create(path, { access_mode: 'READ_ONLY' });
    return new ReadOnlyDb(path, instance);
  }

  /**
   * Runs one parameterised statement and returns its rows as plain objects keyed by column
   * name (integers as numbers, lists as arrays, NULL as null). `T` is asserted, not checked.
   * @throws Error (DuckDB's) for a failed statement.
   */
  async query<T = Record<string, unknown>>(sql: string, params: BoundParams = {}): Promise<T[]> {
    const values: Record<string, DuckDBValue> = {};
    const types: Record<string, DuckDBType> = {};
    for (const [name, p] of Object.entries(params)) {
      values[name] = p.value;
      types[name] = p.type;
    }
    const connection = await this.instance.connect();
    try {
      const reader = await connection.runAndReadAll(sql, values, types);
      return reader.getRowObjectsJS().map((row) => toPlain(row) as T);
    } finally {
      connection.closeSync();
    }
  }

  /** Columns of each table of the main schema (lower-case names), read once and cached. */
  async tables(): Promise<Map<string, string[]>> {
    if (this.tableCache) return this.tableCache;
    const rows = await this.query<{ table_name: string; column_name: string }>(
      `SELECT table_name, column_name FROM duckdb_columns()
       WHERE database_name = current_database() AND schema_name = current_schema()
       ORDER BY table_name, column_index`,
    );
    const out = new Map<string, string[]>();
    for (const r of rows) {
      const list = out.get(r.table_name.toLowerCase()) ?? [];
      list.push(r.column_name.toLowerCase());
      out.set(r.table_name.toLowerCase(), list);
    }
    this.tableCache = out;
    return out;
  }

  /** Closes the database; later queries throw. */
  close(): void {
    this.instance.closeSync();
  }
}

/** A VARCHAR parameter (null binds SQL NULL). */
export function textParam(value: string | null): { value: DuckDBValue; type: DuckDBType } {
  return { value, type: VARCHAR };
}

/** A DOUBLE parameter (null binds SQL NULL). */
export function doubleParam(value: number | null): { value: DuckDBValue; type: DuckDBType } {
  return { value, type: DOUBLE };
}

/** A BIGINT parameter; `value` must be a safe integer. */
export function bigintParam(value: number): { value: DuckDBValue; type: DuckDBType } {
  return { value: BigInt(value), type: BIGINT };
}

/** A `DOUBLE[]` parameter, e.g. the probabilities of `quantile_cont(x, $probs)`. */
export function doubleListParam(values: readonly number[]): { value: DuckDBValue; type: DuckDBType } {
  return { value: listValue([...values]), type: LIST(DOUBLE) };
}

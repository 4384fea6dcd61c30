/**
 * DuckDB's Node API as the results store uses it, loaded with `require`. The package is CommonJS
 * (about 220 files); imported from ESM, Node first scans every re-exported file with its CommonJS
 * lexer to find the named exports (about 200 ms of a thread's CPU), which `require` skips. The
 * values and types are the package's own.
 */
import { createRequire } from 'node:module';
import type * as DuckDB from '@duckdb/node-api';

const duckdb = createRequire(import.meta.url)('@duckdb/node-api') as typeof DuckDB;

/** As `@duckdb/node-api`'s exports of the same names. */
export const { BIGINT, BOOLEAN, DOUBLE, DuckDBDataChunk, DuckDBInstance, INTEGER, VARCHAR } = duckdb;
/** As `@duckdb/node-api`'s `DuckDBDataChunk`. */
export type DuckDBDataChunk = DuckDB.DuckDBDataChunk;
/** As `@duckdb/node-api`'s `DuckDBInstance`. */
export type DuckDBInstance = DuckDB.DuckDBInstance;
export type { DuckDBAppender, DuckDBConnection, DuckDBType, DuckDBValue } from '@duckdb/node-api';

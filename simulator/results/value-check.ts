/**
 * The check every value written to a results table passes (row appender and columnar encoder
 * alike): the JS type and range a column's DuckDB type admits, with an error naming the row and
 * field. Checked in JS because DuckDB's appender would otherwise truncate or wrap numbers silently.
 */
import type { ColumnDef } from './schema.ts';

/** Smallest INTEGER value. */
export const INT32_MIN = -2_147_483_648;
/** Largest INTEGER value. */
export const INT32_MAX = 2_147_483_647;

/**
 * Throws unless `value` fits column `col`: TypeError for a wrong JS type (or a missing /
 * null value in a NOT NULL column), RangeError for non-finite doubles and integers that are
 * fractional or out of range. Checked in JS because the appender would otherwise truncate or
 * wrap numbers silently.
 */
export function checkValue(table: string, index: number, col: ColumnDef, value: unknown): void {
  const where = `${table}[${index}].${col.field}`;
  if (value === null && col.nullable) return;
  const want = `${col.type}${col.nullable ? ' or null' : ''}`;
  switch (col.type) {
    case 'VARCHAR':
      if (typeof value === 'string') return;
      break;
    case 'BOOLEAN':
      if (typeof value === 'boolean') return;
      break;
    case 'DOUBLE':
      if (typeof value === 'number') {
        if (Number.isFinite(value)) return;
        throw new RangeError(`${where}: expected a finite number, got ${String(value)}`);
      }
      break;
    case 'INTEGER':
      if (typeof value === 'number') {
        if (Number.isInteger(value) && value >= INT32_MIN && value <= INT32_MAX) return;
        throw new RangeError(`${where}: expected a 32-bit integer, got ${String(value)}`);
      }
      break;
    case 'BIGINT':
      if (typeof value === 'number') {
        if (Number.isSafeInteger(value)) return;
        throw new RangeError(`${where}: expected a safe integer, got ${String(value)}`);
      }
      break;
  }
  throw new TypeError(`${where}: expected ${want}, got ${describe(value)}`);
}

function describe(value: unknown): string {
  if (value === undefined) return 'undefined (missing field)';
  if (value === null) return 'null';
  if (typeof value === 'string') return `string ${JSON.stringify(value)}`;
  if (typeof value === 'object' || typeof value === 'function') return typeof value;
  return `${typeof value} ${String(value)}`;
}


/**
 * Sorting of table rows by one column. Pure: numbers compare numerically, strings with a
 * natural collation (`run-2` before `run-10`), nulls always last, ties keep input order.
 */

/** A cell's sortable value. */
export type CellValue = string | number | null;

const collator = new Intl.Collator('en', { numeric: true, sensitivity: 'base' });

/** Compares two cell values ascending; nulls (and NaN) sort after everything. */
export function compareCells(a: CellValue, b: CellValue): number {
  const na = a === null || (typeof a === 'number' && Number.isNaN(a));
  const nb = b === null || (typeof b === 'number' && Number.isNaN(b));
  if (na || nb) return na === nb ? 0 : na ? 1 : -1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return collator.compare(String(a), String(b));
}

/**
 * A sorted copy of `rows` by `value(row)`, ascending or descending; nulls stay last in both
 * directions and equal values keep their order.
 */
export function sortRows<R>(rows: readonly R[], value: (r: R) => CellValue, dir: 'asc' | 'desc'): R[] {
  const sign = dir === 'asc' ? 1 : -1;
  return rows
    .map((r, i) => ({ r, i, v: value(r) }))
    .sort((x, y) => {
      const xNull = x.v === null || (typeof x.v === 'number' && Number.isNaN(x.v));
      const yNull = y.v === null || (typeof y.v === 'number' && Number.isNaN(y.v));
      if (xNull || yNull) return xNull === yNull ? x.i - y.i : xNull ? 1 : -1;
      return sign * compareCells(x.v, y.v) || x.i - y.i;
    })
    .map((e) => e.r);
}

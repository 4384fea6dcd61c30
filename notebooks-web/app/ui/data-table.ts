/**
 * A sortable table with CSV export. Clicking a header sorts by it (again: reverses); the sort
 * is reported to the page, which keeps it in the URL. Rows may be clickable (keyboard too).
 */
import type { SortState } from '../route.ts';
import { toCsv } from './csv.ts';
import { h } from './dom.ts';
import { downloadText } from './export.ts';
import { sortRows, type CellValue } from './table-sort.ts';

/** One column: how to get a row's sortable value and how to show it. */
export interface Column<R> {
  key: string;
  label: string;
  /** Sortable and exported value. */
  value: (r: R) => CellValue;
  /** Displayed cell; default: the value as text. */
  format?: (v: CellValue, r: R) => string | Node;
  /** Right-aligned, first click sorts descending. */
  numeric?: boolean;
  /** Header tooltip (units, definition). */
  title?: string;
  /** Whether the header sorts (default true). */
  sortable?: boolean;
}

/** Options of {@link dataTable}. */
export interface TableOptions<R> {
  /** `data-table` attribute, for tests and styling. */
  name: string;
  columns: readonly Column<R>[];
  rows: readonly R[];
  sort: SortState | null;
  onSort: (s: SortState) => void;
  /** Rows arrive sorted (server-side paging): show the sort, do not re-sort. */
  presorted?: boolean;
  onRowClick?: (r: R) => void;
  rowKey?: (r: R) => string;
  selectedKey?: string;
  /** File name of the CSV export, without extension. */
  csvName: string;
  caption?: string;
  /** Shown instead of an empty body. */
  emptyText?: string;
}

/** Builds the table (with a caption line holding the CSV button). */
export function dataTable<R>(o: TableOptions<R>): HTMLElement {
  const col = o.sort ? o.columns.find((c) => c.key === o.sort!.key) : undefined;
  const rows = col && o.sort && !o.presorted ? sortRows(o.rows, col.value, o.sort.dir) : [...o.rows];

  const head = h(
    'tr',
    {},
    o.columns.map((c) => {
      const active = o.sort?.key === c.key;
      const dir = active ? o.sort!.dir : null;
      const next: SortState = { key: c.key, dir: active ? (dir === 'asc' ? 'desc' : 'asc') : c.numeric ? 'desc' : 'asc' };
      return h(
        'th',
        {
          scope: 'col',
          class: c.numeric ? 'num' : null,
          'aria-sort': dir === 'asc' ? 'ascending' : dir === 'desc' ? 'descending' : 'none',
          'data-key': c.key,
          title: c.title,
        },
        c.sortable === false
          ? c.label
          : h('button', { type: 'button', class: 'sort', onclick: () => o.onSort(next) }, c.label, h('span', { class: 'sort-mark', 'aria-hidden': 'true' }, dir === 'asc' ? '▲' : dir === 'desc' ? '▼' : '')),
      );
    }),
  );

  const body = h('tbody');
  if (rows.length === 0) {
    body.append(h('tr', {}, h('td', { colspan: o.columns.length, class: 'empty' }, o.emptyText ?? 'no rows')));
  }
  for (const r of rows) {
    const key = o.rowKey?.(r);
    const tr = h(
      'tr',
      {
        class: [o.onRowClick ? 'clickable' : '', key !== undefined && key === o.selectedKey ? 'selected' : ''].join(' ').trim() || null,
        tabindex: o.onRowClick ? 0 : null,
        'data-key': key,
      },
      o.columns.map((c) => {
        const v = c.value(r);
        const shown = c.format ? c.format(v, r) : v === null ? '–' : String(v);
        return h('td', { class: c.numeric ? 'num' : null }, shown);
      }),
    );
    if (o.onRowClick) {
      const click = o.onRowClick;
      tr.addEventListener('click', (e) => {
        // A link or button inside the row does its own thing.
        if ((e.target as Element).closest('a, button, input, select')) return;
        click(r);
      });
      tr.addEventListener('keydown', (e) => {
        if (e.key === 'Enter' || e.key === ' ') {
          e.preventDefault();
          click(r);
        }
      });
    }
    body.append(tr);
  }

  const csv = () =>
    downloadText(
      toCsv(
        o.columns.map((c) => c.label),
        rows.map((r) => o.columns.map((c) => c.value(r))),
      ),
      `${o.csvName}.csv`,
    );
  return h(
    'div',
    { class: 'table-card', 'data-table': o.name },
    h('div', { class: 'table-tools' }, o.caption ? h('span', { class: 'caption' }, o.caption) : null, h('button', { type: 'button', class: 'export', onclick: csv, 'data-export': 'csv' }, 'CSV')),
    h('div', { class: 'table-scroll' }, h('table', {}, h('thead', {}, head), body)),
  );
}

/**
 * The experiments list: every experiment of every results file being served, with its
 * provenance (trace, date, seed, git revision) and links into the other pages.
 */
import type { ExperimentSummary } from '../../shared/api-types.ts';
import { fetchExperiments } from '../api-client.ts';
import { fmtDate } from '../format.ts';
import { formatRoute, formatSort, parseSort } from '../route.ts';
import { dataTable, type Column } from '../ui/data-table.ts';
import { h, note } from '../ui/dom.ts';
import { noExperiments, pageHeader, type PageContext } from './page-kit.ts';

function links(e: ExperimentSummary): HTMLElement {
  const p = { db: e.db, exp: e.experimentId };
  return h(
    'span',
    { class: 'links' },
    h('a', { href: formatRoute('compare', p) }, 'compare'),
    ' · ',
    h('a', { href: formatRoute('timeline', p) }, 'timeline'),
    ' · ',
    h('a', { href: formatRoute('sweep', p) }, 'sweep'),
    ' · ',
    h('a', { href: formatRoute('requests', p) }, 'requests'),
  );
}

/** Renders the list. Sort lives in `sort=column:dir` (default: newest first). */
export async function renderExperimentsPage(ctx: PageContext): Promise<HTMLElement> {
  const { experiments, problems } = await fetchExperiments();
  if (experiments.length === 0 && problems.length === 0) return noExperiments();
  const sort = parseSort(ctx.route.params.sort, { key: 'date', dir: 'desc' });
  const columns: Column<ExperimentSummary>[] = [
    { key: 'name', label: 'name', value: (e) => e.name, format: (_v, e) => h('a', { href: formatRoute('compare', { db: e.db, exp: e.experimentId }), class: 'exp-link' }, e.name) },
    { key: 'db', label: 'results file', value: (e) => `${e.db}.duckdb` },
    { key: 'trace', label: 'trace', value: (e) => e.tracePath, format: (v, e) => h('span', { title: e.traceSource }, String(v).split('/').pop() ?? '') },
    { key: 'date', label: 'date', value: (e) => e.startedAt, format: (v) => fmtDate(String(v)) },
    { key: 'runs', label: 'runs', value: (e) => e.runs, numeric: true },
    { key: 'strategies', label: 'strategies', value: (e) => e.strategies.join(', ') },
    { key: 'seed', label: 'seed', value: (e) => e.seed, numeric: true },
    { key: 'git', label: 'git revision', value: (e) => e.gitRevisions.join(' '), format: (_v, e) => h('code', { title: e.gitRevisions.join('\n') }, e.gitRevisions.map((g) => g.slice(0, 10)).join(', ') || '–') },
    { key: 'open', label: 'open', value: () => null, format: (_v, e) => links(e), sortable: false },
  ];
  return h(
    'div',
    { class: 'page' },
    pageHeader('Experiments', null, h('p', { class: 'meta' }, `${experiments.length} experiment${experiments.length === 1 ? '' : 's'} in the results files being served. Click a name to compare its runs.`)),
    dataTable({
      name: 'experiments',
      columns,
      rows: experiments,
      sort,
      onSort: (s) => ctx.update({ sort: formatSort(s) }),
      onRowClick: (e) => ctx.go('compare', { db: e.db, exp: e.experimentId }),
      rowKey: (e) => `${e.db}/${e.experimentId}`,
      csvName: 'experiments',
    }),
    problems.length > 0 ? note(`Skipped: ${problems.map((p) => `${p.db}.duckdb (${p.message})`).join('; ')}`, 'warn') : null,
  );
}

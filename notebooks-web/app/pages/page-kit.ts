/**
 * What pages share: the navigation context (read and change the URL-held view), the page
 * header with the experiment's provenance, the experiment resolution every page but the list
 * needs, and chart sizes.
 */
import type { ExperimentDetail } from '../../shared/api-types.ts';
import { fetchExperiment, fetchExperiments } from '../api-client.ts';
import { runColor } from '../colors.ts';
import { fmtDate } from '../format.ts';
import { experimentOf, type PageName, type Route } from '../route.ts';
import { h, note, selectInput } from '../ui/dom.ts';

/** Parameter values accepted by navigation; undefined / null / '' remove the key. */
export type ParamPatch = Readonly<Record<string, string | number | undefined | null>>;

/** How a page reads and changes the view. */
export interface PageContext {
  route: Route;
  /** Opens `page` with exactly `params` (a new history entry unless `replace`). */
  go(page: PageName, params: ParamPatch, opts?: { replace?: boolean }): void;
  /** Stays on the page, merging `patch` into its parameters. */
  update(patch: ParamPatch, opts?: { replace?: boolean }): void;
}

/** A page: builds its element from the view (fetching what it needs). */
export type PageRenderer = (ctx: PageContext) => Promise<HTMLElement>;

/** Chart sizes (px of the SVG's own coordinate system; CSS scales them to the card). */
export const CHART_SIZE = {
  half: { width: 560, height: 300 },
  third: { width: 420, height: 290 },
  wide: { width: 1140, height: 260 },
  wideShort: { width: 1140, height: 200 },
} as const;

/**
 * The experiment a page is about: the one in the URL, else the newest one (written into the
 * URL, replacing the entry, so the view stays shareable). Null when there are no experiments.
 * @throws ApiClientError for an unknown experiment (404) or a server failure.
 */
export async function resolveExperiment(ctx: PageContext): Promise<ExperimentDetail | null> {
  const named = experimentOf(ctx.route);
  if (named) return fetchExperiment(named.db, named.exp);
  const list = await fetchExperiments();
  const first = list.experiments[0];
  if (!first) return null;
  ctx.update({ db: first.db, exp: first.experimentId }, { replace: true });
  return fetchExperiment(first.db, first.experimentId);
}

/** Shown when there is no experiment at all. */
export function noExperiments(): HTMLElement {
  return h('div', { class: 'page' }, h('h1', {}, 'No experiments yet'), note(h('span', {}, 'Run ', h('code', {}, 'npm start'), ' (or ', h('code', {}, 'switchyard sim <experiment.yaml>'), ') to write results, then reload.')));
}

/** The page heading: title plus the experiment's name, trace, date, seed and runs. */
export function pageHeader(title: string, detail: ExperimentDetail | null, ...extra: Node[]): HTMLElement {
  const e = detail?.experiment;
  return h(
    'header',
    { class: 'page-head' },
    h('h1', {}, title),
    e
      ? h(
          'p',
          { class: 'meta' },
          h('strong', {}, e.name),
          ` · ${e.db}.duckdb · trace `,
          h('span', { title: e.traceSource }, e.tracePath.split('/').pop() ?? e.tracePath),
          ` · ${fmtDate(e.startedAt)} · seed ${e.seed} · ${e.runs} run${e.runs === 1 ? '' : 's'}`,
        )
      : null,
    ...extra,
  );
}

/** Colour of each run by its position in the experiment (the same on every page). */
export function runColors(detail: ExperimentDetail): Map<string, string> {
  return new Map(detail.runs.map((r, i) => [r.runId, runColor(i)]));
}

/** Legend label of a run: its id, which already carries strategy label and seed. */
export function runLabel(detail: ExperimentDetail, runId: string): string {
  return detail.runs.find((r) => r.runId === runId)?.runId ?? runId;
}

/** A run picker. */
export function runSelect(detail: ExperimentDetail, runId: string, onChange: (run: string) => void): HTMLElement {
  return selectInput(
    'run',
    detail.runs.map((r) => [r.runId, r.runId === r.strategy ? r.runId : `${r.runId} (${r.strategy})`] as const),
    runId,
    onChange,
    'run',
  );
}

/** The run named in the view, else the experiment's first (written into the URL). */
export function resolveRun(ctx: PageContext, detail: ExperimentDetail): string | null {
  const wanted = ctx.route.params.run;
  if (wanted !== undefined && detail.runs.some((r) => r.runId === wanted)) return wanted;
  const first = detail.runs[0]?.runId ?? null;
  if (first !== null) ctx.update({ run: first }, { replace: true });
  return first;
}

/** A row of controls. */
export function controls(...children: (Node | null)[]): HTMLElement {
  return h('div', { class: 'controls' }, children);
}

/** A grid of cards. */
export function grid(...cards: (Node | null)[]): HTMLElement {
  return h('div', { class: 'grid' }, cards);
}

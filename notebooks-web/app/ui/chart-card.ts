/**
 * A card holding one chart with its title, caption and SVG / PNG export buttons.
 */
import { h, note } from './dom.ts';
import { downloadPng, downloadSvg, slug } from './export.ts';

/** Options of {@link chartCard}. */
export interface ChartCardOptions {
  title: string;
  /** The chart, or a message to show instead (no data). */
  chart: SVGSVGElement | string;
  /** A line under the chart: what the whiskers mean, what is missing. */
  caption?: string | Node | null;
  /** Export file name stem; default: the title as a slug. */
  exportName?: string;
  /** Controls shown in the card header (e.g. a metric selector). */
  tools?: Node | null;
  /** `data-chart` attribute, for tests. */
  name: string;
  /** Span two grid columns. */
  wide?: boolean;
}

/** Builds the card. */
export function chartCard(o: ChartCardOptions): HTMLElement {
  const name = o.exportName ?? slug(o.title);
  const svg = typeof o.chart === 'string' ? null : o.chart;
  const buttons = svg
    ? [
        h('button', { type: 'button', class: 'export', 'data-export': 'svg', title: 'download as SVG', onclick: () => downloadSvg(svg, name) }, 'SVG'),
        h('button', {
          type: 'button',
          class: 'export',
          'data-export': 'png',
          title: 'download as PNG',
          onclick: () => {
            downloadPng(svg, name).catch((err: unknown) => alert((err as Error).message));
          },
        }, 'PNG'),
      ]
    : [];
  return h(
    'section',
    { class: `card${o.wide ? ' wide' : ''}`, 'data-chart': o.name },
    h('header', { class: 'card-head' }, h('h3', {}, o.title), h('div', { class: 'card-tools' }, o.tools ?? null, buttons)),
    svg ?? note(o.chart as string),
    o.caption ? h('p', { class: 'caption' }, o.caption) : null,
  );
}

/**
 * Colours: one per run (Tableau 10, chosen for telling ≤10 categories apart, including with
 * common colour-vision deficiencies), fixed ones for breaker states and outcomes, and a
 * perceptually uniform ramp (viridis) for heatmaps.
 */
import { schemeTableau10 } from 'd3';

/** Colour of the run at position `index` of its experiment (cycles after 10). */
export function runColor(index: number): string {
  return schemeTableau10[((index % 10) + 10) % 10]!;
}

/** Breaker states: closed is quiet, open alarming, half-open in between. */
export const BREAKER_COLORS: Readonly<Record<string, string>> = {
  closed: '#d9ead3',
  half_open: '#f6b26b',
  open: '#cc0000',
};

/** Colour of a breaker state; unknown states are grey. */
export function breakerColor(state: string): string {
  return BREAKER_COLORS[state] ?? '#999999';
}

/** Fault windows (shaded bands and their row). */
export const FAULT_COLOR = '#7b3294';

/** Attempt outcomes: ok green, anything else by kind. */
export function outcomeColor(outcome: string): string {
  if (outcome === 'ok') return '#59a14f';
  if (outcome.includes('timeout')) return '#f28e2b';
  if (outcome === 'http_status') return '#e15759';
  return '#9c755f';
}

/**
 * Time axes of the timeline: virtual time is stored in ms; the axis shows it in the unit that
 * suits the window (seconds for a few minutes, minutes up to a few hours, hours beyond) and
 * names that unit in its label. Pure.
 */

/** A display unit of virtual time. */
export interface TimeUnit {
  /** Short name for labels: `s`, `min`, `h`. */
  name: 's' | 'min' | 'h';
  /** Milliseconds per unit. */
  ms: number;
}

/** The unit for a window `spanMs` long: s below 10 min, min below 5 h, h beyond. */
export function timeUnitFor(spanMs: number): TimeUnit {
  if (spanMs < 10 * 60_000) return { name: 's', ms: 1000 };
  if (spanMs < 5 * 3_600_000) return { name: 'min', ms: 60_000 };
  return { name: 'h', ms: 3_600_000 };
}

/** Tick formatter of a time axis in `unit` (the axis domain stays in ms). */
export function timeTickFormat(unit: TimeUnit): (ms: number) => string {
  return (ms) => {
    const v = ms / unit.ms;
    return Number.isInteger(v) ? String(v) : v.toFixed(Math.abs(v) < 10 ? 1 : 0);
  };
}

/** The label of a time axis: `virtual time since run start (min)`. */
export function timeAxisLabel(unit: TimeUnit): string {
  return `virtual time since run start (${unit.name})`;
}

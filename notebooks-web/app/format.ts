/**
 * Number formatting for tables, tooltips and axis ticks. Pure; null shows as an en dash.
 */
import { format } from 'd3';

const DASH = '–';
const int = format(',d');
const sig3 = format('.3~s');

/** A duration in ms, in the largest unit that keeps it ≥ 1: `850 ms`, `1.25 s`, `3.2 min`, `1.77 h`. */
export function fmtMs(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return DASH;
  const a = Math.abs(v);
  if (v === 0) return '0 ms';
  if (a < 10) return `${v.toFixed(2)} ms`;
  if (a < 1000) return `${v.toFixed(a < 100 ? 1 : 0)} ms`;
  if (a < 60_000) return `${(v / 1000).toFixed(2)} s`;
  if (a < 3_600_000) return `${(v / 60_000).toFixed(1)} min`;
  return `${(v / 3_600_000).toFixed(2)} h`;
}

/** A fraction 0..1 as a percentage: `12.3 %` (small non-zero values keep two decimals). */
export function fmtPct(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return DASH;
  const p = v * 100;
  return `${Math.abs(p) < 1 && p !== 0 ? p.toFixed(2) : p.toFixed(1)} %`;
}

/**
 * A route weight, rounded for reading: at most three decimals, trailing zeros dropped (`1`,
 * `0.333`, `2.5`); a positive weight too small for that shows as `<0.001` so that it never reads
 * as a drained route. The exact value stays in the API body.
 */
export function fmtWeight(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return DASH;
  if (v > 0 && v < 0.0005) return '<0.001';
  return String(Number(v.toFixed(3)));
}

/** US dollars: `$0`, `$0.00123`, `$0.50`, `$12.35`. */
export function fmtUsd(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return DASH;
  if (v === 0) return '$0';
  return Math.abs(v) < 0.01 ? `$${v.toPrecision(3)}` : `$${v.toFixed(2)}`;
}

/** An integer with thousands separators: `12,031`. */
export function fmtInt(v: number | null | undefined): string {
  return v === null || v === undefined || !Number.isFinite(v) ? DASH : int(Math.round(v));
}

/** A compact number with SI prefix: `12.3k`, `1.5M`, `0.25`. */
export function fmtCompact(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return DASH;
  return Math.abs(v) < 1 && v !== 0 ? format('.2~f')(v) : sig3(v);
}

/** A signed duration difference in ms: `+120 ms`, `−1.2 s`. */
export function fmtDeltaMs(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return DASH;
  return `${v > 0 ? '+' : v < 0 ? '−' : '±'}${fmtMs(Math.abs(v))}`;
}

/** An ISO timestamp as local `YYYY-MM-DD HH:MM`; unparseable input is shown as is. */
export function fmtDate(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** A duration unit for an axis whose largest value is `maxMs`. */
export interface DurationUnit {
  name: 'ms' | 's' | 'min' | 'h';
  /** Milliseconds per unit. */
  ms: number;
}

/** ms below 2 s, s below 2 min, min below 2 h, h beyond — so ticks stay short numbers. */
export function durationUnit(maxMs: number): DurationUnit {
  const a = Math.abs(maxMs);
  if (!(a >= 2000)) return { name: 'ms', ms: 1 };
  if (a < 120_000) return { name: 's', ms: 1000 };
  if (a < 7_200_000) return { name: 'min', ms: 60_000 };
  return { name: 'h', ms: 3_600_000 };
}

const sig3r = format('.3~r');

/** Formats ms in `unit`, without the unit (the axis label carries it): `1.77`. */
export function fmtInUnit(unit: DurationUnit): (ms: number) => string {
  return (ms) => sig3r(ms / unit.ms);
}

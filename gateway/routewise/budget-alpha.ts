/**
 * The per-request budget override of RouteWise: `x-switchyard-budget-alpha: <α>`
 * with α a number in [0, 1] replaces the model's `budget_alpha` for that one request
 * (B = c_min + α·(c_max − c_min); 0 = cheapest, 1 = no cost limit).
 *
 * The gateway checks the header before routing and answers a malformed value with 400
 * `invalid_request` naming the header and the range; a valid value travels to the planner in
 * `RouteRequest.headers` under the same (lower-case) name, normalised to a plain decimal, which
 * is where `RouteWisePlanner` reads it. Other strategies ignore it. An empty header counts as
 * absent (uWS cannot tell the two apart).
 */
import { BUDGET_ALPHA_HEADER } from '../../core/index.ts';

export { BUDGET_ALPHA_HEADER };

/** A plain decimal: digits with an optional fraction and exponent; no sign, hex, `Infinity` or `NaN`. */
const DECIMAL = /^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$/;

/** The outcome of reading the header: absent, a valid α, or the 400 message to answer with. */
export type BudgetAlphaHeader = { kind: 'absent' } | { kind: 'ok'; alpha: number } | { kind: 'invalid'; message: string };

/**
 * Reads the raw `x-switchyard-budget-alpha` value (`''` = absent). Surrounding whitespace is
 * ignored; the value must be a plain decimal in [0, 1] (`0`, `0.25`, `1`, `5e-1`).
 * Never throws.
 */
export function parseBudgetAlphaHeader(raw: string): BudgetAlphaHeader {
  const text = raw.trim();
  if (raw.length === 0) return { kind: 'absent' };
  const alpha = DECIMAL.test(text) ? Number(text) : Number.NaN;
  if (Number.isFinite(alpha) && alpha >= 0 && alpha <= 1) return { kind: 'ok', alpha };
  const shown = raw.length > 40 ? `${raw.slice(0, 40)}…` : raw;
  return {
    kind: 'invalid',
    message: `Invalid '${BUDGET_ALPHA_HEADER}' header ${JSON.stringify(shown)}: expected a number in the range [0, 1] (0 = cheapest route, 1 = no cost limit).`,
  };
}

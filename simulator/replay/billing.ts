/**
 * What a hosted provider bills for an attempt when it ends. Local replicas bill nothing per
 * token; their GPU-hours are costed for the whole run (costs.ts).
 */
import type { ReplayState } from './state.ts';

/**
 * Bills provider attempt `gid` at `s.now` and adds the cost to its request and to the run:
 * the whole response when `completed`; when cut short after the provider produced its first
 * token, the prompt and the tokens produced so far; nothing before the first token (an
 * assumption: providers differ on billing cancelled prompts) unless `hedgeLost` — the losing
 * attempt of a hedge race is billed at least its prompt (RouteWise counts both attempts of a
 * hedge as paid).
 */
export function billProviderAttempt(s: ReplayState, gid: number, completed: boolean, hedgeLost: boolean): void {
  const a = s.atts[gid]!;
  const p = s.endpoints[a.ep]!.provider!;
  const row = s.rows[a.req]!;
  const now = s.now;
  let out = 0;
  if (completed) out = row.outputTokens;
  else if (a.rawFirstAtMs <= now) out = Math.min(row.outputTokens, 1 + Math.floor((now - a.rawFirstAtMs) / Math.max(a.tpotMs, 1e-9)));
  if (out > 0 || completed || hedgeLost) {
    a.costUsd = p.costUsd(row.inputTokens, a.cachedTokens, out);
    s.reqs[a.req]!.costUsd += a.costUsd;
    s.result.costs.tokenUsd += a.costUsd;
  }
}

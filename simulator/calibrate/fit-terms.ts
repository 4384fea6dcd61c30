/**
 * Fits the terms of the engine endpoint model that are not measured on a GPU to a gateway log:
 * the API-server term (`engine/api-server.ts`: ms per request, per prompt token, per output token)
 * and the engine's step overheads (`stepOverheadMs` per step, `perSequenceOverheadMs` per
 * sequence in the step; calibrated replicas only — a legacy linear profile has its overhead
 * inside its fitted coefficients, so only the API-server term is fitted there).
 *
 * Every endpoint's requests are replayed open-loop on the engine model (`endpoint-replay.ts`).
 * For a fixed schedule, what a client measures is linear in all five terms:
 *   TTFT = engine TTFT(s₀, q₀) + (s − s₀)·∂s + (q − q₀)·∂q + requestMs + perPromptTokenMs·input
 *   TPOT = engine TPOT(s₀, q₀) + (s − s₀)·∂s' + (q − q₀)·∂q' + perOutputTokenMs
 * (E2E = all of them, for requests logged without a TTFT), with the sensitivities ∂ recorded by
 * the replay. So the fit is Gauss–Newton: replay at (s₀, q₀), solve the non-negative weighted
 * least squares for all five terms (weights: 1 / mean² of the row's kind, so TTFT, TPOT and E2E
 * count alike), replay at the solved overheads (the schedule moves with them), and repeat until
 * they settle, keeping the best point seen; it is started from the block's own overheads and from
 * a small grid, since with arrivals spread in time the error is not smooth in the overheads and
 * an iteration can settle off the best point. The API-server terms delay delivery only and never
 * move the schedule. Step overheads show in queueing and in how TPOT grows with the batch, so the
 * log needs varied load (idle and busy periods) to tell them apart from the constant API terms.
 * Deterministic: no randomness, no clock.
 */
import { type ApiServerTerm, firstTokenDelayMs, streamDelayMs } from '../engine/api-server.ts';
import { calibrationFor, loadCalibration } from '../engine/calibration.ts';
import { buildReplica, resolveReplicas, type ReplicasConfig } from '../engine/replica-config.ts';
import { OverheadStepTime, replayOnEngine, type EngineTimes } from './endpoint-replay.ts';
import type { LoggedRequest } from './request-log-source.ts';

/** Prefix-block size the engine assumes for logged hashes (2,048-byte blocks ≈ 512 tokens), as `switchyard sim` does for byte blocks. */
export const LOG_HASH_BLOCK_TOKENS = 512;

/** One endpoint's requests, in arrival order. */
export interface EndpointRequests {
  readonly endpointId: string;
  readonly requests: readonly LoggedRequest[];
}

/** Predicted (engine + API server) latencies per request, ms; NaN where the engine rejected it. */
export interface PredictedLatencies {
  readonly ttftMs: Float64Array;
  readonly e2eMs: Float64Array;
}

/** Engine times + API-server term → what a client through the gateway would measure. */
export function predictLatencies(requests: readonly LoggedRequest[], times: EngineTimes, api: ApiServerTerm): PredictedLatencies {
  const n = requests.length;
  const ttftMs = new Float64Array(n);
  const e2eMs = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const r = requests[i]!;
    const first = firstTokenDelayMs(api, r.inputTokens);
    ttftMs[i] = times.firstTokenAtMs[i]! + first - r.arrivalMs;
    e2eMs[i] = times.finishedAtMs[i]! + first + streamDelayMs(api, r.outputTokens) - r.arrivalMs;
  }
  return { ttftMs, e2eMs };
}

/** Step overheads, ms. */
export interface StepOverheads {
  readonly stepOverheadMs: number;
  readonly perSequenceOverheadMs: number;
}

/** The overheads a calibrated block runs with (its own, else the committed calibration's); null for a legacy profile. */
export function effectiveOverheads(replicas: ReplicasConfig): StepOverheads | null {
  if (replicas.profile !== undefined) return null;
  const cal = replicas.model !== undefined && replicas.tp !== undefined ? calibrationFor(replicas.engine, replicas.model, replicas.dtype ?? 'bfloat16', replicas.tp) : loadCalibration()[replicas.engine];
  return { stepOverheadMs: replicas.step_overhead_ms ?? cal.stepOverheadMs, perSequenceOverheadMs: replicas.per_sequence_overhead_ms ?? cal.perSequenceOverheadMs };
}

/**
 * Replays every endpoint on a fresh replica of `replicas`, with `overheads` in place of the
 * block's step overheads when given (calibrated blocks only; ignored for a legacy profile).
 */
export function replayEndpoints(endpoints: readonly EndpointRequests[], replicas: ReplicasConfig, overheads?: StepOverheads): EngineTimes[] {
  const o = replicas.profile === undefined ? overheads ?? effectiveOverheads(replicas) : null;
  // Zero overheads in the operator model and the wanted ones in the probe: the same additive terms.
  const resolved = resolveReplicas(o ? { ...replicas, step_overhead_ms: 0, per_sequence_overhead_ms: 0 } : replicas);
  return endpoints.map((e) => {
    const probe = new OverheadStepTime(resolved.stepTime, o?.stepOverheadMs ?? 0, o?.perSequenceOverheadMs ?? 0);
    return replayOnEngine(e.requests, buildReplica({ ...resolved, stepTime: probe }, LOG_HASH_BLOCK_TOKENS), probe);
  });
}

/** Coordinates of the fit: the three API-server terms, then the two step overheads. */
const TERMS = 5;

/** One weighted least-squares row: y ≈ x · (requestMs, perPromptTokenMs, perOutputTokenMs, stepOverheadMs, perSequenceOverheadMs). */
interface ResidualRow {
  readonly x: readonly number[];
  /** Measured minus what the engine gave at the replayed overheads, ms. */
  readonly y: number;
  /** The replayed overheads' own share of the engine's value (x · overheads), ms. */
  readonly own: number;
  readonly w: number;
}

/**
 * Row weights: 1 / (mean measured value of the row's kind)², so TTFT, TPOT and E2E rows count
 * alike whatever their size, while within a kind every millisecond counts the same. (Weighting
 * each row by its own value instead lets the shortest TTFTs — one step long, where which step a
 * request lands in is a coin toss of the schedule — drown the queueing delays that carry the
 * step overheads.)
 */
function measuredScales(endpoints: readonly EndpointRequests[]): { ttft: number; tpot: number; e2e: number } {
  let ttft = 0, nTtft = 0, tpot = 0, nTpot = 0, e2e = 0, nE2e = 0;
  for (const e of endpoints) {
    for (const r of e.requests) {
      if (r.ttftMs === null) {
        e2e += r.e2eMs;
        nE2e++;
        continue;
      }
      ttft += r.ttftMs;
      nTtft++;
      if (r.outputTokens > 1) {
        tpot += (r.e2eMs - r.ttftMs) / (r.outputTokens - 1);
        nTpot++;
      }
    }
  }
  const w = (sum: number, n: number) => (n > 0 && sum > 0 ? (n / sum) ** 2 : 1);
  return { ttft: w(ttft, nTtft), tpot: w(tpot, nTpot), e2e: w(e2e, nE2e) };
}

/**
 * The rows for engine times replayed at overheads `o` (see the module doc): what the log
 * measured minus what the engine gave, and the overheads' own share of it (added back when the
 * overheads are solved for, so they come out absolute).
 */
function residualRows(endpoints: readonly EndpointRequests[], times: readonly EngineTimes[], o: StepOverheads): { rows: ResidualRow[]; used: number } {
  const rows: ResidualRow[] = [];
  let used = 0;
  const sc = measuredScales(endpoints);
  endpoints.forEach((e, k) => {
    const t = times[k]!;
    e.requests.forEach((r, i) => {
      const first = t.firstTokenAtMs[i]!;
      const done = t.finishedAtMs[i]!;
      if (!Number.isFinite(first) || !Number.isFinite(done)) return;
      used++;
      const fs = t.firstPerStep[i]!;
      const fq = t.firstPerSeq[i]!;
      const ds = t.finishedPerStep[i]!;
      const dq = t.finishedPerSeq[i]!;
      const out1 = Math.max(0, r.outputTokens - 1);
      const own = (ps: number, pq: number) => o.stepOverheadMs * ps + o.perSequenceOverheadMs * pq;
      if (r.ttftMs !== null) {
        rows.push({ x: [1, r.inputTokens, 0, fs, fq], y: r.ttftMs - (first - r.arrivalMs), own: own(fs, fq), w: sc.ttft });
        if (out1 > 0) {
          const tpot = (r.e2eMs - r.ttftMs) / out1;
          const ps = (ds - fs) / out1;
          const pq = (dq - fq) / out1;
          rows.push({ x: [0, 0, 1, ps, pq], y: tpot - (done - first) / out1, own: own(ps, pq), w: sc.tpot });
        }
      } else {
        rows.push({ x: [1, r.inputTokens, out1, ds, dq], y: r.e2eMs - (done - r.arrivalMs), own: own(ds, dq), w: sc.e2e });
      }
    });
  });
  return { rows, used };
}

/**
 * Solves the normal equations of `rows` on the coordinates in `free` (others 0); null when
 * singular. `addOwn`: the overheads are unknowns, so their replayed share is added back to the target.
 */
function solveFree(rows: readonly ResidualRow[], free: readonly number[], addOwn: boolean): number[] | null {
  const m = free.length;
  const a = Array.from({ length: m }, () => new Array<number>(m + 1).fill(0));
  for (const r of rows) {
    for (let i = 0; i < m; i++) {
      const xi = r.x[free[i]!]!;
      if (xi === 0) continue;
      for (let j = 0; j < m; j++) a[i]![j]! += r.w * xi * r.x[free[j]!]!;
      a[i]![m]! += r.w * xi * (addOwn ? r.y + r.own : r.y);
    }
  }
  // Gauss–Jordan elimination with partial pivoting.
  for (let c = 0; c < m; c++) {
    let p = c;
    for (let i = c + 1; i < m; i++) if (Math.abs(a[i]![c]!) > Math.abs(a[p]![c]!)) p = i;
    if (!(Math.abs(a[p]![c]!) > 1e-300)) return null;
    [a[c], a[p]] = [a[p]!, a[c]!];
    for (let i = 0; i < m; i++) {
      if (i === c) continue;
      const f = a[i]![c]! / a[c]![c]!;
      for (let j = c; j <= m; j++) a[i]![j]! -= f * a[c]![j]!;
    }
  }
  return a.map((row, i) => row[m]! / row[i]!);
}

/**
 * Non-negative weighted least squares on the coordinates `candidates` (active set: the most
 * negative coefficient is pinned at 0 and the rest re-solved; a coordinate no row informs stays 0).
 * Without the overheads among them, the overheads stay as replayed.
 * @returns all TERMS coefficients and the weighted mean squared residual (mean squared relative error).
 */
function solveNonNegative(rows: readonly ResidualRow[], candidates: readonly number[]): { theta: number[]; loss: number } {
  const withOverheads = candidates.includes(3) || candidates.includes(4);
  let free = candidates.filter((k) => rows.some((r) => r.x[k] !== 0));
  let theta = new Array<number>(TERMS).fill(0);
  while (free.length > 0) {
    const sol = solveFree(rows, free, withOverheads);
    if (sol === null) {
      free = free.slice(0, -1);
      continue;
    }
    const worst = sol.reduce((w, v, i) => (v < sol[w]! ? i : w), 0);
    if (sol[worst]! < 0) {
      free = free.filter((_, i) => i !== worst);
      continue;
    }
    theta = new Array<number>(TERMS).fill(0);
    free.forEach((k, i) => (theta[k] = sol[i]!));
    break;
  }
  let loss = 0;
  for (const r of rows) {
    let fit = 0;
    for (let k = 0; k < TERMS; k++) fit += r.x[k]! * theta[k]!;
    loss += r.w * ((withOverheads ? r.y + r.own : r.y) - fit) ** 2;
  }
  return { theta, loss: rows.length ? loss / rows.length : 0 };
}

const API = [0, 1, 2];
/** Gauss–Newton iterations at most per start (each one engine replay of the log). */
const MAX_ITERATIONS = 8;
/** Further starting points of the descent, ms: step overhead × per-sequence overhead. */
const START_STEP_MS = [0, 0.5, 1, 2, 4];
const START_SEQ_MS = [0, 0.03, 0.1];
const ALL = [0, 1, 2, 3, 4];
const toApi = (theta: readonly number[]): ApiServerTerm => ({ requestMs: theta[0]!, perPromptTokenMs: theta[1]!, perOutputTokenMs: theta[2]! });

/** What `fitEngineTerms` found. */
export interface EngineFit {
  /** Fitted step overheads, ms; null for a legacy profile block (not fitted). */
  readonly overheads: StepOverheads | null;
  readonly apiServer: ApiServerTerm;
  /** Mean squared relative error over the TTFT / TPOT / E2E rows at the fit. */
  readonly loss: number;
  /** Requests the fit used (those the engine model rejected are left out). */
  readonly requests: number;
  /** Engine replays run. */
  readonly replays: number;
}

/**
 * Fits API-server and step-overhead terms to the logged requests of engine endpoints (all
 * endpoints share one set of terms: they run the experiment's one `replicas:` model). Starts
 * from the block's own overheads.
 * @throws Error from the replica factory (bad block) or the replay.
 */
export function fitEngineTerms(endpoints: readonly EndpointRequests[], replicas: ReplicasConfig): EngineFit {
  let replays = 0;
  /** Replays at `o`; the API-only fit there (the honest error at o) and the full linearised solve. */
  const at = (o: StepOverheads) => {
    replays++;
    const { rows, used } = residualRows(endpoints, replayEndpoints(endpoints, replicas, o), o);
    return { o, used, api: solveNonNegative(rows, API), full: solveNonNegative(rows, ALL) };
  };
  const start = effectiveOverheads(replicas);
  if (start === null) {
    const r = at({ stepOverheadMs: 0, perSequenceOverheadMs: 0 });
    return { overheads: null, apiServer: toApi(r.api.theta), loss: r.api.loss, requests: r.used, replays };
  }
  // Full Gauss–Newton steps, keeping the best point seen: a replay's error is not smooth in the
  // overheads (a request lands in another step when step ends move past its arrival), so a step
  // that looks worse can still lead on; an iteration stops when the overheads settle. It can
  // settle off the best point, so it is started from the block's overheads and from each point
  // of a small grid, and the best point of all is kept.
  const descend = (from: StepOverheads) => {
    let cur = at(from);
    let best = cur;
    for (let iter = 0; iter < MAX_ITERATIONS; iter++) {
      const o = { stepOverheadMs: cur.full.theta[3]!, perSequenceOverheadMs: cur.full.theta[4]! };
      const moved = Math.abs(o.stepOverheadMs - cur.o.stepOverheadMs) / Math.max(o.stepOverheadMs, 1e-3) + Math.abs(o.perSequenceOverheadMs - cur.o.perSequenceOverheadMs) / Math.max(o.perSequenceOverheadMs, 1e-4);
      if (moved < 1e-6) break;
      cur = at(o);
      if (cur.api.loss < best.api.loss) best = cur;
    }
    return best;
  };
  let cur = descend(start);
  for (const s of START_STEP_MS) {
    for (const q of START_SEQ_MS) {
      if (cur.api.loss < 1e-12) break;
      const r = descend({ stepOverheadMs: s, perSequenceOverheadMs: q });
      if (r.api.loss < cur.api.loss) cur = r;
    }
  }
  return { overheads: cur.o, apiServer: toApi(cur.api.theta), loss: cur.api.loss, requests: cur.used, replays };
}


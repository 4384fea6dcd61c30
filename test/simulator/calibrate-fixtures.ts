// A gateway request log synthesised on the simulator's virtual clock: a trace with idle and busy
// periods replayed (`replayRun`) onto replicas with known API-server and step-overhead terms, its
// per-request results written as the gateway's `requests` table. No wall clock anywhere.
import { DuckDBInstance } from '@duckdb/node-api';
import { deriveRng } from '../../core/rng.ts';
import { REQUEST_LOG_COLUMNS, REQUEST_LOG_DDL } from '../../gateway/request-log/log-row.ts';
import { ExperimentSchema, type Experiment } from '../../simulator/experiment.ts';
import { buildReplica, resolveReplicas } from '../../simulator/engine/replica-config.ts';
import { replayRun, type RunResult } from '../../simulator/replay.ts';
import type { TraceRow } from '../../traces/trace-row.ts';

/** The engine block the log is "measured" on, without its overhead terms. */
export const BASE_REPLICAS = { count: 2, engine: 'vllm', gpu: 'h100_sxm', model: 'llama-3.1-8b', tp: 1, max_num_seqs: 48 } as const;

/** The terms the synthetic log is made with. */
export const TRUE_TERMS = {
  step_overhead_ms: 1.5,
  per_sequence_overhead_ms: 0.08,
  api_server: { request_ms: 25, per_prompt_token_ms: 0.004, per_output_token_ms: 0.6 },
} as const;

/**
 * `n` requests in bursts of 1 to 60 that arrive at one instant, each burst after the replicas
 * have drained (20 s apart), with varied prompt and output lengths. Bursts give the load range
 * the step overheads need (batch sizes from 1 to the 48-sequence limit, and queueing behind it);
 * arriving at one instant keeps the engine's schedule (which request runs in which step) the same
 * whatever the overheads, so the fit's linearisation is exact and the terms are recoverable.
 * `jitterMs` > 0 spreads a burst's arrivals (each up to that many ms after the one before), as
 * real clients do; the schedule then moves with the overheads.
 */
export function burstyTrace(n: number, seed = 3, jitterMs = 0): TraceRow[] {
  const rng = deriveRng(seed, 'calibrate-fixture');
  const rows: TraceRow[] = [];
  for (let t = 0; rows.length < n; t += 20_000) {
    const burst = 1 + Math.floor(rng.float() * 60);
    let at = t;
    for (let k = 0; k < burst && rows.length < n; k++) {
      at += jitterMs > 0 ? rng.float() * jitterMs : 0;
      rows.push({
        arrivalMs: at,
        requestId: String(rows.length),
        sessionId: null,
        callerId: null,
        model: null,
        inputTokens: 50 + Math.floor(rng.float() * 3000),
        outputTokens: 2 + Math.floor(rng.float() * 200),
        hashIds: null,
        stream: true,
        ttftMs: null,
        e2eMs: null,
        itlMs: null,
      });
    }
  }
  return rows;
}

/** An experiment over `replicas` (round robin, no gateway queueing). */
export function calibrationExperiment(replicas: Record<string, unknown>, over: Record<string, unknown> = {}): Experiment {
  const e = ExperimentSchema.parse({ name: 'cal', trace: 'x.arrow', model: 'm', replicas, runs: [{ strategy: 'round_robin' }], routing: { upstream_concurrency_enabled: false }, output: 'unused.duckdb', ...over });
  return { ...e, tracePath: 'x.arrow', file: 'cal.yaml' };
}

/** Replays `rows` on the base replicas with `terms` (and the experiment fields in `over`). */
export function simulate(rows: readonly TraceRow[], terms: Record<string, unknown> = TRUE_TERMS, over: Record<string, unknown> = {}): RunResult {
  const exp = calibrationExperiment({ ...BASE_REPLICAS, ...terms }, over);
  const resolved = resolveReplicas(exp.replicas);
  return replayRun({ experiment: exp, rows, run: { strategy: 'round_robin', params: {}, label: 'round_robin' }, runId: 'synth', seed: 1, makeReplica: () => buildReplica(resolved, 512, { coalesceDecodeSteps: true }) });
}

/** The log's columns up to `prompt` (the first layout, which the values below fill). */
const FIRST_LAYOUT = REQUEST_LOG_COLUMNS.slice(0, REQUEST_LOG_COLUMNS.findIndex((c) => c.column === 'prompt') + 1)
  .map((c) => c.column)
  .join(', ');

/** Writes a run's requests as a gateway request log (the `requests` table) at `path`, arrivals from `startUnixMs`. */
export async function writeRequestLog(path: string, result: RunResult, startUnixMs = 1_764_000_000_000): Promise<void> {
  const instance = await DuckDBInstance.create(path);
  const conn = await instance.connect();
  try {
    await conn.run(REQUEST_LOG_DDL);
    const q = (v: string | null) => (v === null ? 'NULL' : `'${v.replace(/'/g, "''")}'`);
    const n = (v: number | null) => (v === null ? 'NULL' : String(v));
    // In arrival order (ties: trace order), as a gateway's log reads back ordered by arrival.
    const inOrder = [...result.requests].sort((a, b) => a.arrivalMs - b.arrivalMs || Number(a.requestId) - Number(b.requestId));
    const values = inOrder.map((r) =>
      `(${startUnixMs + r.arrivalMs}, ${q(r.requestId)}, NULL, NULL, 'm', ${r.inputTokens}, ${r.outputTokens}, NULL, ${r.stream}, ${n(r.ttftMs)}, ${r.e2eMs ?? 0}, 'chat', ${q(r.endpointId)}, ${r.tries}, ${r.status === 'ok' ? 200 : 500}, ${q(r.status)}, false, ${r.cachedTokens}, 0, NULL)`,
    );
    for (let i = 0; i < values.length; i += 500) await conn.run(`INSERT INTO requests (${FIRST_LAYOUT}) VALUES ${values.slice(i, i + 500).join(', ')}`);
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

/**
 * Runs one sweep cell: reads its trace (once per process, cached), selects the rows, builds the
 * replicas and replays. The same function runs in the main thread (`--jobs 1`) and in worker
 * threads, so a cell's rows depend only on the cell — never on where or when it ran.
 */
import { readTrace } from '../../traces/arrow-trace.ts';
import type { TraceMeta, TraceRow } from '../../traces/trace-row.ts';
import { buildReplica, resolveReplicas } from '../engine/replica-config.ts';
import type { Experiment } from '../experiment.ts';
import { replayRun, type RunResult } from '../replay.ts';
import type { SummaryOptions } from '../results/results-store.ts';
import type { Cell } from './grid.ts';

/** What a finished cell hands back for the results store. */
export interface CellOutput {
  readonly index: number;
  readonly runId: string;
  readonly result: RunResult;
  /** Wall-clock seconds of the replay (not part of the cell's deterministic output). */
  readonly wallSeconds: number;
}

/** Trace rows as replayed: sorted by arrival (stable), cut to `limit`. */
export function selectRows(rows: readonly TraceRow[], exp: Pick<Experiment, 'limit'>): TraceRow[] {
  const sorted = [...rows].sort((a, b) => a.arrivalMs - b.arrivalMs);
  return exp.limit === undefined ? sorted : sorted.slice(0, exp.limit);
}

/** Tokens per prefix block from trace metadata (512 when the trace does not say in tokens). */
export function hashBlockTokensOf(meta: TraceMeta): number {
  return meta.blockUnit === 'tokens' && meta.blockSize > 0 ? meta.blockSize : 512;
}

/** Traces read by this process, sorted by arrival, keyed by path. */
export class TraceCache {
  private readonly traces = new Map<string, Promise<{ meta: TraceMeta; sorted: TraceRow[] }>>();

  /** The trace at `path`, read on first use. @throws the reader's Error naming file and row. */
  get(path: string): Promise<{ meta: TraceMeta; sorted: TraceRow[] }> {
    let t = this.traces.get(path);
    if (!t) {
      t = readTrace(path).then(({ meta, rows }) => ({ meta, sorted: selectRows(rows, {}) }));
      this.traces.set(path, t);
    }
    return t;
  }
}

/**
 * Replays `cell`. `onProgress(done)` is called every ~2,000 events with requests finished.
 * @throws the replay's Errors (conservation, invariants) prefixed with the cell's run id.
 */
export async function runCell(cell: Cell, cache: TraceCache, onProgress?: (done: number) => void): Promise<CellOutput> {
  const exp = cell.experiment;
  const { meta, sorted } = await cache.get(exp.tracePath);
  const rows = exp.limit === undefined ? sorted : sorted.slice(0, exp.limit);
  const hashBlockTokens = hashBlockTokensOf(meta);
  // Decode steps coalesce into runs (exact: the loop cuts a run before every enqueue and cancel,
  // see EngineModel.interrupt), which saves most step events of decode-heavy traces.
  const resolved = resolveReplicas(exp.replicas);
  const makeReplica = () => buildReplica(resolved, hashBlockTokens, { coalesceDecodeSteps: true });
  const t0 = performance.now();
  try {
    const result = replayRun({
      experiment: exp,
      rows,
      run: cell.run,
      runId: cell.runId,
      seed: cell.seed,
      makeReplica,
      hashBlockTokens,
      ...(onProgress && { onProgress: (done: number) => onProgress(done) }),
    });
    return { index: cell.index, runId: cell.runId, result, wallSeconds: (performance.now() - t0) / 1000 };
  } catch (err) {
    const e = err as Error;
    e.message = `run ${cell.runId}: ${e.message}`;
    throw e;
  }
}

/**
 * What `ResultsStore.computeSummary` needs for a cell's run besides its rows: the cell's SLOs
 * (ms), the run's virtual duration (ms, at least 1) and its costs (USD, GPU-hours).
 */
export function cellSummaryOptions(cell: Cell, res: Pick<RunResult, 'durationMs' | 'costs'>): SummaryOptions {
  return {
    sloTtftMs: cell.experiment.slo.ttft_ms,
    sloTpotMs: cell.experiment.slo.tpot_ms,
    durationMs: Math.max(1, res.durationMs),
    fixedCostUsd: res.costs.fixedUsd,
    gpuHours: res.costs.gpuHours,
    gpuCostUsd: res.costs.gpuUsd,
  };
}

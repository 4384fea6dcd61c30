/**
 * Runs one sweep cell: reads its trace (once per process, cached), selects the rows, builds the
 * replicas and replays. The same function runs in the main thread (`--jobs 1`) and in worker
 * threads, so a cell's rows depend only on the cell — never on where or when it ran. With
 * `onChunk` the rows leave the run as they are produced, as columns (results/columnar-rows.ts),
 * so the thread writing results appends while the replay goes on.
 */
import type { TraceMeta, TraceRow } from '../../traces/trace-row.ts';
import { encodeRows, type ColumnarRows } from '../results/columnar-rows.ts';
import type { TableName } from '../results/schema.ts';
import { buildReplica, resolveReplicas } from '../engine/replica-config.ts';
import type { Experiment } from '../experiment.ts';
import { replayRun, type RunResult } from '../replay.ts';
import type { SummaryOptions } from '../results/results-store.ts';
import type { Cell } from './grid.ts';

/** What a finished cell hands back for the results store. */
export interface CellOutput {
  readonly index: number;
  readonly runId: string;
  /** The run; its row arrays are empty when the rows went out through `onChunk`. */
  readonly result: RunResult;
  /** Requests the run replayed (rows written, whether or not they are still in `result`). */
  readonly requestCount: number;
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

/** A trace as cells replay it: metadata and rows sorted by arrival. */
export interface SortedTrace {
  readonly meta: TraceMeta;
  readonly sorted: TraceRow[];
}

/**
 * Traces read by this process, sorted by arrival, keyed by path. The Arrow reader is loaded on
 * first read only, so a thread handed its traces (`put`) never loads it.
 */
export class TraceCache {
  private readonly traces = new Map<string, Promise<SortedTrace>>();

  /** The trace at `path`, read on first use. @throws the reader's Error naming file and row. */
  get(path: string): Promise<SortedTrace> {
    let t = this.traces.get(path);
    if (!t) {
      t = import('../../traces/arrow-trace.ts').then(async ({ readTrace }) => {
        const { meta, rows } = await readTrace(path);
        return { meta, sorted: selectRows(rows, {}) };
      });
      this.traces.set(path, t);
    }
    return t;
  }

  /** Records `trace` (already sorted) as the trace at `path`, read elsewhere. */
  put(path: string, trace: SortedTrace | Promise<SortedTrace>): void {
    this.traces.set(path, Promise.resolve(trace));
  }
}

/** Options of `runCell`. */
export interface CellRunOptions {
  /** Called every ~2,000 events with the requests finished so far. */
  onProgress?: (done: number) => void;
  /**
   * Receives the run's new rows of `tables` as columns, every `chunkRows` finished requests and
   * once at the end; the rows are then dropped from the result. Batches of one table arrive in
   * the order the run produced them.
   */
  onChunk?: (batches: ColumnarRows[]) => void;
  /** Tables `onChunk` receives (default all four); rows of other tables are dropped unencoded. */
  tables?: readonly RowTable[];
  /** Requests per chunk (default 4,096). */
  chunkRows?: number;
}

/** The tables a run fills. */
export type RowTable = Extract<TableName, 'requests' | 'attempts' | 'endpoint_timeseries' | 'events'>;

/** Every table a run fills, in the order batches of one chunk list them. */
export const ROW_TABLES: readonly RowTable[] = ['requests', 'attempts', 'endpoint_timeseries', 'events'];

const RESULT_FIELD = { requests: 'requests', attempts: 'attempts', endpoint_timeseries: 'samples', events: 'events' } as const;

/** Moves the rows in `res` out as columns of `tables` (others dropped); empties the arrays. */
function takeChunk(res: RunResult, tables: readonly RowTable[]): ColumnarRows[] {
  const out: ColumnarRows[] = [];
  for (const t of ROW_TABLES) {
    const rows = res[RESULT_FIELD[t]] as object[];
    if (rows.length > 0 && tables.includes(t)) out.push(encodeRows(t, rows));
    rows.length = 0;
  }
  return out;
}

/**
 * Replays `cell`. `onProgress(done)` is called every ~2,000 events with requests finished.
 * @throws the replay's Errors (conservation, invariants) prefixed with the cell's run id.
 */
export async function runCell(cell: Cell, cache: TraceCache, opts: CellRunOptions = {}): Promise<CellOutput> {
  const { onProgress, onChunk } = opts;
  const tables = opts.tables ?? ROW_TABLES;
  const chunkRows = opts.chunkRows ?? 4096;
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
      ...((onProgress || onChunk) && {
        onProgress: (done: number, _total: number, partial: RunResult) => {
          onProgress?.(done);
          if (onChunk && partial.requests.length >= chunkRows) onChunk(takeChunk(partial, tables));
        },
      }),
    });
    const wallSeconds = (performance.now() - t0) / 1000;
    if (onChunk) {
      const rest = takeChunk(result, tables);
      if (rest.length > 0) onChunk(rest);
    }
    return { index: cell.index, runId: cell.runId, result, requestCount: rows.length, wallSeconds };
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

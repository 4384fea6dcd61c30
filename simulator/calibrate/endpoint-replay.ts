/**
 * Open-loop replay of one endpoint's logged requests on a fresh engine model: each request
 * reaches the replica at its logged arrival time, as the gateway sent it, and the replica's
 * steps run in virtual time until every request has left. This is the gateway log with routing
 * taken out — the endpoint served exactly these requests, in this order — so the engine model's
 * prediction can be compared request by request with what the log measured.
 *
 * The replay also records how each request's times move with the two step-overhead terms while
 * the schedule stays as it is: a step's end is its busy period's start (an arrival at an idle
 * replica, fixed) plus the durations of the busy period's steps so far, and each step lasts
 * `stepOverheadMs + perSequenceOverheadMs × sequences` longer per unit of the terms. So
 * ∂(time of a step's end)/∂stepOverheadMs = steps in the busy period up to it, and
 * ∂/∂perSequenceOverheadMs = the sequences summed over those steps. The fit uses these
 * (`fit-terms.ts`, a Gauss–Newton step on the overheads).
 */
import type { EngineEvent, EngineModel } from '../engine/engine-model.ts';
import type { BatchShape, StepTimeModel } from '../engine/step-time.ts';
import type { LoggedRequest } from './request-log-source.ts';

/**
 * What the engine produced per request, virtual ms from the log's start (NaN for a request the
 * engine rejected), and the sensitivities of those times to the step overheads (see the module doc).
 */
export interface EngineTimes {
  readonly firstTokenAtMs: Float64Array;
  readonly finishedAtMs: Float64Array;
  /** ∂firstTokenAtMs/∂stepOverheadMs (steps) and ∂/∂perSequenceOverheadMs (sequences). */
  readonly firstPerStep: Float64Array;
  readonly firstPerSeq: Float64Array;
  /** Same for finishedAtMs. */
  readonly finishedPerStep: Float64Array;
  readonly finishedPerSeq: Float64Array;
}

/**
 * A step-time model that adds the two overhead terms to `base` (as `OperatorStepTime` applies
 * them: once per non-empty step and once per sequence in it) and remembers the sequences of the
 * step it last timed — the one in flight, since a replica times a step when it starts it.
 */
export class OverheadStepTime implements StepTimeModel {
  /** Sequences in the step last timed (0 for an empty one). */
  lastSequences = 0;
  constructor(
    private readonly base: StepTimeModel,
    private readonly stepOverheadMs: number,
    private readonly perSequenceOverheadMs: number,
  ) {}

  /** `base.stepMs(b)` plus the overheads; 0 for an empty batch. */
  stepMs(b: BatchShape): number {
    const ms = this.base.stepMs(b);
    if (b.prefillTokens === 0 && b.decodeSeqs === 0) {
      this.lastSequences = 0;
      return ms;
    }
    this.lastSequences = b.prefillSeqs + b.decodeSeqs;
    return ms + this.stepOverheadMs + this.perSequenceOverheadMs * this.lastSequences;
  }
}

/**
 * Replays `requests` (arrival order) on `replica` (fresh, idle, built without step coalescing
 * and timed by `stepTime`). A request arriving exactly at a step's end joins the step after, as
 * in the closed-loop driver.
 * @throws Error when the replica stops while requests are still inside it (a model bug).
 */
export function replayOnEngine(requests: readonly LoggedRequest[], replica: EngineModel, stepTime: OverheadStepTime): EngineTimes {
  const n = requests.length;
  const nan = () => new Float64Array(n).fill(NaN);
  const t: EngineTimes = { firstTokenAtMs: nan(), finishedAtMs: nan(), firstPerStep: nan(), firstPerSeq: nan(), finishedPerStep: nan(), finishedPerSeq: nan() };
  let left = n;
  // Steps and sequences of the current busy period up to and including the step that just ended.
  let cumSteps = 0;
  let cumSeqs = 0;
  const emit = (e: EngineEvent): void => {
    const i = e.attemptId;
    if (e.kind === 'first_token') {
      t.firstTokenAtMs[i] = e.atMs;
      t.firstPerStep[i] = cumSteps;
      t.firstPerSeq[i] = cumSeqs;
      return;
    }
    if (e.kind === 'finished') {
      t.finishedAtMs[i] = e.atMs;
      t.finishedPerStep[i] = cumSteps;
      t.finishedPerSeq[i] = cumSeqs;
    }
    left--;
  };
  let stepEnd: number | null = null;
  let next = 0;
  while (left > 0) {
    const r = requests[next];
    if (r !== undefined && (stepEnd === null || r.arrivalMs < stepEnd)) {
      if (stepEnd === null) {
        cumSteps = 0;
        cumSeqs = 0;
      }
      const end = replica.enqueue({ attemptId: next, inputTokens: r.inputTokens, outputTokens: r.outputTokens, hashIds: r.hashIds }, r.arrivalMs, emit);
      if (end !== null) stepEnd = end;
      next++;
      continue;
    }
    if (stepEnd === null) throw new Error(`endpoint replay: replica idle with ${left} request(s) inside`);
    cumSteps += 1;
    cumSeqs += stepTime.lastSequences;
    stepEnd = replica.completeStep(stepEnd, emit);
  }
  return t;
}

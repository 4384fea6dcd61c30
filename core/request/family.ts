/**
 * What a model family plugs into the one request life (`life.ts`): a candidate source (selection
 * and the request's walk state: `candidates/route-source.ts`, `candidates/tier-source.ts`) and an
 * attempt policy (`router-policy.ts`, `alias-policy.ts`). Both are typed over the life they are
 * given, `L`, so this file needs nothing of the life itself.
 */
import type { Outcome } from '../lifecycle/outcome.ts';
import type { LifecycleAction, RoutingMetadata, Usage } from '../lifecycle/seam.ts';
import type { LiveAttempt } from './live-attempt.ts';

/** A family's candidate source: selection at the start of a life. Holds the request's walk state. */
export interface CandidateSource<L> {
  /** Runs the candidate stages at `nowMs` and starts the first attempt on `life`, or ends it. */
  begin(life: L, nowMs: number): LifecycleAction[];
}

/**
 * A family's attempt policy for lives of type `L`. Stateless (one object per family): every call
 * names its life, and per-request state lives in the life's candidate source.
 */
export interface AttemptPolicy<L> {
  /** Engine-hold queue limit for attempts of this request, or null (no engine hold). */
  holdLimit(life: L): number | null;
  /** How long queued attempt `a` may wait for its slot, ms. */
  queueWaitMs(life: L, a: LiveAttempt): number;
  /** Attempt `a` was just created (before admission queues it). */
  attemptStarting(life: L, a: LiveAttempt): void;
  /** Attempt `a` is about to be dispatched at `nowMs` (prefill lease, endpoint statistics). */
  beforeDispatch(life: L, a: LiveAttempt, nowMs: number): void;
  /** Attempt `a` was dispatched: the family's own deadlines go to `out`. */
  afterDispatch(life: L, a: LiveAttempt, nowMs: number, out: LifecycleAction[]): void;
  /** Attempt `a`'s upstream answered with its response headers (or first bytes) at `nowMs`. */
  firstOutput(life: L, a: LiveAttempt, nowMs: number): void;
  /** Attempt `a` produced its first content token at `nowMs`. */
  firstToken(life: L, a: LiveAttempt, nowMs: number): void;
  /** Attempt `a` finished successfully at `nowMs`: `finishing` before it is ended, `served` after. */
  finishing(life: L, a: LiveAttempt, nowMs: number): void;
  served(life: L, a: LiveAttempt, nowMs: number): void;
  /** Attempt `a` is ending with `outcome` (`healthOutcome` is what shared state hears). */
  attemptEnded(life: L, a: LiveAttempt, outcome: Outcome, healthOutcome: Outcome, nowMs: number): void;
  /** An upstream failure of sent attempt `a`: what follows (retry, fail over, the error). */
  failed(life: L, a: LiveAttempt, outcome: Outcome, nowMs: number): LifecycleAction[];
  /** A headers, total or stream-idle wait of sent attempt `a` ran out. */
  stalled(life: L, a: LiveAttempt, nowMs: number): LifecycleAction[];
  /** Queued attempt `a` was not granted its slot in time. */
  queueGaveUp(life: L, a: LiveAttempt, nowMs: number): LifecycleAction[];
  /** The engine-wait deadline of `a` fired (models with an offload policy). */
  engineWaitExpired(life: L, a: LiveAttempt, nowMs: number): LifecycleAction[];
  /** The hedge checkpoint of `a` passed. */
  hedgeCheckpoint(life: L, a: LiveAttempt, nowMs: number): LifecycleAction[];
  /** Backoff deadline `deadlineId` fired. */
  backoffDone(life: L, deadlineId: number, nowMs: number): LifecycleAction[];
  /** What live attempts are recorded as when the overall deadline cuts them. */
  readonly overallOutcome: Outcome;
  /** The message of an "every attempt failed" error, given the attempts' summary. */
  allFailedMessage(life: L, summary: string): string;
  /** The routing metadata of the ended life (`status`: `ok` or the error code). */
  metadata(life: L, status: string, nowMs: number, usage: Usage | null): RoutingMetadata;
  /** The life ended: drop pending waits. */
  ended(life: L): void;
  /** The family's own invariants. @throws Error naming the request. */
  check(life: L): void;
}

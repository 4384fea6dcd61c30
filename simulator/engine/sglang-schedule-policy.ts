/**
 * Ordering and reservation rules of the SGLang replica model, after SGLang's
 * `python/sglang/srt/managers/schedule_policy.py` (`SchedulePolicy`, `PrefillAdder`) and the
 * retraction order of `ScheduleBatch.retract_decode` (`managers/schedule_batch.py`). Pure
 * functions over request fields; the scheduler (`sglang-scheduler.ts`) applies them.
 */
import type { RadixCache } from './radix-cache.ts';

/** SGLang's `CLIP_MAX_NEW_TOKENS_ESTIMATION` (schedule_policy.py): max output tokens reserved per request. */
export const CLIP_MAX_NEW_TOKENS = 4096;

/**
 * Waiting requests above which `lpm` falls back to arrival order (schedule_policy.py
 * `_determine_active_policy`: prefix matching and sorting a long queue cost too much).
 */
export const LPM_MAX_WAITING = 128;

/** The request fields the policy reads. */
export interface PolicyRequest {
  readonly input: number;
  readonly output: number;
  readonly hashIds: readonly number[] | null;
  /** Arrival sequence number (ties keep arrival order). */
  readonly seq: number;
  generated: number;
  /** Longest-prefix-match length (tokens), written by `sortLongestPrefixFirst`. */
  matchTokens: number;
}

/** Output tokens a request reserves in the pool: min(remaining output, CLIP_MAX_NEW_TOKENS) (PrefillAdder's estimate). */
export function reservedOutputTokens(r: PolicyRequest): number {
  return Math.min(r.output - r.generated, CLIP_MAX_NEW_TOKENS);
}

/** Whether the waiting queue is sorted by prefix match this step (`lpm` and 2..LPM_MAX_WAITING waiting). */
export function sortsByPrefix(policy: 'fcfs' | 'lpm', waiting: number): boolean {
  return policy === 'lpm' && waiting > 1 && waiting <= LPM_MAX_WAITING;
}

/**
 * Longest prefix match first (SGLang `_sort_by_longest_prefix`), stable: ties keep arrival order.
 * The match leaves at least the last prompt token to compute, as admission does.
 */
export function sortLongestPrefixFirst(waiting: PolicyRequest[], radix: RadixCache, hashBlockTokens: number): void {
  for (const r of waiting) {
    const node = r.hashIds === null ? null : radix.match(r.hashIds, Math.floor((r.input - 1) / hashBlockTokens));
    r.matchTokens = node === null ? 0 : node.depth * hashBlockTokens;
  }
  waiting.sort((a, b) => b.matchTokens - a.matchTokens || a.seq - b.seq);
}

/**
 * Retraction order (SGLang `retract_decode` sorts by (outputs, −prompt) descending and pops the
 * tail): sorted with this, the last element has the fewest outputs, then the longest prompt.
 */
export function retractionOrder(a: PolicyRequest, b: PolicyRequest): number {
  return b.generated - a.generated || a.input - b.input || a.seq - b.seq;
}

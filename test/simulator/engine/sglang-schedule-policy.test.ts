import { describe, expect, it } from 'vitest';
import { RadixCache } from '../../../simulator/engine/radix-cache.ts';
import {
  CLIP_MAX_NEW_TOKENS,
  LPM_MAX_WAITING,
  type PolicyRequest,
  reservedOutputTokens,
  retractionOrder,
  sortLongestPrefixFirst,
  sortsByPrefix,
} from '../../../simulator/engine/sglang-schedule-policy.ts';

function req(seq: number, input: number, output: number, generated: number, hashIds: number[] | null = null): PolicyRequest {
  return { seq, input, output, generated, hashIds, matchTokens: 0 };
}

describe('SGLang schedule policy', () => {
  it('reserves the remaining output, clipped at 4,096 tokens', () => {
    expect(reservedOutputTokens(req(0, 10, 100, 30))).toBe(70);
    expect(reservedOutputTokens(req(0, 10, 10_000, 0))).toBe(CLIP_MAX_NEW_TOKENS);
  });

  it('lpm sorts only queues of 2..128 requests', () => {
    expect(sortsByPrefix('lpm', 1)).toBe(false);
    expect(sortsByPrefix('lpm', LPM_MAX_WAITING)).toBe(true);
    expect(sortsByPrefix('lpm', LPM_MAX_WAITING + 1)).toBe(false);
    expect(sortsByPrefix('fcfs', 10)).toBe(false);
  });

  it('longest cached prefix first, ties in arrival order, always leaving the last prompt token', () => {
    const radix = new RadixCache(4);
    radix.insert([1, 2, 3], 3);
    const w = [req(0, 9, 1, 0, [5]), req(1, 12, 1, 0, [1, 2, 3]), req(2, 13, 1, 0, [1, 2, 3]), req(3, 9, 1, 0, [1, 2])];
    sortLongestPrefixFirst(w, radix, 4);
    expect(w.map((r) => r.seq)).toEqual([2, 1, 3, 0]);
    expect(w.map((r) => r.matchTokens)).toEqual([12, 8, 8, 0]); // seq 1: 12 tokens, so only 2 blocks
  });

  it('retracts the request with the fewest outputs, then the longest prompt (the last after sorting)', () => {
    const run = [req(0, 100, 50, 5), req(1, 300, 50, 2), req(2, 200, 50, 2), req(3, 50, 50, 9)];
    run.sort(retractionOrder);
    expect(run.map((r) => r.seq)).toEqual([3, 0, 2, 1]);
  });
});

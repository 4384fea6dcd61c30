import { describe, expect, it } from 'vitest';
import { deriveSessions } from '../../traces/derive-sessions.ts';

describe('deriveSessions', () => {
  // 40 requests, all opening with system-prompt block 0. Conversation A (block 100…) has
  // three turns, B (200…) two; the rest are one-off requests; request 19 is only the prompt.
  const hashes: number[][] = [
    [0, 100],
    [0, 200, 201],
    [0, 100, 101],
    [0, 200, 201, 202],
    [0, 100, 101, 102, 103],
    ...Array.from({ length: 34 }, (_, i) => [0, 1000 + i]),
    [0],
  ];
  const ids = hashes.map((_, i) => String(i));

  it('skips blocks in more than 10% of requests and keys on the first remaining block', () => {
    const d = deriveSessions(hashes, ids);
    expect(d.commonBlocks).toEqual([0]);
    expect(d.sessionIds.slice(0, 5)).toEqual(['blk-100', 'blk-200', 'blk-100', 'blk-200', 'blk-100']);
    expect(d.sessionIds[5]).toBe('blk-1000');
    expect(d.sessionIds[39]).toBe('req-39');
    expect(d.sessions).toBe(2 + 34 + 1);
    expect(d.rule).toBe('derived:first-uncommon-block (common = block in >10% of requests; here [0])');
  });

  it('counts a block once per request, and the threshold is strict', () => {
    // Block 100 is in 3 of 40 requests = 7.5 % (block 101 in 2): common only below that.
    expect(deriveSessions(hashes, ids, 0.1).commonBlocks).toEqual([0]);
    expect(deriveSessions(hashes, ids, 0.07).commonBlocks).toEqual([0, 100]);
    expect(deriveSessions(hashes, ids, 0.07).sessionIds[2]).toBe('blk-101');
    expect(deriveSessions(hashes, ids, 0.08).commonBlocks).toEqual([0]);
    expect(deriveSessions(hashes, ids, 1).commonBlocks).toEqual([]); // 40 > 40 is false
    expect(deriveSessions([[5, 5, 5], [6]], ['a', 'b'], 0.5).commonBlocks).toEqual([]);
  });

  it('rejects mismatched inputs and thresholds outside (0, 1]', () => {
    expect(() => deriveSessions([[1]], [])).toThrow(/1 hash lists but 0 request ids/);
    expect(() => deriveSessions([[1]], ['a'], 0)).toThrow(/not in \(0, 1\]/);
  });
});

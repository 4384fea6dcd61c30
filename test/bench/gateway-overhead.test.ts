// bench/gateway-overhead.ts says up front how long it will take: the load it generates follows
// from its options (the wall time itself is not asserted; it depends on the machine).
import { describe, expect, it } from 'vitest';
import { expectedLoadSeconds } from '../../bench/gateway-overhead.ts';

describe('gateway-overhead expected duration', () => {
  it('defaults: 2 cases × 4 paths × (1 s warm-up + (4 steps + 3 rounds) × 5 s) = 288 s', () => {
    expect(expectedLoadSeconds({ seconds: 5, rpsSteps: [100, 500, 1000, 2000], maxRounds: 3, peer: true, floor: true })).toBe(288);
  });

  it('fewer paths, steps and rounds shorten it', () => {
    expect(expectedLoadSeconds({ seconds: 2, rpsSteps: [100, 1000], maxRounds: 1, peer: false, floor: false })).toBe(2 * 2 * (1 + 3 * 2));
    expect(expectedLoadSeconds({ seconds: 5, rpsSteps: [], peer: true })).toBe(2 * 4 * (1 + 5));
  });
});

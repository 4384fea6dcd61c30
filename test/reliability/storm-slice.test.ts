// The CI slice of the fault storm (`bench/fault-storm.ts` runs 100,000 requests): 5,000 requests
// over emulators injecting 500s, 429s, resets, stalls past the body deadline, slow first tokens,
// malformed SSE and disconnects, with client aborts (`fault-storm-run.ts`). Every request that
// was not aborted ends (a success, an error status or an in-band error), no success is
// truncated, no client sees a broken response, and nothing is left in flight or upstream. RSS is
// reported by the script, not checked here: 5,000 requests are still inside the warm-up.
import { describe, expect, it } from 'vitest';
import { runStorm } from '../gateway/fault-storm-run.ts';

describe('fault storm, CI slice', () => {
  it('5,000 requests under faults and aborts: none lost, none truncated, nothing left open', async () => {
    const s = await runStorm({ requests: 5_000, concurrency: 32, seed: 42, warmup: 0.3 });
    expect({ lost: s.lost, truncated: s.truncated, failedClient: s.endings.failed_client, inFlight: s.inFlightAtEnd, upstreamOpen: s.upstreamOpenAtEnd }).toEqual({ lost: 0, truncated: 0, failedClient: 0, inFlight: 0, upstreamOpen: 0 });
    // Every fault fired: the slice would pass vacuously otherwise.
    expect(s.endings.error_status).toBeGreaterThan(0);
    expect(s.endings.in_band_error).toBeGreaterThan(0);
    expect(s.endings.aborted).toBeGreaterThan(0);
    expect(s.malformedSent).toBeGreaterThan(0);
    expect(s.endings.ok).toBeGreaterThan(s.requests / 2);
  }, 180_000);
});

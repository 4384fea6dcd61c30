// The CI slice of the HTTP fuzzer (`bench/fuzz.ts` runs a million cases): 20,000 seeded raw
// requests against a real gateway over an echo emulator, each checked by `fuzz-cases.ts` (one
// response to a well-framed request, documented statuses, error shapes with stable codes), no
// uncaught exception or unhandled rejection, nothing in flight at the end, `/health` still 200.
// It runs in the `reliability` project, one file at a time, because it keeps a core busy.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeCase, runCases, sampleCases } from '../gateway/fuzz-cases.ts';
import { startStack, type Stack } from '../gateway/harness.ts';

const CASES = 20_000;
const BATCH = 2_000;
let stack: Stack;
const crashes: unknown[] = [];
const onCrash = (e: unknown): void => void crashes.push(e);
beforeAll(async () => {
  process.on('uncaughtException', onCrash);
  process.on('unhandledRejection', onCrash);
  stack = await startStack([{ mode: 'echo' }], { server: { body_limit_mb: 1 } });
});
afterAll(async () => {
  process.off('uncaughtException', onCrash);
  process.off('unhandledRejection', onCrash);
  await stack?.close();
});

describe('HTTP fuzzing, CI slice', () => {
  it(`${CASES.toLocaleString('en')} seeded cases: no failure, no crash, nothing left in flight, still healthy`, async () => {
    const port = Number(new URL(stack.gw.url).port);
    const failures: Array<Record<string, unknown>> = [];
    // Batches as `bench/fuzz.ts` draws them (seed × 1,000,003 + batch), so a failure here is
    // regenerated there with `--seed 20261204`.
    for (let b = 0; b * BATCH < CASES; b++) {
      const failed = await runCases(port, sampleCases(20_261_204 * 1_000_003 + b, BATCH), 16);
      failures.push(...failed.map((f) => ({ batch: b, index: f.index, ...describeCase(f.case, f.why) })));
    }
    expect(failures).toEqual([]);
    expect(crashes).toEqual([]);
    const until = Date.now() + 10_000;
    while (stack.gw.inFlight() > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    expect(stack.gw.inFlight()).toBe(0);
    expect((await fetch(`${stack.gw.url}/health`)).status).toBe(200);
  }, 180_000);
});

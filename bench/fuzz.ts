/**
 * The HTTP fuzzer: seeded, generated raw HTTP/1.1 requests (`test/gateway/fuzz-cases.ts`) sent
 * each on its own connection to a real gateway on 127.0.0.1 (in this process, over one echo
 * emulator), OpenAI and Anthropic families alike. A case passes when a well-framed request gets
 * exactly one response and nothing after it, every response has a documented status other than
 * 500, and every error body has the wire's error shape with a stable code (OpenAI) or type
 * (Anthropic). The run fails on any uncaught exception or unhandled rejection, and at the end
 * the gateway must have no request in flight and still answer `/health`.
 *
 *   npx tsx bench/fuzz.ts [--cases 1000000] [--seed 1] [--concurrency 16] [--batch 2000] [--save failures.json]
 *
 * Prints one JSON line per batch (cases so far, cases/s, failures) and a summary line; failing
 * cases go to `--save` with their raw bytes (base64), to be replayed as regression tests.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { runCases, sampleCases, describeCase } from '../test/gateway/fuzz-cases.ts';
import { startStack } from '../test/gateway/harness.ts';

const { values } = parseArgs({
  options: {
    cases: { type: 'string', default: '1000000' },
    seed: { type: 'string', default: '1' },
    concurrency: { type: 'string', default: '16' },
    batch: { type: 'string', default: '2000' },
    save: { type: 'string' },
  },
});
const total = Number(values.cases);
const seed = Number(values.seed);
const concurrency = Number(values.concurrency);
const batch = Number(values.batch);
for (const [name, v] of Object.entries({ cases: total, seed, concurrency, batch })) {
  if (!Number.isInteger(v) || v < (name === 'seed' ? 0 : 1)) throw new Error(`--${name} must be a positive integer (got ${String(values[name as keyof typeof values])})`);
}

const crashes: string[] = [];
process.on('uncaughtException', (e) => crashes.push(`uncaught: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`));
process.on('unhandledRejection', (e) => crashes.push(`unhandled rejection: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`));

const stack = await startStack([{ mode: 'echo' }], { server: { body_limit_mb: 1 } });
const port = Number(new URL(stack.gw.url).port);
const failures: Array<Record<string, unknown>> = [];
const byMutation: Record<string, number> = {};
const started = performance.now();
let done = 0;
for (let b = 0; done < total; b++) {
  const n = Math.min(batch, total - done);
  // One seed per batch, derived from the run's seed: any batch can be regenerated alone.
  const cases = sampleCases(seed * 1_000_003 + b, n);
  for (const c of cases) byMutation[c.mutation.split(':')[0]!] = (byMutation[c.mutation.split(':')[0]!] ?? 0) + 1;
  const failed = await runCases(port, cases, concurrency);
  for (const f of failed) failures.push({ batch: b, index: f.index, ...describeCase(f.case, f.why) });
  done += n;
  const s = (performance.now() - started) / 1000;
  console.log(JSON.stringify({ cases: done, casesPerSec: Math.round(done / s), failures: failures.length, crashes: crashes.length, rssMb: Math.round(process.memoryUsage().rss / 2 ** 20) }));
  if (failed.length > 0) console.log(JSON.stringify({ firstFailure: { batch: b, index: failed[0]!.index, why: failed[0]!.why, mutation: failed[0]!.case.mutation, path: failed[0]!.case.path, framing: failed[0]!.case.framing } }));
}

// Everything is over: nothing in flight, and the gateway still answers.
const until = Date.now() + 10_000;
while (stack.gw.inFlight() > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
const health = await fetch(`${stack.gw.url}/health`).then((r) => r.status);
const inFlight = stack.gw.inFlight();
await stack.close();
const seconds = (performance.now() - started) / 1000;
if (values.save !== undefined) writeFileSync(values.save, JSON.stringify({ seed, failures, crashes }, null, 2));
console.log(JSON.stringify({ summary: true, seed, cases: done, seconds: Math.round(seconds), casesPerSec: Math.round(done / seconds), failures: failures.length, crashes: crashes.length, inFlightAtEnd: inFlight, healthAtEnd: health, byMutation }));
for (const c of crashes.slice(0, 5)) console.error(c);
process.exitCode = failures.length === 0 && crashes.length === 0 && inFlight === 0 && health === 200 ? 0 : 1;

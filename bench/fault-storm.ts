/**
 * Fault storm: `--requests` chat requests (half streaming) through an in-process gateway over
 * three engine emulators injecting 500s, 429 storms with and without a useful `Retry-After`,
 * resets before any byte, stalls past the body deadline, slow first tokens, malformed SSE (an
 * event whose JSON is cut short) and mid-stream disconnects, while 3 % of clients abort at a
 * random point (`test/gateway/fault-storm-run.ts` has the details; `test/reliability/` runs a
 * 5,000-request slice). Counts each request's ending (success, error status, in-band error,
 * aborted), the lost ones (no ending: must be 0) and truncated successes (must be 0), and the
 * process's memory after warm-up (`--warmup`, a fraction of the requests: 0.3) and at the end —
 * RSS, heapUsed, external, arrayBuffers — so growth can be told apart (JS heap vs native
 * buffers). RSS here covers the gateway, the emulators and the client together: an upper bound
 * on the gateway's own.
 *
 *   npx tsx --expose-gc bench/fault-storm.ts [--requests 100000] [--concurrency 32] [--seed 42] [--warmup 0.3]
 *
 * heapUsed climbs for the first ~30,000 requests (pools, JIT, tables filling) and is flat after;
 * RSS moves by ±20 MB between samples (native memory of uWS, undici and the allocator), so
 * compare heapUsed and external across runs before calling RSS growth a leak.
 */
import { parseArgs } from 'node:util';
import { runStorm } from '../test/gateway/fault-storm-run.ts';

const { values } = parseArgs({ options: { requests: { type: 'string', default: '100000' }, concurrency: { type: 'string', default: '32' }, seed: { type: 'string', default: '42' }, warmup: { type: 'string', default: '0.3' } } });
const s = await runStorm({
  requests: Number(values.requests),
  concurrency: Number(values.concurrency),
  seed: Number(values.seed),
  warmup: Number(values.warmup),
  progress: (line) => console.log(JSON.stringify(line)),
});
console.log(JSON.stringify({ summary: true, ...s }));
process.exitCode = s.lost === 0 && s.truncated === 0 && s.endings.failed_client === 0 && s.inFlightAtEnd === 0 && s.upstreamOpenAtEnd === 0 ? 0 : 1;

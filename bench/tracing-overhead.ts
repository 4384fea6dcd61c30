/**
 * Tracing overhead: the same paced load through two `switchyard gateway` processes that differ
 * only in `tracing:` — off (the default: no OpenTelemetry module loaded), and on with every trace
 * sampled (`sample_ratio`, 1 by default), exporting over OTLP/HTTP to a receiver this script runs
 * on a free loopback port (it reads and counts each export request and answers 200). Measured as
 * `side-by-side.ts` does: the on/off ratios of gateway CPU per request (span creation, attributes,
 * batching and the OTLP export included) and of added p50 and p99 latency; then the spans'
 * arrival is checked (export requests and bytes received).
 *
 *   npx tsx bench/tracing-overhead.ts [--seconds 3] [--rps 400] [--rounds 3] [--connections 16] [--sample-ratio 1]
 */
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { runSideBySide, type SideBySideLoad, type SideBySideRound } from './side-by-side.ts';

/** Options of `runTracingOverhead`: the load, and the share of traces recorded when on (0..1). */
export interface TracingOverheadOptions extends SideBySideLoad {
  sampleRatio: number;
}

/** Runs the comparison (A = tracing off, B = on) and prints it, with what the receiver got. */
export async function runTracingOverhead(o: TracingOverheadOptions, write: (s: string) => void = (s) => process.stdout.write(s)): Promise<SideBySideRound[]> {
  let exports = 0;
  let bytes = 0;
  const receiver = createServer((req, res) => {
    req.on('data', (d: Buffer) => (bytes += d.length));
    req.on('end', () => {
      exports++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const port = (receiver.address() as { port: number }).port;
  try {
    const rounds = await runSideBySide(
      {
        ...o,
        modelsYaml: 'models:\n  - id: m\n    route:\n      - base_url: {upstream}\n',
        a: { label: 'tracing off', gatewayYaml: '' },
        b: { label: 'tracing on', gatewayYaml: `tracing:\n  enabled: true\n  endpoint: http://127.0.0.1:${port}/v1/traces\n  sample_ratio: ${o.sampleRatio}\n` },
      },
      write,
    );
    write(`OTLP receiver: ${exports} export requests, ${(bytes / 1024).toFixed(0)} KiB (spans of sample ratio ${o.sampleRatio})\n`);
    return rounds;
  } finally {
    receiver.closeAllConnections();
    await new Promise((r) => receiver.close(r));
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: { seconds: { type: 'string', default: '3' }, rps: { type: 'string', default: '400' }, rounds: { type: 'string', default: '3' }, connections: { type: 'string', default: '16' }, 'sample-ratio': { type: 'string', default: '1' } },
  });
  await runTracingOverhead({ seconds: Number(values.seconds), rateRps: Number(values.rps), rounds: Number(values.rounds), connections: Number(values.connections), sampleRatio: Number(values['sample-ratio']) });
}

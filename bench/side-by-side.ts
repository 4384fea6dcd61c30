/**
 * Two `switchyard gateway` processes that differ in one `gateway.yaml` block, measured side by
 * side under the same paced load against one fake OpenAI-compatible upstream that answers at once
 * (`test/state/gateway-processes.ts`), with the upstream itself (`direct`) as the floor. Paths run
 * in turn within each round (direct, then the two gateways, which goes first alternating by
 * round), `rounds` times; each round gives two ratios, B over A:
 * - CPU per request of the gateway process (user + system, all threads, from /proc);
 * - added latency: the path's p50 (and p99) minus direct's in the same round.
 * The median and the range over rounds are printed. Absolute numbers move with what else runs on
 * the machine; the ratios, measured side by side, move far less.
 */
import { measurePaced, type PathRun } from './load-runs.ts';
import { median } from './overhead-summary.ts';
import { gatewayDir, PROCESS_KEY, startCountingUpstream, startGatewayProcess, type GatewayProcess } from '../test/state/gateway-processes.ts';

/** Load and repetition of a side-by-side comparison. */
export interface SideBySideLoad {
  /** Seconds of load per path and round. */
  seconds: number;
  /** The paced rate, requests per second. */
  rateRps: number;
  rounds: number;
  /** Keep-alive connections of the load generator. */
  connections: number;
}

/** One gateway variant: a label and the `gateway.yaml` text (top-level keys) it adds. */
export interface GatewayVariant {
  label: string;
  gatewayYaml: string;
}

/** One round: each path's run and the B/A ratios. */
export interface SideBySideRound {
  direct: PathRun;
  a: PathRun;
  b: PathRun;
  /** Gateway CPU per request, B / A. */
  cpuRatio: number;
  /** (p50 − direct p50), B / A. */
  addedP50Ratio: number;
  /** (p99 − direct p99), B / A. */
  addedP99Ratio: number;
}

/** The rounds, and the two gateways (still running until `after` returns) for a last look. */
export interface SideBySideOptions extends SideBySideLoad {
  /** models.yaml text routing model `m`; `{upstream}` is replaced by the fake upstream's base URL. */
  modelsYaml: string;
  a: GatewayVariant;
  b: GatewayVariant;
  /** Called after the rounds, before the gateways stop (reads their /health/deep, say). */
  after?: (a: GatewayProcess, b: GatewayProcess) => Promise<void>;
}

const ratio = (x: number, y: number) => (y > 0 ? x / y : Number.NaN);

/** `median (min–max)` of `xs`, two decimals. */
export const medianRange = (xs: number[]) => `${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`;

/**
 * Runs the comparison, printing one line per round and a summary of B/A ratios.
 * @throws Error when a gateway process does not start (with its output).
 */
export async function runSideBySide(o: SideBySideOptions, write: (s: string) => void = (s) => process.stdout.write(s)): Promise<SideBySideRound[]> {
  const up = await startCountingUpstream(0);
  const gws: GatewayProcess[] = [];
  try {
    const models = o.modelsYaml.replaceAll('{upstream}', up.baseUrl);
    const a = await startGatewayProcess(gatewayDir(models, o.a.gatewayYaml));
    gws.push(a);
    const b = await startGatewayProcess(gatewayDir(models, o.b.gatewayYaml));
    gws.push(b);
    const headers = { authorization: `Bearer ${PROCESS_KEY}`, 'content-type': 'application/json' };
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    const run = (url: string, pid: number | null) => measurePaced(url, headers, body, { rateRps: o.rateRps, connections: o.connections, seconds: o.seconds, pid });
    // Warm-up (JIT, connection pools, anything each variant opens lazily).
    for (const g of gws) await measurePaced(`${g.url}/v1/chat/completions`, headers, body, { rateRps: o.rateRps, connections: o.connections, seconds: 1 });
    write(`${o.rounds} rounds × ${o.seconds} s at ${o.rateRps} req/s, ${o.connections} connections; paths in turn: direct, then ${o.a.label} and ${o.b.label} (alternating order)\n`);
    const rounds: SideBySideRound[] = [];
    for (let i = 0; i < o.rounds; i++) {
      const direct = await run(`${up.baseUrl}/chat/completions`, null);
      // Alternate which gateway goes first, so neither always runs on the warmer machine.
      const runA = () => run(`${a.url}/v1/chat/completions`, a.child.pid ?? null);
      const runB = () => run(`${b.url}/v1/chat/completions`, b.child.pid ?? null);
      let ra: PathRun;
      let rb: PathRun;
      if (i % 2 === 0) {
        ra = await runA();
        rb = await runB();
      } else {
        rb = await runB();
        ra = await runA();
      }
      rounds.push({
        direct,
        a: ra,
        b: rb,
        cpuRatio: ratio(rb.cpuUsPerRequest ?? Number.NaN, ra.cpuUsPerRequest ?? Number.NaN),
        addedP50Ratio: ratio(rb.p50Ms - direct.p50Ms, ra.p50Ms - direct.p50Ms),
        addedP99Ratio: ratio(rb.p99Ms - direct.p99Ms, ra.p99Ms - direct.p99Ms),
      });
      const f = (p: PathRun) => `p50 ${p.p50Ms.toFixed(3)} ms, p99 ${p.p99Ms.toFixed(3)} ms${p.cpuUsPerRequest !== null ? `, CPU ${p.cpuUsPerRequest.toFixed(0)} µs/req` : ''}${p.bad ? `, ${p.bad} bad` : ''}`;
      write(`  round ${i + 1}: direct ${f(direct)} | ${o.a.label} ${f(ra)} | ${o.b.label} ${f(rb)}\n`);
    }
    await o.after?.(a, b);
    write(
      `${o.b.label}/${o.a.label}, median (range) over rounds: gateway CPU per request ×${medianRange(rounds.map((x) => x.cpuRatio))}, added p50 latency ×${medianRange(rounds.map((x) => x.addedP50Ratio))}, added p99 latency ×${medianRange(rounds.map((x) => x.addedP99Ratio))}\n`,
    );
    return rounds;
  } finally {
    await Promise.all(gws.map((g) => g.stop()));
    await up.close();
  }
}

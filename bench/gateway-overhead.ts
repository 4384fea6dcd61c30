/**
 * Gateway overhead: the same load straight to an engine emulator in `echo` mode (answers at
 * once, no model) and through the gateway in front of it, so the difference is what the gateway
 * adds — auth, JSON parse, routing decision, upstream pool, SSE relay. Each server runs in its
 * own process (`switchyard emulate`, `switchyard gateway`), the load generator (autocannon) in
 * this one. Prints requests/s and latency percentiles per case, and the added p50 / p99.
 *
 *   npx tsx bench/gateway-overhead.ts [--seconds 5] [--connections 32]
 *
 * Numbers depend on the machine and on what else runs on it; compare runs on one machine.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { hashKey } from '../gateway/callers.ts';

interface CannonResult {
  requests: { average: number };
  latency: { p50: number; p90: number; p99: number; average: number };
  non2xx: number;
  errors: number;
}
type Cannon = (opts: Record<string, unknown>) => Promise<CannonResult>;
const autocannon = createRequire(import.meta.url)('autocannon') as Cannon;

const root = join(import.meta.dirname, '..');
const { values } = parseArgs({ options: { seconds: { type: 'string', default: '5' }, connections: { type: 'string', default: '32' } } });
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const KEY = 'sk-bench';

/** Starts `switchyard <args>` and resolves with the URL it prints. */
function startCli(args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [join(root, 'bin/switchyard.mjs'), ...args], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /on (http:\/\/[^\s]+?)(\/v1)?[\s(]/.exec(out);
      if (m) resolve({ child, url: m[1]! });
    });
    child.once('exit', (code) => reject(new Error(`switchyard ${args[0]} exited with ${code}: ${out}`)));
  });
}

async function main(): Promise<void> {
  const emu = await startCli(['emulate', '--port', '0', '--mode', 'echo']);
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-'));
  writeFileSync(join(dir, 'models.yaml'), `models:\n  - id: bench\n    route:\n      - base_url: ${emu.url}/v1\n`);
  writeFileSync(
    join(dir, 'gateway.yaml'),
    `server:\n  port: 0\n  log_level: warn\n  seed: 1\nauth:\n  keys:\n    - id: bench\n      sha256: ${hashKey(KEY)}\n`,
  );
  const gw = await startCli(['gateway', '--config', dir]);
  const cases: Array<{ name: string; stream: boolean }> = [
    { name: 'chat non-stream', stream: false },
    { name: 'chat stream', stream: true },
  ];
  process.stdout.write(`gateway overhead — ${connections} connections, ${seconds} s per run, ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), load average ${loadavg()[0]!.toFixed(1)}\n`);
  process.stdout.write('case                 target    req/s     p50 ms  p90 ms  p99 ms  errors\n');
  try {
    for (const c of cases) {
      const body = JSON.stringify({ model: 'bench', stream: c.stream, messages: [{ role: 'user', content: 'Say ok.' }], max_tokens: 1 });
      const results: Record<string, CannonResult> = {};
      for (const [target, url] of [
        ['direct', `${emu.url}/v1/chat/completions`],
        ['gateway', `${gw.url}/v1/chat/completions`],
      ] as const) {
        // Warm up (JIT, pools), then measure.
        await autocannon({ url, method: 'POST', connections, duration: 1, headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` }, body });
        const r = await autocannon({ url, method: 'POST', connections, duration: seconds, headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` }, body });
        results[target] = r;
        process.stdout.write(
          `${c.name.padEnd(20)} ${target.padEnd(8)} ${r.requests.average.toFixed(0).padStart(7)} ${r.latency.p50.toFixed(2).padStart(9)} ${r.latency.p90.toFixed(2).padStart(7)} ${r.latency.p99.toFixed(2).padStart(7)} ${String(r.errors + r.non2xx).padStart(7)}\n`,
        );
      }
      const d = results.direct!;
      const g = results.gateway!;
      process.stdout.write(`${''.padEnd(20)} added    p50 +${(g.latency.p50 - d.latency.p50).toFixed(2)} ms, p99 +${(g.latency.p99 - d.latency.p99).toFixed(2)} ms\n`);
    }
  } finally {
    gw.child.kill('SIGINT');
    emu.child.kill('SIGINT');
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();

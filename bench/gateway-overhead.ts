/**
 * Gateway overhead: the same load straight to an engine emulator in `echo` mode (answers at
 * once, no model), through a bare uWS → undici proxy in front of it (the floor: what any gateway
 * on this stack pays here, `bench/floor-proxy.mjs`), through Switchyard's gateway, and through a peer gateway —
 * Portkey's open-source AI gateway (`@portkey-ai/gateway`, hono on node; see
 * `bench/peer-gateway.ts`) — in front of the same emulator. The difference to `direct` is what a
 * gateway adds: for Switchyard auth, JSON parse, routing decision, upstream pool, SSE relay,
 * request log; for Portkey its header-driven provider routing, request/response transforms and
 * stream relay. Each server runs in its own process (`switchyard emulate`, `switchyard gateway`
 * with the request log on in its worker thread, Portkey); the load generator (a paced undici
 * client for the fixed-rate steps, autocannon for the max runs) runs in this one.
 *
 * CPUs are pinned with `taskset` when there are at least two: both gateways on CPU 0 (they are
 * loaded one at a time; the idle one only sits there); the emulator and the load generator on
 * CPU 1 (so the direct path gets no extra core either). This process's affinity (all its
 * threads) is restored afterwards. Each gateway on CPU 0 — floor, Switchyard, Portkey alike —
 * runs with `node --single-threaded-gc`, as a process confined to one CPU should
 * (gateway/single-core-gc.ts; the gateway warns without it); `--parallel-gc` runs them with V8's
 * default helper threads instead. The emulator (the upstream every path shares) keeps V8's
 * default: with the flag it served the direct path slower in these runs, which would flatter
 * every ratio to direct.
 *
 * Runs, for non-stream and stream chat: a probe of each path (200 and the expected "ok" body /
 * SSE ending in [DONE], else it throws); fixed-rate steps (`--rps`, an open-loop paced load
 * generator on undici — see `measurePaced` for why not autocannon's `overallRate`) through every
 * path, latency percentiles of each path and the ratios switchyard/direct and
 * switchyard/portkey; then a max-throughput run (autocannon, `--connections` connections, no
 * rate limit) through every path, `--rounds` times in turn (the median round and the median of
 * the per-round ratios are reported); then each gateway's RSS (now and peak); then a summary table.
 * Latencies are sub-ms: per response with performance.now() in the paced steps, from
 * autocannon's `response` event (hrtime) in the max runs — its own histogram rounds to whole ms,
 * too coarse for a 0.2 ms target. A fixed-rate step a path cannot sustain (its req/s below 90 %
 * of the step) measures queueing, not overhead; the step's row says so.
 *
 *   npx tsx bench/gateway-overhead.ts [--seconds 5] [--rps 100,500,1000,2000] [--connections 64] [--rounds 3] [--no-pin] [--parallel-gc] [--no-log] [--no-peer] [--no-floor] [--gateway-root DIR] [--compare-root DIR] [--cpu-prof DIR] [--json FILE]
 *   (defaults: about 5 min — 288 s of load, `expectedLoadSeconds`, printed first)
 *   (--rps '' skips the fixed-rate steps; --no-log runs the gateway without its request log;
 *   --no-peer leaves Portkey out; --no-floor leaves out the bare-proxy floor, `bench/floor-proxy.mjs`;
 *   --gateway-root DIR runs the Switchyard gateway of another checkout against this tree's
 *   emulator and floor, to compare two versions' ratios to the floor; --compare-root DIR adds a
 *   second Switchyard gateway from another checkout as path `compare` in the same rounds;
 *   --cpu-prof DIR writes a V8 CPU profile of each Switchyard gateway under DIR, for
 *   bench/cpu-profile-diff.ts;
 *   --json FILE writes the result)
 *
 * The steadiest overhead number is the gateway's CPU per request over the floor proxy's, same
 * load, same upstream (`cpuRatioToFloor`): wall-clock rates on a shared machine swing 2×, the CPU
 * a request costs far less.
 *
 * The 100 req/s step is there for the peer: on a 2-core machine Portkey saturates at a few
 * hundred req/s, so its latency at the higher steps is queueing (flagged as saturated).
 *
 * `npm run bench` (bench/all.bench.ts) runs a short version (2 s per run, steps 100 and
 * 1000 req/s). These numbers are NOT part of `npm run bench:check` / bench/baseline.json: on a
 * shared 2-core machine they move by tens of percent between runs, too noisy for a CI gate.
 * Numbers depend on the machine and on what else runs on it; compare runs on one machine, and
 * distrust a run on a shared, loaded one (the load average is printed before and after).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { measure, measurePaced, probe, type PathRun } from './load-runs.ts';
import { median, writeSummary } from './overhead-summary.ts';
import { hashKey } from '../gateway/callers.ts';
import { SINGLE_THREADED_GC_FLAG } from '../gateway/single-core-gc.ts';
import { peerHeaders, startPeerGateway, type PeerGateway } from './peer-gateway.ts';

export type { PathRun } from './load-runs.ts';

const root = join(import.meta.dirname, '..');
const KEY = 'sk-bench';

/** Options of `runGatewayOverhead`. */
export interface GatewayOverheadOptions {
  /** Seconds per measured run (each fixed-rate step and each max run, per path). */
  seconds: number;
  /** Fixed-rate steps in requests per second; empty: none. */
  rpsSteps: readonly number[];
  /** Connections of the max-throughput run. */
  maxConnections: number;
  /**
   * Max-throughput rounds, a positive odd number (default 1): each round runs every path once, in turn, so a ratio is
   * taken within one round; a path's reported run is its median round and each ratio the median
   * of the per-round ratios (on a noisy shared machine one round's ratio moves by ±20 %).
   */
  maxRounds?: number;
  /** Pin with taskset (ignored with fewer than 2 CPUs or no taskset). */
  pin: boolean;
  /**
   * Pinned gateways keep V8's parallel and concurrent GC helper threads (default false: they run
   * with `--single-threaded-gc`, see gateway/single-core-gc.ts; the emulator never does). No
   * effect unpinned.
   */
  parallelGc?: boolean;
  /** Switchyard's request log on (DuckDB in a worker thread). */
  requestLog: boolean;
  /** Include the Portkey path. */
  peer: boolean;
  /**
   * Include the floor path (default true): a bare uWS → undici proxy on CPU 0 with nothing else
   * (`bench/floor-proxy.mjs`), what any gateway on this stack pays on this machine.
   */
  floor?: boolean;
  /**
   * The source tree whose `bin/switchyard.mjs` runs the Switchyard gateway (default: this one).
   * The emulator, the floor and the load generator always come from this tree, so two trees'
   * gateways are measured against the same upstream and the same floor.
   */
  gatewayRoot?: string;
  /**
   * A second Switchyard gateway, from this checkout (`--compare-root`), measured as path
   * `compare` in the same rounds and steps, right after `switchyard`: two versions under the
   * same background load, their CPU per request compared within each round (`cpuRatioToCompare`).
   */
  compareRoot?: string;
  /**
   * Write a V8 CPU profile of each Switchyard gateway (`switchyard`, and `compare` when on) into
   * `<cpuProfDir>/switchyard` and `<cpuProfDir>/compare` (node `--cpu-prof`, written when the
   * gateway exits at the end of the run). Profiling slows the gateways: take CPU ratios from a
   * run without it.
   */
  cpuProfDir?: string;
  /** Where the tables go (default: stdout). */
  write?: (text: string) => void;
}

/** Paths measured: straight to the emulator, through Switchyard, through Portkey. */
export type PathName = 'direct' | 'floor' | 'switchyard' | 'portkey' | 'compare';

/** Everything `runGatewayOverhead` measured, per case (`non-stream`, `stream`). */
export interface GatewayOverheadResult {
  cases: Array<{
    case: 'non-stream' | 'stream';
    /** One entry per fixed-rate step; `byPath` lacks `portkey` when the peer is off. */
    steps: Array<{
      rateRps: number;
      byPath: Partial<Record<PathName, PathRun>>;
      /** Gateway CPU per request, switchyard/floor, at this fixed rate; null without the floor. */
      cpuRatioToFloor: number | null;
    }>;
    /** Each path's median max-throughput round. */
    max: Partial<Record<PathName, PathRun>>;
    /**
     * Medians over rounds of max req/s ratios taken within a round: switchyard/direct,
     * switchyard/portkey, switchyard/floor, and floor/direct (how close to direct the bare stack
     * itself gets).
     */
    maxRatio: { direct: number; portkey: number | null; floor: number | null; floorToDirect: number | null };
    /**
     * Median over rounds of the gateway-process CPU per request, switchyard/floor, in the max runs
     * (same load, same upstream, taken within a round); null without the floor. CPU time moves far
     * less than wall-clock rates on a shared machine, so this is the steadier overhead measure.
     */
    cpuRatioToFloor: number | null;
    /** Median over max rounds of gateway CPU per request, compare/floor; null without both. */
    compareCpuRatioToFloor: number | null;
    /** Median over max rounds of gateway CPU per request, switchyard/compare; null without `compare`. */
    cpuRatioToCompare: number | null;
  }>;
  /** Resident set size of each gateway process at the end, MB (1 MB = 2^20 bytes): now and peak (VmHWM). */
  rssMb: Partial<Record<'switchyard' | 'portkey', { nowMb: number; peakMb: number }>>;
  /** 1-minute load average before and after. */
  loadAvg1: { before: number; after: number };
  pinned: boolean;
}

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Starts `switchyard <args>` (pinned to `cpu` when given) and resolves with the URL it prints. */
function startCli(args: string[], cpu: number | null, nodeFlags: readonly string[], tree = root): Promise<{ child: ChildProcess; url: string }> {
  return startNode([join(tree, 'bin/switchyard.mjs'), ...args], cpu, nodeFlags, tree);
}

/** Starts `node <nodeFlags> <args>` (pinned to `cpu` when given) and resolves with the `on http://…` URL it prints. */
function startNode(args: string[], cpu: number | null, nodeFlags: readonly string[], cwd = root): Promise<{ child: ChildProcess; url: string }> {
  const node = [process.execPath, ...nodeFlags, ...args];
  const child = cpu === null ? spawn(node[0]!, node.slice(1), { cwd, stdio: ['ignore', 'pipe', 'inherit'] }) : spawn('taskset', ['-c', String(cpu), ...node], { cwd, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /on (http:\/\/[^\s]+?)(\/v1)?[\s(]/.exec(out);
      if (m) resolve({ child, url: m[1]! });
    });
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}: ${out}`)));
  });
}

/** SIGTERM/SIGINT `child` and wait for it to exit (SIGKILL after `graceMs`). */
async function stopChild(child: ChildProcess, signal: NodeJS.Signals, graceMs = 5000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill(signal);
  const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(t);
}

/**
 * Seconds of load the run generates, from its options: for each of the two cases (non-stream,
 * stream) and each path (direct, switchyard, and floor and peer when on) a 1 s warm-up, one run
 * per fixed-rate step and one per max-throughput round, `seconds` each. Server start-up and
 * probes add a few seconds more. Defaults (5 s, 4 steps, 3 rounds, 4 paths): 288 s.
 */
export function expectedLoadSeconds(opts: Pick<GatewayOverheadOptions, 'seconds' | 'rpsSteps' | 'maxRounds' | 'peer' | 'floor'>): number {
  const paths = 2 + (opts.peer ? 1 : 0) + ((opts.floor ?? true) ? 1 : 0);
  return 2 * paths * (1 + (opts.rpsSteps.length + (opts.maxRounds ?? 1)) * opts.seconds);
}

function rssOf(pid: number): { nowMb: number; peakMb: number } {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)?.[1] ?? NaN);
  return { nowMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024 };
}

/**
 * Runs the benchmark (see the file's docstring), printing the tables through `opts.write` as it
 * goes, and returns the numbers. Starts and always stops its own emulator and gateways.
 * @throws Error when a server does not start or a probe request gets a wrong answer.
 */
export async function runGatewayOverhead(opts: GatewayOverheadOptions): Promise<GatewayOverheadResult> {
  const write = opts.write ?? ((t: string) => void process.stdout.write(t));
  const rounds = opts.maxRounds ?? 1;
  // An odd count has a median round, so each path's reported run and its ratios agree.
  if (!Number.isInteger(rounds) || rounds < 1 || rounds % 2 === 0) throw new Error(`maxRounds (--rounds) must be a positive odd integer, got ${opts.maxRounds}`);
  const pin = opts.pin && cpus().length >= 2 && hasTaskset();
  let savedMask: string | null = null;
  if (pin) {
    savedMask = /:\s*([0-9a-f]+)\s*$/i.exec(execFileSync('taskset', ['-p', String(process.pid)], { encoding: 'utf8' }))?.[1] ?? null;
    // -a: every thread of this process (V8's helpers too), not only the main one.
    execFileSync('taskset', ['-a', '-cp', '1', String(process.pid)], { stdio: 'ignore' });
  }
  const nodeFlags = pin && !opts.parallelGc ? [SINGLE_THREADED_GC_FLAG] : [];
  const loadBefore = loadavg()[0]!;
  const expectedS = expectedLoadSeconds(opts);
  write(`gateway overhead: expect about ${expectedS >= 120 ? `${Math.round(expectedS / 60)} min` : `${expectedS} s`} (${expectedS} s of load plus start-up; --seconds, --rps and --rounds set it)\n`);
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-'));
  let emu: { child: ChildProcess; url: string } | undefined;
  let gw: { child: ChildProcess; url: string } | undefined;
  let peer: PeerGateway | undefined;
  let floor: { child: ChildProcess; url: string } | undefined;
  let cmp: { child: ChildProcess; url: string } | undefined;
  const result: GatewayOverheadResult = { cases: [], rssMb: {}, loadAvg1: { before: loadBefore, after: Number.NaN }, pinned: pin };
  try {
    emu = await startCli(['emulate', '--port', '0', '--mode', 'echo'], pin ? 1 : null, []);
    writeFileSync(join(dir, 'models.yaml'), `models:\n  - id: bench\n    route:\n      - base_url: ${emu.url}/v1\n`);
    writeFileSync(
      join(dir, 'gateway.yaml'),
      `server:\n  port: 0\n  admin_port: null\n  log_level: warn\n  seed: 1\nauth:\n  keys:\n    - id: bench\n      sha256: ${hashKey(KEY)}\n${opts.requestLog ? `request_log:\n  path: ${join(dir, 'requests.duckdb')}\n` : ''}`,
    );
    const profFlags = (name: PathName) => (opts.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${join(opts.cpuProfDir, name)}`] : []);
    gw = await startCli(['gateway', '--config', dir], pin ? 0 : null, [...nodeFlags, ...profFlags('switchyard')], opts.gatewayRoot ?? root);
    if (opts.compareRoot) {
      const cdir = join(dir, 'compare');
      mkdirSync(cdir);
      writeFileSync(join(cdir, 'models.yaml'), readFileSync(join(dir, 'models.yaml')));
      writeFileSync(join(cdir, 'gateway.yaml'), readFileSync(join(dir, 'gateway.yaml'), 'utf8').replace(join(dir, 'requests.duckdb'), join(cdir, 'requests.duckdb')));
      cmp = await startCli(['gateway', '--config', cdir], pin ? 0 : null, [...nodeFlags, ...profFlags('compare')], opts.compareRoot);
    }
    if (opts.peer) peer = await startPeerGateway({ cpu: pin ? 0 : null, nodeFlags });
    if (opts.floor ?? true) floor = await startNode([join(root, 'bench/floor-proxy.mjs'), emu.url], pin ? 0 : null, nodeFlags);

    const f = (x: number) => x.toFixed(3).padStart(8);
    write(
      `gateway overhead — ${opts.seconds} s per run, fixed-rate steps ${opts.rpsSteps.join('/') || 'none'} req/s, max run ${opts.maxConnections} connections; ` +
        `${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), load average ${loadBefore.toFixed(2)}, ${pin ? `pinned: gateways CPU 0, emulator + load generator CPU 1; gateways' GC ${nodeFlags.length > 0 ? `on their JS thread (${SINGLE_THREADED_GC_FLAG})` : "with V8's helper threads"}` : 'NOT pinned'}; ` +
        `request log ${opts.requestLog ? 'on' : 'off'}; gateway from ${opts.gatewayRoot ?? root}${cmp ? `, compare gateway from ${opts.compareRoot}` : ''}; peer ${peer ? 'Portkey @portkey-ai/gateway' : 'off'}; floor ${floor ? 'bare uWS → undici proxy' : 'off'}\n\n`,
    );
    write('case        load        path         req/s    p50 ms   p90 ms   p99 ms p99.9 ms   bad\n');
    const line = (c: string, load: string, path: string, m: PathRun, note = '') =>
      write(`${c.padEnd(11)} ${load.padEnd(11)} ${path.padEnd(11)} ${m.rps.toFixed(0).padStart(6)} ${f(m.p50Ms)} ${f(m.p90Ms)} ${f(m.p99Ms)} ${f(m.p999Ms)} ${String(m.bad).padStart(5)}${note}\n`);
    const ratio = (a: number | undefined, b: number | undefined) => (a !== undefined && b !== undefined && b > 0 ? `×${(a / b).toFixed(2)}` : '—');

    for (const stream of [false, true]) {
      const c = stream ? 'stream' : 'non-stream';
      const body = JSON.stringify({ model: 'bench', stream, messages: [{ role: 'user', content: 'Say ok.' }], max_tokens: 1 });
      const base = { 'content-type': 'application/json', authorization: `Bearer ${KEY}` };
      const targets: Array<[PathName, string, Record<string, string>]> = [
        ['direct', `${emu.url}/v1/chat/completions`, base],
        ...(floor ? ([['floor', `${floor.url}/v1/chat/completions`, base]] as Array<[PathName, string, Record<string, string>]>) : []),
        ['switchyard', `${gw.url}/v1/chat/completions`, base],
        ...(cmp ? ([['compare', `${cmp.url}/v1/chat/completions`, base]] as Array<[PathName, string, Record<string, string>]>) : []),
      ];
      if (peer) targets.push(['portkey', `${peer.url}/v1/chat/completions`, { ...base, ...peerHeaders(`${emu.url}/v1`) }]);
      for (const [name, url, headers] of targets) await probe(name, url, headers, body, stream);
      // The gateway process of each path (taskset execs node, so the child's pid is node's).
      const pidOf: Partial<Record<PathName, number | null>> = { direct: null, floor: floor?.child.pid ?? null, switchyard: gw.child.pid ?? null, portkey: peer?.child.pid ?? null, compare: cmp?.child.pid ?? null };
      // Warm up (JIT, pools) every path.
      for (const [, url, headers] of targets) await measure(url, headers, body, { connections: 16, seconds: 1 });
      const steps: GatewayOverheadResult['cases'][number]['steps'] = [];
      for (const rateRps of opts.rpsSteps) {
        const byPath: Partial<Record<PathName, PathRun>> = {};
        for (const [name, url, headers] of targets) {
          const m = await measurePaced(url, headers, body, { rateRps, connections: Math.min(64, rateRps), seconds: opts.seconds, pid: pidOf[name] ?? null });
          byPath[name] = m;
          line(c, `${rateRps}/s`, name, m, (m.rps < 0.9 * rateRps ? `  (saturated: ${m.rps.toFixed(0)} < ${rateRps} req/s — latency is queueing)` : '') + (m.cpuUsPerRequest !== null ? `  gateway CPU ${m.cpuUsPerRequest.toFixed(0)} µs/request` : ''));
        }
        const stepCpu = byPath.floor?.cpuUsPerRequest && byPath.switchyard?.cpuUsPerRequest ? byPath.switchyard.cpuUsPerRequest / byPath.floor.cpuUsPerRequest : null;
        steps.push({ rateRps, byPath, cpuRatioToFloor: stepCpu });
        if (stepCpu !== null) write(`${''.padEnd(24)}gateway CPU per request at ${rateRps}/s: switchyard/floor ×${stepCpu.toFixed(2)}\n`);
        const cs = byPath.compare?.cpuUsPerRequest;
        if (cs && byPath.switchyard?.cpuUsPerRequest) write(`${''.padEnd(24)}gateway CPU per request at ${rateRps}/s: switchyard/compare ×${(byPath.switchyard.cpuUsPerRequest / cs).toFixed(2)}${byPath.floor?.cpuUsPerRequest ? `, compare/floor ×${(cs / byPath.floor.cpuUsPerRequest).toFixed(2)}` : ''}\n`);
        const d = byPath.direct!;
        const s = byPath.switchyard!;
        const p = byPath.portkey;
        const fl = byPath.floor;
        if (fl) write(`${''.padEnd(24)}the floor (bare proxy) adds p50 +${(fl.p50Ms - d.p50Ms).toFixed(3)} ms, p99 +${(fl.p99Ms - d.p99Ms).toFixed(3)} ms\n`);
        write(
          `${''.padEnd(24)}switchyard adds p50 +${(s.p50Ms - d.p50Ms).toFixed(3)} ms, p99 +${(s.p99Ms - d.p99Ms).toFixed(3)} ms; ` +
            `switchyard/direct p50 ${ratio(s.p50Ms, d.p50Ms)} p99 ${ratio(s.p99Ms, d.p99Ms)}` +
            (p ? `; switchyard/portkey p50 ${ratio(s.p50Ms, p.p50Ms)} p99 ${ratio(s.p99Ms, p.p99Ms)}` : '') +
            '\n',
        );
      }
      const roundsN = opts.maxRounds ?? 1;
      const rounds: Array<Partial<Record<PathName, PathRun>>> = [];
      for (let r = 0; r < roundsN; r++) {
        const one: Partial<Record<PathName, PathRun>> = {};
        for (const [name, url, headers] of targets) one[name] = await measure(url, headers, body, { connections: opts.maxConnections, seconds: opts.seconds, pid: pidOf[name] });
        rounds.push(one);
      }
      const max: Partial<Record<PathName, PathRun>> = {};
      for (const [name] of targets) {
        const runs = rounds.map((x) => x[name]!).sort((a, b) => a.rps - b.rps);
        max[name] = runs[runs.length >> 1]!;
        const cpu = max[name]!.cpuUsPerRequest;
        line(c, 'max', name, max[name]!, (roundsN > 1 ? `  (median of ${roundsN} rounds: ${rounds.map((x) => x[name]!.rps.toFixed(0)).join(', ')} req/s)` : '') + (cpu !== null ? `  gateway CPU ${cpu.toFixed(0)} µs/request` : ''));
      }
      const medianRatio = (other: PathName): number => median(rounds.map((x) => x.switchyard!.rps / x[other]!.rps));
      const maxRatio = {
        direct: medianRatio('direct'),
        portkey: peer ? medianRatio('portkey') : null,
        floor: floor ? medianRatio('floor') : null,
        floorToDirect: floor ? median(rounds.map((x) => x.floor!.rps / x.direct!.rps)) : null,
      };
      const cpuRatios = floor ? rounds.map((x) => (x.switchyard!.cpuUsPerRequest ?? Number.NaN) / (x.floor!.cpuUsPerRequest ?? Number.NaN)) : [];
      const cpuRatioToFloor = floor ? median(cpuRatios) : null;
      const rr = (x: number) => `×${x.toFixed(2)}`;
      write(
        `${''.padEnd(24)}max req/s: switchyard/direct ${rr(maxRatio.direct)}${maxRatio.portkey !== null ? `, switchyard/portkey ${rr(maxRatio.portkey)}` : ''}${maxRatio.floor !== null ? `, switchyard/floor ${rr(maxRatio.floor)}` : ''}${maxRatio.floorToDirect !== null ? `, floor/direct ${rr(maxRatio.floorToDirect)}` : ''}` +
          `${roundsN > 1 ? ` (median of the per-round ratios to direct: ${rounds.map((x) => (x.switchyard!.rps / x.direct!.rps).toFixed(2)).join(', ')})` : ''}\n`,
      );
      if (cpuRatioToFloor !== null) write(`${''.padEnd(24)}gateway CPU per request: switchyard/floor ${rr(cpuRatioToFloor)}${roundsN > 1 ? ` (median of the per-round ratios: ${cpuRatios.map((x) => x.toFixed(2)).join(', ')})` : ''}\n`);
      const cpuOf = (x: Partial<Record<PathName, PathRun>>, p: PathName) => x[p]?.cpuUsPerRequest ?? Number.NaN;
      const cmpFloor = cmp && floor ? rounds.map((x) => cpuOf(x, 'compare') / cpuOf(x, 'floor')) : [];
      const syCmp = cmp ? rounds.map((x) => cpuOf(x, 'switchyard') / cpuOf(x, 'compare')) : [];
      const compareCpuRatioToFloor = cmp && floor ? median(cmpFloor) : null;
      const cpuRatioToCompare = cmp ? median(syCmp) : null;
      if (cpuRatioToCompare !== null) {
        write(
          `${''.padEnd(24)}gateway CPU per request: switchyard/compare ${rr(cpuRatioToCompare)} (rounds: ${syCmp.map((x) => x.toFixed(2)).join(', ')})` +
            `${compareCpuRatioToFloor !== null ? `, compare/floor ${rr(compareCpuRatioToFloor)} (rounds: ${cmpFloor.map((x) => x.toFixed(2)).join(', ')})` : ''}\n`,
        );
      }
      result.cases.push({ case: c, steps, max, maxRatio, cpuRatioToFloor, compareCpuRatioToFloor, cpuRatioToCompare });
    }
    result.rssMb.switchyard = rssOf(gw.child.pid!);
    if (peer) result.rssMb.portkey = rssOf(peer.child.pid!);
    result.loadAvg1.after = loadavg()[0]!;
    write('\n');
    for (const [name, m] of Object.entries(result.rssMb)) write(`${name} RSS: ${m.nowMb.toFixed(0)} MB now, ${m.peakMb.toFixed(0)} MB peak${name === 'switchyard' ? ` (request log ${opts.requestLog ? 'on' : 'off'})` : ''}\n`);
    writeSummary(result, write);
    write(`load average after: ${result.loadAvg1.after.toFixed(2)}\n`);
    return result;
  } finally {
    await Promise.all([peer?.stop(), floor && stopChild(floor.child, 'SIGTERM'), cmp && stopChild(cmp.child, 'SIGTERM'), gw && stopChild(gw.child, 'SIGTERM'), emu && stopChild(emu.child, 'SIGINT')]);
    rmSync(dir, { recursive: true, force: true });
    if (savedMask !== null) execFileSync('taskset', ['-a', '-p', savedMask, String(process.pid)], { stdio: 'ignore' });
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === import.meta.filename) {
  const { values } = parseArgs({
    options: {
      seconds: { type: 'string', default: '5' },
      rps: { type: 'string', default: '100,500,1000,2000' },
      connections: { type: 'string', default: '64' },
      rounds: { type: 'string', default: '3' },
      'no-pin': { type: 'boolean', default: false },
      'parallel-gc': { type: 'boolean', default: false },
      'no-log': { type: 'boolean', default: false },
      'no-peer': { type: 'boolean', default: false },
      'no-floor': { type: 'boolean', default: false },
      'gateway-root': { type: 'string' },
      'compare-root': { type: 'string' },
      'cpu-prof': { type: 'string' },
      json: { type: 'string' },
    },
  });
  const rounds = Number(values.rounds);
  if (!Number.isInteger(rounds) || rounds < 1 || rounds % 2 === 0) {
    process.stderr.write(`gateway-overhead: --rounds must be a positive odd integer (the median round is reported), got '${values.rounds}'\n`);
    process.exit(2);
  }
  const result = await runGatewayOverhead({
    seconds: Number(values.seconds),
    rpsSteps: values.rps === '' ? [] : values.rps.split(',').map(Number),
    maxConnections: Number(values.connections),
    maxRounds: rounds,
    pin: !values['no-pin'],
    parallelGc: values['parallel-gc'],
    requestLog: !values['no-log'],
    peer: !values['no-peer'],
    floor: !values['no-floor'],
    ...(values['gateway-root'] && { gatewayRoot: resolve(values['gateway-root']) }),
    ...(values['compare-root'] && { compareRoot: resolve(values['compare-root']) }),
    ...(values['cpu-prof'] && { cpuProfDir: resolve(values['cpu-prof']) }),
  });
  if (values.json) writeFileSync(values.json, JSON.stringify(result, null, 2));
}

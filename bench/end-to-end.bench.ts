/**
 * End-to-end simulator speed: the default experiment (`npm start`) and a 16-run sweep of it
 * (bench/sweep-16.yaml), three ways per repetition, one after the other:
 * - in-loop, cold: a fresh child process reads the trace, then times each cell's replay once
 *   (`runCell`, rows kept in memory, nothing written): the replay loop on code that has not yet
 *   been compiled by the JIT, as `switchyard sim` runs it;
 * - in-loop, warm: the same replays in this process after one untimed replay of the first cell
 *   (and, from the second repetition on, after every earlier one), on optimised code;
 * - end to end: `switchyard sim` as a child process with its default --jobs (start-up, bundle,
 *   trace, DuckDB tables and all), with `SWITCHYARD_PHASES=1` (simulator/phase-clock.ts) so its
 *   wall time splits into start-up (spawn until the trace is read), replay, and tail (replay done
 *   until exit: summaries, DuckDB close, exit);
 * - end to end, `--store summary`: the same command keeping only the runs and their summaries
 *   (what `switchyard plan` stores), to show how much of the gap the row tables are.
 * Each line gives simulated requests per wall-clock second and CPU seconds (user + system, every
 * thread) of each, end to end over each in-loop rate, and the real-time factor (simulated
 * duration / wall time) of each. On a shared machine wall times swing with the neighbours' load;
 * the CPU seconds, and ratios of runs made close together, swing less. After the repetitions one
 * line per case gives the range of each ratio. Prints JSON lines; also run by `npm run bench:sim`.
 *
 *   npx tsx bench/end-to-end.bench.ts [reps] [default|sweep-16]
 */
import { execFileSync } from 'node:child_process';
import { join, relative } from 'node:path';
import { loadExperiment } from '../simulator/experiment.ts';
import { expandGrid } from '../simulator/sweep/grid.ts';
import { runCell, TraceCache } from '../simulator/sweep/cell-runner.ts';
import { runPhases } from './end-to-end-phases.ts';

const root = join(import.meta.dirname, '..');

/** Replays of every cell of an experiment in one process: summed wall and CPU seconds, requests and simulated ms. */
interface LoopTimes {
  wallS: number;
  cpuS: number;
  requests: number;
  simulatedMs: number;
}

/** CPU seconds (user + system, every thread) of this process so far. */
function cpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/** Times one replay of each cell of `file` in this process (trace read first, untimed). */
async function loopOnce(file: string, cache: TraceCache): Promise<LoopTimes> {
  const exp = loadExperiment(file);
  const cells = expandGrid(exp, exp.seed);
  await cache.get(exp.tracePath);
  const t: LoopTimes = { wallS: 0, cpuS: 0, requests: 0, simulatedMs: 0 };
  for (const cell of cells) {
    const cpu0 = cpuSeconds();
    const out = await runCell(cell, cache);
    t.cpuS += cpuSeconds() - cpu0;
    t.wallS += out.wallSeconds;
    t.requests += out.requestCount;
    t.simulatedMs += out.result.durationMs;
  }
  return t;
}

/** `loopOnce` in a fresh child process (through tsx): the first replays of a process. */
function loopOnceCold(file: string): LoopTimes {
  const stdout = execFileSync(process.execPath, ['--import', 'tsx', import.meta.filename, '--loop-once', file], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as LoopTimes;
}

const round = (x: number, digits: number) => Number(x.toFixed(digits));

/** One rate and its costs, as printed. */
function rate(requests: number, simulatedMs: number, wallS: number, cpuS: number) {
  return {
    wallS: round(wallS, 3),
    cpuS: round(cpuS, 3),
    requestsPerS: Math.round(requests / wallS),
    realTimeFactor: Math.round(simulatedMs / 1000 / wallS),
  };
}

/** The measurements of one repetition (returned for the closing ranges). */
interface Rep {
  overWarm: number;
  overCold: number;
  cpuOverWarm: number;
  summaryOverWarm: number;
}

/**
 * `reps` repetitions of `file` cold in-loop, warm in-loop and end to end; prints one JSON line
 * per repetition and a closing line with the ranges of the ratios.
 */
async function endToEnd(name: string, file: string, reps: number): Promise<void> {
  const exp = loadExperiment(file);
  const cells = expandGrid(exp, exp.seed);
  const cache = new TraceCache();
  await cache.get(exp.tracePath);
  // The untimed warm-up: one replay of the first cell, so the first warm repetition runs optimised code.
  await runCell(cells[0]!, cache);
  const seen: Rep[] = [];
  for (let rep = 0; rep < reps; rep++) {
    const cold = loopOnceCold(file);
    const warm = await loopOnce(file, cache);
    const p = runPhases(file);
    const e2eS = p.main.exit! / 1000;
    const e2eCpuS = (p.cpuMs.exiting ?? p.cpuMs.printed!) / 1000;
    const ps = runPhases(file, ['--store', 'summary']);
    const summaryS = ps.main.exit! / 1000;
    const summaryCpuS = (ps.cpuMs.exiting ?? ps.cpuMs.printed!) / 1000;
    const requests = warm.requests;
    const r = {
      overWarm: requests / e2eS / (requests / warm.wallS),
      overCold: requests / e2eS / (requests / cold.wallS),
      cpuOverWarm: warm.cpuS / e2eCpuS,
      summaryOverWarm: warm.wallS / summaryS,
    };
    seen.push(r);
    console.log(
      JSON.stringify({
        bench: `simulator/${name}`,
        experiment: relative(root, file),
        rep,
        cells: cells.length,
        requests,
        simulatedS: Math.round(warm.simulatedMs / 1000),
        inLoopCold: rate(requests, cold.simulatedMs, cold.wallS, cold.cpuS),
        inLoopWarm: rate(requests, warm.simulatedMs, warm.wallS, warm.cpuS),
        endToEnd: {
          ...rate(requests, warm.simulatedMs, e2eS, e2eCpuS),
          startupS: round(p.main.trace! / 1000, 3),
          replayS: round((p.main.replayed! - p.main.trace!) / 1000, 3),
          tailS: round((p.main.exit! - p.main.replayed!) / 1000, 3),
        },
        endToEndStoreSummary: rate(requests, warm.simulatedMs, summaryS, summaryCpuS),
        endToEndOverInLoopWarm: round(r.overWarm, 2),
        endToEndOverInLoopCold: round(r.overCold, 2),
        // The same ratio in CPU time (in-loop CPU / end-to-end CPU): less sensitive to neighbours.
        endToEndOverInLoopWarmCpu: round(r.cpuOverWarm, 2),
        endToEndStoreSummaryOverInLoopWarm: round(r.summaryOverWarm, 2),
      }),
    );
  }
  const range = (xs: number[]) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`;
  console.log(
    JSON.stringify({
      bench: `simulator/${name}`,
      reps,
      endToEndOverInLoopWarm: range(seen.map((s) => s.overWarm)),
      endToEndOverInLoopCold: range(seen.map((s) => s.overCold)),
      endToEndOverInLoopWarmCpu: range(seen.map((s) => s.cpuOverWarm)),
      endToEndStoreSummaryOverInLoopWarm: range(seen.map((s) => s.summaryOverWarm)),
    }),
  );
}

/**
 * Both cases (or only `only`: 'default' or 'sweep-16'), `reps` times each;
 * `npx tsx bench/end-to-end.bench.ts [reps] [default|sweep-16]` runs them alone.
 */
export async function runEndToEnd(reps: number, only?: string): Promise<void> {
  if (only === undefined || only === 'default') await endToEnd('default', join(root, 'experiments', 'default.yaml'), reps);
  if (only === undefined || only === 'sweep-16') await endToEnd('sweep-16', join(root, 'bench', 'sweep-16.yaml'), reps);
}

if (process.argv[1] !== undefined && import.meta.filename === process.argv[1]) {
  if (process.argv[2] === '--loop-once') console.log(JSON.stringify(await loopOnce(process.argv[3]!, new TraceCache())));
  else await runEndToEnd(Number(process.argv[2] ?? 3), process.argv[3]);
}

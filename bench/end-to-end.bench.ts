/**
 * End-to-end simulator speed: the default experiment (`npm start`) and a 16-run sweep of it
 * (bench/sweep-16.yaml), each in-loop (every cell's replay timed in this process, from rows
 * already parsed) and end to end (`switchyard sim` as a child process with its default --jobs:
 * start-up, bundle, trace, DuckDB tables and all), alternating, with the rates' ratio and the
 * real-time factor (simulated duration / wall time) of each. Prints one JSON line per repetition.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { loadExperiment } from '../simulator/experiment.ts';
import { expandGrid } from '../simulator/sweep/grid.ts';
import { runCell, TraceCache } from '../simulator/sweep/cell-runner.ts';

const root = join(import.meta.dirname, '..');
const out = mkdtempSync(join(tmpdir(), 'switchyard-bench-e2e-'));

/**
 * An experiment in-loop (each cell's replay timed in this process, from rows already parsed) and
 * end to end (`switchyard sim` as a child process with its default --jobs: start-up, bundle,
 * trace, DuckDB tables and all), one after the other, `reps` times alternating; prints one line
 * per repetition with both rates, their ratio and the real-time factors.
 */
async function endToEnd(name: string, file: string, reps: number): Promise<void> {
  const exp = loadExperiment(file);
  const cells = expandGrid(exp, exp.seed);
  const cache = new TraceCache();
  await cache.get(exp.tracePath);
  for (let rep = 0; rep < reps; rep++) {
    let requests = 0;
    let loopS = 0;
    let simulatedMs = 0;
    for (const cell of cells) {
      const out = await runCell(cell, cache);
      requests += out.requestCount;
      loopS += out.wallSeconds;
      simulatedMs += out.result.durationMs;
    }
    const t0 = performance.now();
    execFileSync(process.execPath, [join(root, 'bin', 'switchyard.mjs'), 'sim', file, '--no-progress', '--output', join(out, `${name}.duckdb`)], { stdio: 'ignore' });
    const e2eS = (performance.now() - t0) / 1000;
    const inLoop = requests / loopS;
    const endToEndRate = requests / e2eS;
    console.log(
      JSON.stringify({
        bench: `simulator/${name}`,
        experiment: relative(root, file),
        rep,
        cells: cells.length,
        requests,
        inLoopWallS: Number(loopS.toFixed(3)),
        endToEndWallS: Number(e2eS.toFixed(3)),
        inLoopRequestsPerS: Math.round(inLoop),
        endToEndRequestsPerS: Math.round(endToEndRate),
        endToEndOverInLoop: Number((endToEndRate / inLoop).toFixed(2)),
        inLoopRealTimeFactor: Math.round(simulatedMs / 1000 / loopS),
        endToEndRealTimeFactor: Math.round(simulatedMs / 1000 / e2eS),
      }),
    );
  }
}

/**
 * Both cases (or only `only`: 'default' or 'sweep-16'), `reps` times each;
 * `npx tsx bench/end-to-end.bench.ts [reps] [default|sweep-16]` runs them alone.
 */
export async function runEndToEnd(reps: number, only?: string): Promise<void> {
  if (only === undefined || only === 'default') await endToEnd('default', join(root, 'experiments', 'default.yaml'), reps);
  if (only === undefined || only === 'sweep-16') await endToEnd('sweep-16', join(root, 'bench', 'sweep-16.yaml'), reps);
}

if (process.argv[1] !== undefined && import.meta.filename === process.argv[1]) await runEndToEnd(Number(process.argv[2] ?? 3), process.argv[3]);

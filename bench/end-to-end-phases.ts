/**
 * Where the wall time of one `switchyard sim` run goes: runs the CLI as a child process (its
 * default --jobs, from the bundle) with `SWITCHYARD_PHASES=1` (simulator/phase-clock.ts) and
 * prints, per repetition, the ms from spawn to each main-thread phase (module load, config,
 * validation, trace, replay, summaries, close, exit), the process's CPU ms at each, and the results thread's time in each
 * operation (sum over its calls) and after the replay ended.
 * `npx tsx bench/end-to-end-phases.ts [experiment.yaml] [reps]` (default: experiments/default.yaml, 3).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const root = join(import.meta.dirname, '..');

/**
 * One run's phases: ms after spawn for the main thread, summed ms per results-thread operation.
 * `extraArgs` are added to the `sim` command line (e.g. `['--store', 'summary']`).
 */
export function runPhases(file: string, extraArgs: readonly string[] = []): { main: Record<string, number>; cpuMs: Record<string, number>; results: Record<string, number>; afterReplayMs: Record<string, number> } {
  const out = mkdtempSync(join(tmpdir(), 'switchyard-bench-phases-'));
  const t0 = performance.timeOrigin + performance.now();
  const child = spawnSync(process.execPath, [join(root, 'bin', 'switchyard.mjs'), 'sim', file, '--no-progress', '--output', join(out, 'out.duckdb'), ...extraArgs], {
    env: { ...process.env, SWITCHYARD_PHASES: '1' },
    encoding: 'utf8',
  });
  const exitMs = performance.timeOrigin + performance.now() - t0;
  rmSync(out, { recursive: true, force: true });
  if (child.status !== 0) throw new Error(`sim failed (${child.status}): ${child.stderr}`);
  const main: Record<string, number> = {};
  const cpuMs: Record<string, number> = {};
  const results: Record<string, number> = {};
  const afterReplayMs: Record<string, number> = {};
  const open = new Map<string, number>();
  const lines = child.stderr.split('\n').filter((l) => l.startsWith('phase '));
  let replayedAt = Infinity;
  for (const l of lines) {
    const [, thread, name, at] = l.split(' ');
    if (thread === 'main' && name === 'replayed') replayedAt = Number(at);
  }
  for (const l of lines) {
    const [, thread, name, atText, cpuText] = l.split(' ') as [string, string, string, string, string];
    const at = Number(atText);
    if (thread === 'main') {
      main[name] = Math.round(at - t0);
      cpuMs[name] = Number(cpuText);
    }
    else if (name.endsWith('-start')) open.set(name.slice(0, -6), at);
    else if (name.endsWith('-end')) {
      const op = name.slice(0, -4);
      const began = open.get(op)!;
      results[op] = Math.round((results[op] ?? 0) + at - began);
      const after = at - Math.max(began, replayedAt);
      if (after > 0) afterReplayMs[op] = Math.round((afterReplayMs[op] ?? 0) + after);
    } else results[name] = Math.round(at - t0);
  }
  main.exit = Math.round(exitMs);
  return { main, cpuMs, results, afterReplayMs };
}

if (process.argv[1] !== undefined && import.meta.filename === process.argv[1]) {
  const file = process.argv[2] ?? join(root, 'experiments', 'default.yaml');
  const reps = Number(process.argv[3] ?? 3);
  for (let rep = 0; rep < reps; rep++) console.log(JSON.stringify({ bench: 'simulator/phases', experiment: relative(root, file), rep, ...runPhases(file) }));
}

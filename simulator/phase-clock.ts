/**
 * Phase timestamps of a `switchyard sim` run, for the end-to-end bench (bench/end-to-end-phases.ts):
 * with `SWITCHYARD_PHASES=1` in the environment, `phase(thread, name)` writes one line
 * `phase <thread> <name> <epoch ms> <cpu ms>` to stderr (wall-clock ms since the Unix epoch,
 * fractional, so lines from the main thread and the results thread line up; CPU ms of the whole
 * process so far, user + system, every thread); otherwise it does nothing.
 * Never read by the simulation: results do not depend on it.
 */
const enabled = process.env.SWITCHYARD_PHASES === '1';
// The main thread's last line: when the event loop has emptied (worker threads gone) and exit begins.
if (enabled && (await import('node:worker_threads')).isMainThread) process.once('exit', () => phase('main', 'exiting'));

/** Records that `thread` (`main`, `results`) reached phase `name` now; a no-op unless `SWITCHYARD_PHASES=1`. */
export function phase(thread: string, name: string): void {
  if (!enabled) return;
  const cpu = process.cpuUsage();
  process.stderr.write(`phase ${thread} ${name} ${(performance.timeOrigin + performance.now()).toFixed(1)} ${((cpu.user + cpu.system) / 1000).toFixed(0)}\n`);
}

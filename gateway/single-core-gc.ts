/**
 * GC advice for a gateway confined to one CPU. V8 collects garbage with helper threads (parallel
 * scavenges, concurrent marking and sweeping); on a process that may use one CPU only (taskset,
 * a cpuset) those helpers take turns with the JS thread on the same core and
 * add thread hand-offs to every collection. Started with `node --single-threaded-gc`, V8 does
 * the same work on the JS thread. The flag has to be on node's command line: V8 aborts when it
 * is set at run time, and NODE_OPTIONS does not accept it.
 *
 * Measured (echo upstream, request log on, 64 connections, gateway pinned to one core): the
 * gateway's CPU per request in `bench/gateway-overhead.ts` max runs, interleaved with
 * `--parallel-gc`, was 178–238 µs with the flag vs 235–264 µs without; two series of /proc
 * per-thread counts gave 173–207 vs 231–265 µs and 178–227 vs 193–236 µs (5–25 % less). The
 * benchmark's max req/s moves by more than that from run to run on a shared VM.
 */

/** The flag that keeps V8's garbage collection on the JS thread. */
export const SINGLE_THREADED_GC_FLAG = '--single-threaded-gc';

/**
 * The advice to log at start, or null when there is none: the process may use one CPU
 * (`availableCpus`, e.g. `os.availableParallelism()`, which honours the affinity mask but, in
 * Node 20, not a cgroup CPU quota such as `docker --cpus=1`) and node was started without
 * `--single-threaded-gc` (`execArgv`: `process.execArgv`; V8 reads `_` and `-` alike, and
 * `--single-threaded` implies it).
 */
export function singleCoreGcAdvice(availableCpus: number, execArgv: readonly string[]): string | null {
  if (availableCpus > 1) return null;
  const flags = execArgv.map((a) => a.replaceAll('_', '-'));
  if (flags.includes(SINGLE_THREADED_GC_FLAG) || flags.includes('--single-threaded')) return null;
  return (
    `this process may use 1 CPU, and V8's garbage-collector helper threads share it with the gateway; ` +
    `start node with ${SINGLE_THREADED_GC_FLAG} (node ${SINGLE_THREADED_GC_FLAG} bin/switchyard.mjs gateway …) ` +
    `(5–25 % less CPU per request in our measurements)`
  );
}

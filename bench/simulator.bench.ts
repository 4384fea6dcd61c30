/**
 * Simulator speed on the committed Mooncake conversation trace (12,031 requests):
 * simulated requests and events per wall-clock second, and peak RSS, for 4 and 8 replicas under
 * each built-in strategy. Prints one JSON line per case; run with `npm run bench:sim`.
 */
import { join } from 'node:path';
import { readTrace } from '../traces/arrow-trace.ts';
import { replicaFactory } from '../simulator/engine/replica-config.ts';
import { ExperimentSchema } from '../simulator/experiment.ts';
import { replayRun } from '../simulator/replay.ts';
import { selectRows } from '../simulator/sim-command.ts';

const trace = join(import.meta.dirname, '..', 'traces', 'mooncake', 'conversation.arrow');
const { rows: all } = await readTrace(trace);

for (const replicas of [4, 8]) {
  for (const strategy of ['fixed', 'round_robin']) {
    const exp = {
      ...ExperimentSchema.parse({
        name: 'bench',
        trace,
        seed: 1,
        rate_scale: 0.2 * (replicas / 4),
        replicas: { count: replicas, profile: 'llama2-70b-h100-tp4' },
        runs: [{ strategy }],
        output: 'unused',
      }),
      tracePath: trace,
      file: 'bench',
    };
    const rows = selectRows(all, exp);
    const t0 = performance.now();
    const res = replayRun({
      experiment: exp,
      rows,
      run: { strategy, params: {}, label: strategy },
      runId: 'bench',
      seed: 1,
      makeReplica: replicaFactory(exp.replicas, 512),
    });
    const wallS = (performance.now() - t0) / 1000;
    console.log(
      JSON.stringify({
        bench: 'simulator',
        trace: 'mooncake/conversation',
        replicas,
        strategy,
        rateScale: exp.rate_scale,
        requests: rows.length,
        events: res.eventsProcessed,
        wallS: Number(wallS.toFixed(3)),
        simulatedRequestsPerS: Math.round(rows.length / wallS),
        eventsPerS: Math.round(res.eventsProcessed / wallS),
        peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
      }),
    );
  }
}

/**
 * The endpoint time series: every `sample_interval_ms` of virtual time, one row per endpoint with
 * its load (running and waiting requests, KV-cache use and prefill backlog for replicas; requests
 * in flight for providers), until every request has ended.
 */
import type { ReplayState } from './state.ts';

/** Takes one sample of every endpoint now and schedules the next. */
export function onSample(s: ReplayState): void {
  const { endpoints, result, runId, now } = s;
  for (let i = 0; i < endpoints.length; i++) {
    const ep = endpoints[i]!;
    if (ep.engine) {
      const l = ep.engine.load(now);
      result.samples.push({ runId, endpointId: ep.endpointId, atMs: now, running: l.running, waiting: l.waiting, kvUsage: l.kvUsage, prefillBacklogTokens: l.prefillBacklogTokens, batchTokens: l.batchTokens, steps: l.steps, preemptions: l.preemptions });
    } else {
      result.samples.push({ runId, endpointId: ep.endpointId, atMs: now, running: ep.provider!.running, waiting: 0, kvUsage: 0, prefillBacklogTokens: 0, batchTokens: 0, steps: 0, preemptions: 0 });
    }
  }
  if (s.done < s.rows.length) s.q.push(now + s.exp.sample_interval_ms, { k: 'sample' });
}

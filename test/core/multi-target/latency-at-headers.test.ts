// What least_latency learns from speech and streamed transcriptions (seed 003: measured to the
// upstream's response headers, RouteRequest.latencyAt 'headers'), for a multi-target alias and a
// model with its own routes; the attempt stays busy (in flight) until it ends either way.
import { describe, expect, it } from 'vitest';
import type { LifecycleAction, RouteRequest, RoutingCore } from '../../../core/index.ts';
import { makeCore, req, seeded } from '../harness.ts';
import { group, makeMtCore, mreq } from './mt-harness.ts';

type Dispatch = Extract<LifecycleAction, { kind: 'dispatch' }>;

/** One request: headers at +40 ms, first token at +300 ms, the end at +2000 ms; the in-flight count seen after the headers. */
function run(core: RoutingCore, request: RouteRequest): { endpointId: string; busyAfterHeaders: number } {
  const { life, actions } = core.start(request, 0, seeded(1));
  const d = actions.find((a): a is Dispatch => a.kind === 'dispatch')!;
  life.step({ kind: 'first_output', attemptId: d.attemptId }, 40);
  const busyAfterHeaders = core.endpointStats.inFlight(d.endpointId);
  life.step({ kind: 'first_token', attemptId: d.attemptId }, 300);
  life.step({ kind: 'finished', attemptId: d.attemptId, usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 } }, 2_000);
  expect(life.isDone).toBe(true);
  expect(core.endpointStats.inFlight(d.endpointId)).toBe(0);
  return { endpointId: d.endpointId, busyAfterHeaders };
}

describe.each([
  ['a multi-target alias', () => makeMtCore(['a'], [group('g', ['a'], { strategy: 'least_latency' })]), (over: Partial<RouteRequest>) => mreq(over)],
  ['a model with its own routes', () => makeCore([{ name: 'a' }], 'least_latency'), (over: Partial<RouteRequest>) => req(over)],
])('latency samples on %s', (_name, build, request) => {
  it("latencyAt 'headers': the time to the response headers, stream or not; busy until the end", () => {
    for (const stream of [true, false]) {
      const core = build();
      const r = run(core, request({ stream, latencyAt: 'headers' }));
      expect(core.endpointStats.latencyMs(r.endpointId)).toBe(40);
      expect(r.busyAfterHeaders).toBe(1);
    }
  });

  it('otherwise: the first token of a stream, the whole response of a non-stream', () => {
    const streamed = build();
    const s = run(streamed, request({ stream: true }));
    expect(streamed.endpointStats.latencyMs(s.endpointId)).toBe(300);
    const whole = build();
    const w = run(whole, request({ stream: false, latencyAt: 'first_token' }));
    expect(whole.endpointStats.latencyMs(w.endpointId)).toBe(2_000);
  });
});

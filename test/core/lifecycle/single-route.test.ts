// A request that asks for one route (`RouteRequest.singleRoute`, what the gateway's /v1/messages
// sends, seed 000): a router model picks one route, the offload route only as the last resort and
// never for a prompt over its max offload input, and then neither falls back, nor offloads on a
// wait, nor hedges; a multi-target alias ignores the flag.
import { describe, expect, it } from 'vitest';
import type { Outcome } from '../../../core/index.ts';
import { group, makeMtCore } from '../multi-target/mt-harness.ts';
import { ENGINE, MiniDriver, OFFLOAD, all, lcCore, one, rq, usage } from './lc-harness.ts';

const S = 1000;
const fail500: Outcome = { kind: 'http_status', status: 500, errorClass: 'server_error', retryAfterMs: null };

describe('single-route requests', () => {
  it('a failed attempt ends the request with its error: no fallback to the other routes', () => {
    const d = new MiniDriver(lcCore());
    const a = d.start(rq({ singleRoute: true }));
    const first = one(a.actions, 'dispatch')!;
    const out = d.step(a.life, { kind: 'failed', attemptId: first.attemptId, outcome: fail500 });
    expect(one(out, 'dispatch')).toBeUndefined();
    expect(one(out, 'respond_error')).toMatchObject({ status: 502 });
    expect(one(out, 'done')!.metadata.attempts).toHaveLength(1);
    a.life.invariants();
    // The same failure without the flag falls back.
    const b = d.start(rq());
    const next = d.step(b.life, { kind: 'failed', attemptId: one(b.actions, 'dispatch')!.attemptId, outcome: fail500 });
    expect(one(next, 'dispatch')).toBeDefined();
  });

  it('no engine wait and no offload on a wait: the attempt waits as long as the deadlines allow', () => {
    const d = new MiniDriver(lcCore());
    const a = d.start(rq({ singleRoute: true }));
    expect(one(a.actions, 'dispatch')!.endpointId).toBe(ENGINE);
    expect(all(a.actions, 'wait_until')).toHaveLength(2); // first token + overall, no engine wait
    expect(d.advanceTo(100 * S).some((x) => x.kind === 'dispatch')).toBe(false);
  });

  it('the offload route serves only when nothing else admits, and never a prompt over its max input', () => {
    const d = new MiniDriver(lcCore({ routes: { engine: { weight: 0 }, hosted: { weight: 0 } } }));
    const a = d.start(rq({ singleRoute: true }));
    const x = one(a.actions, 'dispatch')!;
    expect(x.endpointId).toBe(OFFLOAD);
    expect(one(d.step(a.life, { kind: 'finished', attemptId: x.attemptId, usage }), 'done')!.metadata.offloadReason).toBe('last_resort');
    const capped = new MiniDriver(lcCore({ offload: { route: OFFLOAD, wait_sec: 2, max_input_tokens: 1_000 }, routes: { engine: { weight: 0 }, hosted: { weight: 0 } } }));
    expect(one(capped.start(rq({ singleRoute: true, inputTokens: 5_000 })).actions, 'respond_error')).toMatchObject({ status: 503 });
  });

  it('a multi-target alias still fails over with the flag set', () => {
    const d = new MiniDriver(makeMtCore(['a', 'b'], [group('group', ['a', 'b'])]));
    const s = d.start(rq({ model: 'group', singleRoute: true }));
    const first = one(s.actions, 'dispatch')!;
    const out = d.step(s.life, { kind: 'failed', attemptId: first.attemptId, outcome: fail500 });
    expect(one(out, 'dispatch')).toBeDefined();
    expect(one(out, 'dispatch')!.endpointId).not.toBe(first.endpointId);
  });
});

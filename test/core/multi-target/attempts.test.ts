// Attempts of multi-target requests (seed 003 "retries and runtime behaviour"): retries vs
// fallbacks, max_fallbacks, which failures move a request, backoff as wait_until, per-target rate
// limits (skip as 429; all over ⇒ 429), 503 when nothing is admissible, streams, pins, metadata.
import { describe, expect, it } from 'vitest';
import type { LifecycleAction, Outcome } from '../../../core/index.ts';
import { dispatchOf, doneOf, errorOf, seeded } from '../harness.ts';
import { drive, ep, group, makeMtCore, mreq, ok, reset, s400, s408, s429, s500, s503 } from './mt-harness.ts';

const abc = (routing: Record<string, unknown> = {}, targets: Array<string | Record<string, unknown>> = ['a', 'b', 'c']) => makeMtCore(['a', 'b', 'c'], [group('g', targets, routing)]);
const failAllBut = (good: string | null) => (id: string): Outcome => (id === good ? ok : s503);

describe('retries and fallbacks', () => {
  it('retries repeats the same target after a backoff, then fails over; both are counted apart', () => {
    const r = drive(abc({ retries: 2 }), mreq(), 0, seeded(1), failAllBut(ep('b')));
    expect(r.dispatched).toEqual([ep('a'), ep('a'), ep('a'), ep('b')]);
    expect(r.waits).toHaveLength(2);
    expect(r.done.metadata).toMatchObject({ status: 'ok', servedBy: 'b', retries: 2, fallbacks: 1, fallback: true });
  });

  it("a target's own retries override the block's", () => {
    const r = drive(abc({ retries: 2 }, [{ model: 'a', retries: 0 }, 'b', 'c']), mreq(), 0, seeded(1), failAllBut(ep('c')));
    expect(r.dispatched).toEqual([ep('a'), ep('b'), ep('b'), ep('b'), ep('c')]);
  });

  it('without retries: move on at once, and use the deployment default on the last target', () => {
    const r = drive(abc(), mreq(), 0, seeded(1), failAllBut(null));
    expect(r.dispatched).toEqual([ep('a'), ep('b'), ep('c'), ep('c')]);
    expect(r.done.metadata).toMatchObject({ retries: 1, fallbacks: 2 });
    const none = drive(makeMtCore(['a', 'b', 'c'], [group('g', ['a', 'b', 'c'])], { multiTarget: { lastTargetRetries: 0 } }), mreq(), 0, seeded(1), failAllBut(null));
    expect(none.dispatched).toEqual([ep('a'), ep('b'), ep('c')]);
  });

  it('max_fallbacks caps the extra targets across all tiers; 0 means choose only', () => {
    expect(drive(abc({ max_fallbacks: 0, retries: 0 }), mreq(), 0, seeded(1), failAllBut(ep('b'))).dispatched).toEqual([ep('a')]);
    // The budget makes a the last target, so the deployment default retry applies to it.
    expect(drive(abc({ max_fallbacks: 0 }), mreq(), 0, seeded(1), failAllBut(ep('b'))).dispatched).toEqual([ep('a'), ep('a')]);
    const tiers = abc({ max_fallbacks: 1, retries: 0 }, ['a', { model: 'b', priority: -1 }, { model: 'c', priority: -2 }]);
    const r = drive(tiers, mreq(), 0, seeded(1), failAllBut(ep('c')));
    expect(r.dispatched).toEqual([ep('a'), ep('b')]);
    expect(r.done.metadata).toMatchObject({ status: 'upstream_server_error', fallbacks: 1 });
  });

  it('all fail ⇒ the first upstream failure is returned, every attempt listed', () => {
    const slow503: Outcome = { kind: 'http_status', status: 503, errorClass: 'server_error', retryAfterMs: 4_000 };
    const outcomes: Record<string, Outcome> = { [ep('a')]: slow503, [ep('b')]: reset, [ep('c')]: s500 };
    const r = drive(abc({ retries: 0 }), mreq(), 0, seeded(1), (id) => outcomes[id]!);
    expect(r.error).toMatchObject({ status: 502, code: 'upstream_server_error', retryAfterSec: 4 });
    for (const t of ['a=503', 'b=transport', 'c=500']) expect(r.error!.message).toContain(t);
    expect(r.done.metadata).toMatchObject({ servedBy: null, endpointId: ep('c') });
  });
});

describe('which failures move a request', () => {
  it('other 4xx go straight back to the caller', () => {
    const r = drive(abc(), mreq(), 0, seeded(1), () => s400);
    expect(r.dispatched).toEqual([ep('a')]);
    expect(r.error).toMatchObject({ status: 400, code: 'upstream_client_error' });
    const auth = drive(abc(), mreq(), 0, seeded(1), () => ({ kind: 'http_status', status: 401, errorClass: 'auth_rejected', retryAfterMs: null }));
    expect(auth.dispatched).toEqual([ep('a')]);
    expect(auth.error?.status).toBe(502);
  });
  it('429 moves the request only with retry_on_429', () => {
    expect(drive(abc(), mreq(), 0, seeded(1), (id) => (id === ep('a') ? s429 : ok)).error).toMatchObject({ status: 429, code: 'upstream_rate_limited' });
    expect(drive(abc({ retry_on_429: true }), mreq(), 0, seeded(1), (id) => (id === ep('a') ? s429 : ok)).done.metadata.servedBy).toBe('b');
  });
  it('fallback_on_statuses adds statuses; 5xx and transport errors always move it', () => {
    expect(drive(abc({ fallback_on_statuses: [408] }), mreq(), 0, seeded(1), (id) => (id === ep('a') ? s408 : ok)).done.metadata.servedBy).toBe('b');
    // An upstream 408 is a timeout (the outcome table): unless listed it goes back, as a 504.
    expect(drive(abc(), mreq(), 0, seeded(1), (id) => (id === ep('a') ? s408 : ok)).error).toMatchObject({ status: 504, code: 'upstream_timeout' });
    expect(drive(abc(), mreq(), 0, seeded(1), (id) => (id === ep('a') ? reset : ok)).done.metadata.servedBy).toBe('b');
    expect(drive(abc(), mreq(), 0, seeded(1), (id) => (id === ep('a') ? { kind: 'first_token_timeout' } : ok)).done.metadata.servedBy).toBe('b');
  });
});

describe('backoff', () => {
  it('is a wait_until the driver performs; it grows per retry and honours Retry-After', () => {
    const r = drive(abc({ retries: 3 }), mreq(), 1_000, seeded(9), failAllBut(ep('b')));
    const [w1, w2, w3] = r.waits;
    expect(w1).toBeGreaterThanOrEqual(100);
    expect(w1).toBeLessThanOrEqual(200);
    expect(w2).toBeGreaterThanOrEqual(200);
    expect(w3).toBeGreaterThanOrEqual(400);
    expect(r.done.metadata.attempts[1]!.startMs).toBe(1_000 + w1!);
    const ra = drive(abc({ retries: 1 }), mreq(), 0, seeded(9), (id, n): Outcome => (id === ep('a') && n === 0 ? { kind: 'http_status', status: 503, errorClass: 'server_error', retryAfterMs: 2_500 } : ok));
    expect(ra.waits).toEqual([2_500]);
  });

  it('a stale or foreign deadline is ignored; client gone during a backoff ends the life', () => {
    const core = abc({ retries: 1 });
    const { life, actions } = core.start(mreq(), 0, seeded(1));
    const d = dispatchOf(actions)!;
    const wait = life.step({ kind: 'failed', attemptId: d.attemptId, outcome: s503 }, 5)[0] as Extract<LifecycleAction, { kind: 'wait_until' }>;
    expect(wait.kind).toBe('wait_until');
    expect(life.step({ kind: 'deadline', deadlineId: wait.deadlineId + 7 }, 6)).toEqual([]);
    const out = life.step({ kind: 'client_gone' }, 7);
    expect(doneOf(out)?.metadata.status).toBe('client_gone');
    expect(errorOf(out)).toBeUndefined();
    expect(life.step({ kind: 'deadline', deadlineId: wait.deadlineId }, 500)).toEqual([]);
    life.invariants();
    expect(core.endpointStats.inFlight(ep('a'))).toBe(0);
  });

  it('client gone with an attempt in flight cancels it', () => {
    const core = abc();
    const { life, actions } = core.start(mreq(), 0, seeded(1));
    const d = dispatchOf(actions)!;
    const out = life.step({ kind: 'client_gone' }, 3);
    expect(out[0]).toEqual({ kind: 'cancel', attemptId: d.attemptId });
    expect(doneOf(out)!.metadata.attempts[0]!.outcome.kind).toBe('cancelled');
    expect(core.endpointStats.inFlight(ep('a'))).toBe(0);
  });
});

describe('per-target rate limits', () => {
  const limited = (routing: Record<string, unknown> = {}) =>
    abc(routing, [{ model: 'a', rate_limit: { requests_per_minute: 60, burst: 1 } }, { model: 'b', rate_limit: { requests_per_minute: 60, burst: 1 } }, 'c']);

  it('a target over its limit is skipped and recorded as a failed 429 attempt, without spending the fallback budget', () => {
    const core = limited({ max_fallbacks: 0 });
    expect(drive(core, mreq(), 0, seeded(1), () => ok).done.metadata.servedBy).toBe('a');
    const r = drive(core, mreq(), 10, seeded(1), () => ok);
    expect(r.done.metadata.servedBy).toBe('b');
    expect(r.dispatched).toEqual([ep('b')]);
    const skip = r.done.metadata.attempts[0]!;
    expect(skip).toMatchObject({ target: 'a', skipped: 'rate_limited', startMs: 10, endMs: 10, outcome: { kind: 'http_status', status: 429 } });
    expect(skip.usage).toEqual({ inputTokens: 0, outputTokens: 0, cachedTokens: 0 });
    expect(r.done.metadata.fallbacks).toBe(0);
  });

  it('every target over its limit ⇒ 429 target_rate_limited with Retry-After', () => {
    const core = abc({}, [{ model: 'a', rate_limit: { requests_per_minute: 6, burst: 1 } }, { model: 'b', rate_limit: { requests_per_minute: 6, burst: 1 } }]);
    drive(core, mreq(), 0, seeded(1), () => ok);
    drive(core, mreq(), 0, seeded(1), () => ok);
    const r = drive(core, mreq(), 0, seeded(1), () => ok);
    expect(r.error).toMatchObject({ status: 429, code: 'target_rate_limited', retryAfterSec: 10 });
    expect(r.dispatched).toEqual([]);
    expect(r.done.metadata.attempts.map((a) => a.skipped)).toEqual(['rate_limited', 'rate_limited']);
  });

  it('a same-target retry takes a token too; without one the walk moves on', () => {
    const core = abc({ retries: 1 }, [{ model: 'a', rate_limit: { requests_per_minute: 1, burst: 1 } }, 'b']);
    const r = drive(core, mreq(), 0, seeded(1), failAllBut(ep('b')));
    expect(r.dispatched).toEqual([ep('a'), ep('b')]);
    expect(r.done.metadata.attempts.map((a) => a.skipped ?? a.target)).toEqual(['a', 'rate_limited', 'b']);
  });
});

describe('streams', () => {
  it('with stream_timeout_ms: the first-token deadline is set, commit waits for the first token, a failure before it moves on', () => {
    const core = abc({ stream_timeout_ms: 1_500 });
    const { life, actions } = core.start(mreq({ stream: true }), 100, seeded(1));
    const d = dispatchOf(actions)!;
    const firstTokenWait = actions.find((a) => a.kind === 'wait_until' && a.atMs === 1_600);
    expect(firstTokenWait).toBeDefined();
    expect(life.step({ kind: 'first_output', attemptId: d.attemptId }, 200)).toEqual([]);
    const timedOut = life.step({ kind: 'deadline', deadlineId: (firstTokenWait as Extract<LifecycleAction, { kind: 'wait_until' }>).deadlineId }, 1_600);
    expect(timedOut[0]).toEqual({ kind: 'cancel', attemptId: d.attemptId, reason: 'first_token_timeout' });
    const next = dispatchOf(timedOut)!;
    expect(next.endpointId).toBe(ep('b'));
    expect(life.step({ kind: 'first_token', attemptId: next.attemptId }, 1_700)).toEqual([{ kind: 'commit', attemptId: next.attemptId }]);
    const after = life.step({ kind: 'failed', attemptId: next.attemptId, outcome: reset }, 1_800);
    expect(dispatchOf(after)).toBeUndefined();
    expect(errorOf(after)?.status).toBe(502);
    expect(core.endpointStats.latencyMs(ep('a'))).toBe(1_500); // the timeout is a latency sample
    expect(core.endpointStats.latencyMs(ep('b'))).toBe(100);
  });

  it('without stream_timeout_ms: commit when the upstream response starts; no fallback after that', () => {
    const core = abc();
    const { life, actions } = core.start(mreq({ stream: true }), 0, seeded(1));
    const d = dispatchOf(actions)!;
    expect(actions.filter((a) => a.kind === 'wait_until').map((w) => (w as { atMs: number }).atMs).sort((x, y) => x - y)).toEqual([300_000, 1_800_000]); // headers, overall: no first-token wait
    expect(life.step({ kind: 'first_output', attemptId: d.attemptId }, 1)).toEqual([{ kind: 'commit', attemptId: d.attemptId }]);
    const out = life.step({ kind: 'failed', attemptId: d.attemptId, outcome: reset }, 2);
    expect(dispatchOf(out)).toBeUndefined();
    expect(doneOf(out)?.metadata.attempts).toHaveLength(1);
  });

  it('a non-streaming request commits when it finishes and samples end-to-end latency', () => {
    const core = abc();
    const { life, actions } = core.start(mreq({ stream: false }), 0, seeded(1));
    const d = dispatchOf(actions)!;
    expect(life.step({ kind: 'first_token', attemptId: d.attemptId }, 40)).toEqual([]);
    const out = life.step({ kind: 'finished', attemptId: d.attemptId, usage: { inputTokens: 5, outputTokens: 2, cachedTokens: 1 } }, 90);
    expect(out[0]).toEqual({ kind: 'commit', attemptId: d.attemptId });
    expect(core.endpointStats.latencyMs(ep('a'))).toBe(90);
    expect(doneOf(out)!.metadata).toMatchObject({ firstTokenAtMs: 40, usage: { inputTokens: 5, outputTokens: 2, cachedTokens: 1 } });
  });
});

describe('selection edges', () => {
  it('unknown or unpublished model ⇒ 404', () => {
    const core = makeMtCore(['a'], [{ ...group('g', ['a']), published: false }]);
    expect(drive(core, mreq(), 0, seeded(1), () => ok).error).toMatchObject({ status: 404, code: 'model_not_found' });
  });
  it('an admin pin dispatches that target only: no retries, no fallback; an unknown pin ⇒ 400', () => {
    const core = abc({ retries: 3 });
    const r = drive(core, mreq({ pin: 'b' }), 0, seeded(1), () => s503);
    expect(r.dispatched).toEqual([ep('b')]);
    expect(r.done.metadata.reason).toBe('pin');
    expect(drive(core, mreq({ pin: 'zz' }), 0, seeded(1), () => ok).error).toMatchObject({ status: 400, code: 'route_pin_not_found' });
  });
});

describe('metadata and shared health', () => {
  it('names the serving direct model, keeps the alias as model id, attributes usage to the serving attempt only', () => {
    const core = makeMtCore(['a', { id: 'b', provider: 'prov-b' }], [{ ...group('g', ['a', 'b']), aliases: ['chat'] }]);
    const md = drive(core, mreq({ model: 'chat' }), 0, seeded(1), failAllBut(ep('b'))).done.metadata;
    expect(md).toMatchObject({ modelId: 'g', strategy: 'failover', servedBy: 'b', endpointId: ep('b'), provider: 'prov-b', baseUrl: 'sim://b', reason: 'failover', status: 'ok', fallback: true });
    expect(md.attempts.map((a) => [a.target, a.usage])).toEqual([
      ['a', { inputTokens: 0, outputTokens: 0, cachedTokens: 0 }],
      ['b', { inputTokens: 7, outputTokens: 3, cachedTokens: 0 }],
    ]);
  });

  it("outcomes reach the shared health registry, but the fixed router's breaker never ejects a target", () => {
    const core = abc();
    for (let i = 0; i < 10; i++) {
      const r = drive(core, mreq(), i, seeded(i), failAllBut(ep('b')));
      expect(r.dispatched[0]).toBe(ep('a')); // still first in rotation
      expect(r.done.metadata.servedBy).toBe('b');
    }
    const a = core.health.snapshotOf(ep('a'), 10);
    expect(a.state).toBe('open');
    expect(a.availability).toBeLessThan(0.5);
    expect(a.claimsInFlight).toBe(0);
    expect(core.multiTargetStatus(10)[0]).toMatchObject({ modelId: 'g', status: 'not_applicable', targets: [{ model: 'a', status: 'healthy', breaker: 'open' }, { model: 'b', status: 'healthy' }, { model: 'c' }] });
    core.invariants();
  });
});

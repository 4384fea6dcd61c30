// Issue #6 items 2–4: deadlines (exact defaults), the commit point, Retry-After.
import { describe, expect, it } from 'vitest';
import { parseRetryAfterMs, type Outcome } from '../../../core/index.ts';
import { ENGINE, HOSTED, MiniDriver, all, lcCore, one, rq, usage } from './lc-harness.ts';

const S = 1000;
const noOffload = { offload: null } as const;

describe('deadlines', () => {
  it("a stream gets the first-token wait at +300 s (no later than the headers wait, so it bounds the headers too) and the overall deadline at +1 800 s (also the attempt's total), all core wait_untils", () => {
    const d = new MiniDriver(lcCore(noOffload));
    d.now = 5_000;
    const { actions } = d.start(rq({ stream: true }));
    const disp = one(actions, 'dispatch')!;
    expect(disp.endpointId).toBe(ENGINE);
    expect(disp).toEqual({ kind: 'dispatch', attemptId: disp.attemptId, endpointId: ENGINE });
    expect(all(actions, 'wait_until').map((w) => w.atMs).sort((a, b) => a - b)).toEqual([5_000 + 300 * S, 5_000 + 1_800 * S]);
  });

  it('a non-streaming attempt gets the 600 s request timeout, armed once as a core wait_until (and no first-token deadline)', () => {
    const d = new MiniDriver(lcCore(noOffload));
    const { actions } = d.start(rq({ stream: false }));
    expect(all(actions, 'wait_until').filter((w) => w.atMs === 600 * S)).toHaveLength(1);
    expect(all(actions, 'wait_until').filter((w) => w.atMs === 300 * S)).toHaveLength(1); // the headers wait only
  });

  it('a silent upstream before commit (no headers in 300 s) fails over and counts against its breaker', () => {
    const d = new MiniDriver(lcCore(noOffload));
    const { life, actions } = d.start(rq());
    const first = one(actions, 'dispatch')!;
    const out = d.advanceTo(300 * S);
    expect(one(out, 'cancel')!.attemptId).toBe(first.attemptId);
    expect(one(out, 'dispatch')!.endpointId).toBe(HOSTED);
    expect(out.some((a) => a.kind === 'respond_error')).toBe(false);
    expect(d.core.health.snapshotOf(ENGINE, d.now).consecutiveFailures).toBe(1);
    life.invariants();
  });

  it('first_output lifts the headers deadline but does not commit; a failure after it still fails over invisibly', () => {
    const d = new MiniDriver(lcCore({ ...noOffload, settings: { timeout_first_token_sec: 600 } }));
    const { life, actions } = d.start(rq());
    const first = one(actions, 'dispatch')!;
    expect(d.step(life, { kind: 'first_output', attemptId: first.attemptId })).toEqual([]);
    expect(d.advanceTo(400 * S)).toEqual([]); // headers deadline lifted (the first-token wait runs to 600 s)
    const out = d.step(life, { kind: 'failed', attemptId: first.attemptId, outcome: { kind: 'transport', cause: 'reset' } });
    expect(one(out, 'commit')).toBeUndefined();
    expect(one(out, 'dispatch')!.endpointId).toBe(HOSTED);
  });

  it('a stream stalled after commit ends with an in-band 504 once chunks stop for 120 s', () => {
    const d = new MiniDriver(lcCore(noOffload));
    const { life, actions } = d.start(rq());
    const id = one(actions, 'dispatch')!.attemptId;
    d.now = 1 * S;
    expect(one(d.step(life, { kind: 'first_token', attemptId: id }), 'commit')!.attemptId).toBe(id);
    d.now = 2 * S;
    expect(one(d.step(life, { kind: 'chunk', attemptId: id }), 'wait_until')!.atMs).toBe(122 * S);
    d.now = 100 * S;
    expect(d.step(life, { kind: 'chunk', attemptId: id })).toEqual([]); // lazily re-armed
    expect(d.advanceTo(122 * S).filter((a) => a.kind !== 'wait_until')).toEqual([]);
    const out = d.advanceTo(220 * S);
    expect(one(out, 'cancel')!.attemptId).toBe(id);
    expect(one(out, 'respond_error')).toMatchObject({ status: 504, code: 'upstream_timeout' });
    expect(one(out, 'dispatch')).toBeUndefined(); // committed: never falls back
    expect(life.isDone).toBe(true);
    life.invariants();
  });

  it('without chunk events no idle deadline is armed (drivers that do not report chunks)', () => {
    const d = new MiniDriver(lcCore(noOffload));
    const { life, actions } = d.start(rq());
    const id = one(actions, 'dispatch')!.attemptId;
    d.step(life, { kind: 'first_token', attemptId: id });
    expect(d.advanceTo(1_000 * S)).toEqual([]);
    expect(life.isDone).toBe(false);
  });

  it('the overall deadline ends the request with 504 and releases everything', () => {
    const d = new MiniDriver(lcCore({ ...noOffload, settings: { timeout_overall_sec: 10 } }));
    const { life, actions } = d.start(rq());
    const id = one(actions, 'dispatch')!.attemptId;
    d.step(life, { kind: 'first_output', attemptId: id });
    const out = d.advanceTo(10 * S);
    expect(one(out, 'cancel')!.attemptId).toBe(id);
    expect(one(out, 'respond_error')).toMatchObject({ status: 504, code: 'upstream_timeout' });
    expect(life.isDone).toBe(true);
    d.core.invariants();
    expect(d.core.prefill.snapshot().every((s) => s.leasesInFlight === 0)).toBe(true);
  });
});

describe('Retry-After', () => {
  it('parses seconds, HTTP dates and retry-after-ms', () => {
    const wall = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfterMs({ 'retry-after': '7' }, wall)).toBe(7_000);
    expect(parseRetryAfterMs({ 'retry-after': 'Thu, 01 Jan 2026 00:00:30 GMT' }, wall)).toBe(30_000);
    expect(parseRetryAfterMs({ 'retry-after': 'Wed, 31 Dec 2025 23:00:00 GMT' }, wall)).toBe(0);
    expect(parseRetryAfterMs({ 'retry-after-ms': '1500', 'retry-after': '9' }, wall)).toBe(1_500);
    expect(parseRetryAfterMs({ 'retry-after': 'soon' }, wall)).toBeNull();
    expect(parseRetryAfterMs({ 'retry-after': '-3' }, wall)).toBeNull();
    expect(parseRetryAfterMs({}, wall)).toBeNull();
  });

  const r429 = (ms: number): Outcome => ({ kind: 'http_status', status: 429, errorClass: 'rate_limited', retryAfterMs: ms });

  it('a 429 with Retry-After cools the endpoint: later requests skip it while another candidate is admissible', () => {
    const d = new MiniDriver(lcCore(noOffload));
    const a = d.start(rq());
    d.step(a.life, { kind: 'failed', attemptId: one(a.actions, 'dispatch')!.attemptId, outcome: r429(5_000) });
    const failures = d.core.health.snapshotOf(ENGINE, d.now).consecutiveFailures;
    expect(failures).toBe(1);
    d.now = 1 * S;
    const b = d.start(rq());
    expect(one(b.actions, 'dispatch')!.endpointId).toBe(HOSTED); // skipped, not delayed
    expect(d.core.health.snapshotOf(ENGINE, d.now).consecutiveFailures).toBe(failures); // skipping is not a second failure
    d.now = 5 * S;
    expect(one(d.start(rq()).actions, 'dispatch')!.endpointId).toBe(ENGINE); // cooled down
  });

  it('every candidate cooling ⇒ 429 with Retry-After = the shortest remaining wait (never 500)', () => {
    const d = new MiniDriver(lcCore({ ...noOffload, routes: { offload: null } }));
    const a = d.start(rq());
    const out1 = d.step(a.life, { kind: 'failed', attemptId: one(a.actions, 'dispatch')!.attemptId, outcome: r429(20_000) });
    const out2 = d.step(a.life, { kind: 'failed', attemptId: one(out1, 'dispatch')!.attemptId, outcome: r429(8_000) });
    expect(one(out2, 'respond_error')).toMatchObject({ status: 429, retryAfterSec: 20 }); // the primary's error
    d.now = 1_500;
    const b = d.start(rq());
    expect(one(b.actions, 'dispatch')).toBeUndefined();
    expect(one(b.actions, 'respond_error')).toMatchObject({ status: 429, code: 'upstream_rate_limited', retryAfterSec: 7 });
  });

  it('a 503 with Retry-After on the shortest cooler ⇒ 503 with Retry-After', () => {
    const d = new MiniDriver(lcCore({ ...noOffload, routes: { offload: null, hosted: null } }));
    const a = d.start(rq());
    d.step(a.life, { kind: 'failed', attemptId: one(a.actions, 'dispatch')!.attemptId, outcome: { kind: 'http_status', status: 503, errorClass: 'server_error', retryAfterMs: 3_000 } });
    const b = d.start(rq());
    expect(one(b.actions, 'respond_error')).toMatchObject({ status: 503, retryAfterSec: 3 });
    expect(b.life.isDone).toBe(true);
  });
});

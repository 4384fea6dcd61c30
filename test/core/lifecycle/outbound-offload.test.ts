// Issue #6 items 5–10: adaptive outbound concurrency, queue-wait offload, engine wait, engine hold,
// max offload input and the exclusions, with the exact defaults.
import { describe, expect, it } from 'vitest';
import { resolveOffloadPolicy, type Outcome } from '../../../core/index.ts';
import { ENGINE, HOSTED, MiniDriver, OFFLOAD, all, lcCore, one, rq, usage } from './lc-harness.ts';

const S = 1000;
const fail500: Outcome = { kind: 'http_status', status: 500, errorClass: 'server_error', retryAfterMs: null };
const r429: Outcome = { kind: 'http_status', status: 429, errorClass: 'rate_limited', retryAfterMs: null };
/** Only the hosted route (plus others given): everything goes through the limiter. */
const hostedOnly = { offload: null, routes: { engine: null, offload: null } } as const;

describe('adaptive outbound concurrency', () => {
  it('8 in flight per provider key, the 9th queues (acquire_slot, give-up at +30 s) and gets the slot when one frees', () => {
    const d = new MiniDriver(lcCore(hostedOnly));
    const lives = Array.from({ length: 8 }, () => d.start(rq()));
    for (const l of lives) expect(one(l.actions, 'dispatch')!.endpointId).toBe(HOSTED);
    const ninth = d.start(rq());
    expect(one(ninth.actions, 'dispatch')).toBeUndefined();
    expect(one(ninth.actions, 'acquire_slot')).toMatchObject({ endpointId: HOSTED, giveUpAtMs: 30 * S });
    const first = lives[0]!;
    const id = one(first.actions, 'dispatch')!.attemptId;
    d.now = 1 * S;
    d.step(first.life, { kind: 'first_token', attemptId: id });
    const out = d.step(first.life, { kind: 'finished', attemptId: id, usage });
    expect(one(out, 'done')).toBeDefined();
    expect(all(d.actionsOf(ninth.life), 'dispatch').map((x) => x.endpointId)).toEqual([HOSTED]); // woken
    expect(d.core.limiter.snapshot()).toEqual([{ key: 'hosted|' + d.core.model('m')!.routes[0]!.outboundKey!.split('|')[1], limit: 8, held: 8, waiting: 0 }]);
  });

  it('a wait past the 30 s acquire timeout moves to the next route without touching the breaker', () => {
    const d = new MiniDriver(lcCore({ offload: null, routes: { engine: null, offload: { weight: 1 } }, settings: { upstream_concurrency_initial_limit: 1 } }));
    d.start(rq()); // holds hosted's only slot
    const b = d.start(rq());
    expect(one(b.actions, 'acquire_slot')!.giveUpAtMs).toBe(30 * S);
    const out = d.advanceTo(30 * S);
    expect(one(out, 'dispatch')!.endpointId).toBe(OFFLOAD); // no offload policy: just the next route
    expect(d.core.health.snapshotOf(HOSTED, d.now).consecutiveFailures).toBe(0);
    b.life.invariants();
  });

  it('−1 per 429 (never below 1), +1 per 100 successes (max 64)', () => {
    const d = new MiniDriver(lcCore({ ...hostedOnly, settings: { upstream_concurrency_initial_limit: 2 } }));
    const limit = () => d.core.limiter.snapshot()[0]!.limit;
    for (let i = 0; i < 2; i++) {
      // two 429s: 2 → 1 → 1 (the breaker opens at 3 consecutive failures)
      const l = d.start(rq());
      d.step(l.life, { kind: 'failed', attemptId: one(l.actions, 'dispatch')!.attemptId, outcome: r429 });
    }
    expect(limit()).toBe(1);
    for (let i = 0; i < 100; i++) {
      const l = d.start(rq());
      d.step(l.life, { kind: 'finished', attemptId: one(l.actions, 'dispatch')!.attemptId, usage });
    }
    expect(limit()).toBe(2);
  });

  it('loopback and sim:// engines are exempt; local: false puts a loopback emulator under the limiter; the switch turns it off', () => {
    const core = lcCore({ routes: { engine: { base_url: 'http://127.0.0.1:9000/v1' }, engine2: { base_url: 'http://localhost:9001/v1', local: false } } });
    const by = (id: string) => core.model('m')!.routes.find((r) => r.endpointId.startsWith(id))!;
    expect(by('m:local-9000').outboundKey).toBeNull();
    expect(by('m:local-9001').outboundKey).not.toBeNull();
    expect(by(HOSTED).outboundKey).not.toBeNull();
    const off = new MiniDriver(lcCore({ ...hostedOnly, settings: { upstream_concurrency_enabled: false, upstream_concurrency_initial_limit: 1 } }));
    for (let i = 0; i < 3; i++) expect(one(off.start(rq()).actions, 'dispatch')).toBeDefined();
  });

  it('a client disconnect while queued releases the slot', () => {
    const d = new MiniDriver(lcCore({ ...hostedOnly, settings: { upstream_concurrency_initial_limit: 1 } }));
    d.start(rq());
    const b = d.start(rq());
    expect(d.core.limiter.snapshot()[0]!.waiting).toBe(1);
    const out = d.step(b.life, { kind: 'client_gone' });
    expect(one(out, 'cancel')).toBeUndefined(); // never dispatched: nothing to abort upstream
    expect(d.core.limiter.snapshot()[0]!.waiting).toBe(0);
    b.life.invariants();
  });
});

describe('queue-wait offload', () => {
  // engine (sim, hold-able), hosted (limited, 1 slot), offload (limited, separate key).
  const opts = (over: Record<string, unknown> = {}) => ({ routes: { engine: null }, settings: { upstream_concurrency_initial_limit: 1 }, offload: { route: OFFLOAD, wait_sec: 2, ...over } });

  it('the offload route is never primary while another route is admissible', () => {
    const d = new MiniDriver(lcCore({ routes: { offload: { weight: 100 } } }));
    for (let i = 0; i < 20; i++) expect(one(d.start(rq()).actions, 'dispatch')!.endpointId).not.toBe(OFFLOAD);
    expect(d.core.offloadPolicies()[0]!.policy).toMatchObject({ active: true, waitMs: 2_000, endpointId: OFFLOAD });
  });

  it('a queued attempt leaves at the wait and the offload route is tried next (queue_wait), with the full acquire timeout', () => {
    const d = new MiniDriver(lcCore(opts()));
    d.start(rq({ stream: false })); // holds hosted's only slot (non-streaming: no engine wait)
    const c = d.start(rq());
    expect(one(c.actions, 'acquire_slot')!.giveUpAtMs).toBe(2 * S);
    const out = d.advanceTo(2 * S);
    const all_ = d.actionsOf(c.life);
    const disp = all(all_, 'dispatch');
    expect(disp.map((x) => x.endpointId)).toEqual([OFFLOAD]);
    void out;
    const id = disp[0]!.attemptId;
    const end = d.step(c.life, { kind: 'finished', attemptId: id, usage });
    expect(one(end, 'done')!.metadata).toMatchObject({ offloadReason: 'queue_wait', offloadEndpointId: OFFLOAD, endpointId: OFFLOAD, status: 'ok' });
    expect(one(end, 'done')!.metadata.attempts[0]!.outcome).toEqual({ kind: 'queue_wait_timeout' });
    expect(d.core.health.snapshotOf(HOSTED, d.now).consecutiveFailures).toBe(0);
  });

  it('the offload attempt itself queues with the full 30 s acquire timeout', () => {
    const d = new MiniDriver(lcCore(opts()));
    d.start(rq({ stream: false })); // hosted's slot
    d.start(rq({ stream: false, pin: OFFLOAD })); // offload's slot
    const c = d.start(rq());
    d.advanceTo(2 * S);
    const slots = all(d.actionsOf(c.life), 'acquire_slot');
    expect(slots.map((x) => [x.endpointId, x.giveUpAtMs])).toEqual([
      [HOSTED, 2 * S],
      [OFFLOAD, 32 * S],
    ]);
  });

  it('offload at most once; a failed offload returns once to the interrupted route after the others, without deadlines', () => {
    const d = new MiniDriver(lcCore({ routes: { engine2: {} }, settings: { upstream_concurrency_initial_limit: 1 }, offload: { route: OFFLOAD, wait_sec: 2 } }));
    const a = d.start(rq());
    const e1 = one(a.actions, 'dispatch')!;
    expect(e1.endpointId).toBe(ENGINE);
    // Engine wait: no first output within 2 s ⇒ cancel and offload (engine_wait).
    const out = d.advanceTo(2 * S);
    expect(one(out, 'cancel')!.attemptId).toBe(e1.attemptId);
    const off = one(out, 'dispatch')!;
    expect(off.endpointId).toBe(OFFLOAD);
    expect(d.core.health.snapshotOf(ENGINE, d.now).consecutiveFailures).toBe(0); // engine waits are not failures
    // Offload fails ⇒ remaining routes (engine2, hosted), then back to the engine once.
    let next = d.step(a.life, { kind: 'failed', attemptId: off.attemptId, outcome: fail500 });
    const seen: string[] = [];
    for (let i = 0; i < 5 && one(next, 'dispatch'); i++) {
      const x = one(next, 'dispatch')!;
      seen.push(x.endpointId);
      if (x.endpointId === ENGINE) {
        expect(all(next, 'wait_until').map((w) => w.atMs)).toEqual([d.now + 300 * S]); // first token (it also bounds the headers), no engine wait
        next = d.step(a.life, { kind: 'finished', attemptId: x.attemptId, usage });
        break;
      }
      next = d.step(a.life, { kind: 'failed', attemptId: x.attemptId, outcome: fail500 });
    }
    expect(seen).toEqual(['m:engine2', HOSTED, ENGINE]);
    const md = one(next, 'done')!.metadata;
    expect(md).toMatchObject({ status: 'ok', endpointId: ENGINE, offloadReason: 'engine_wait', offloadEndpointId: OFFLOAD });
    expect(md.attempts.filter((x) => x.endpointId === OFFLOAD)).toHaveLength(1);
    a.life.invariants();
  });

  it('first_output (buffered adapter output) lifts the engine wait; non-streaming requests are not timed', () => {
    const d = new MiniDriver(lcCore());
    const a = d.start(rq());
    const id = one(a.actions, 'dispatch')!.attemptId;
    d.now = 1 * S;
    d.step(a.life, { kind: 'first_output', attemptId: id });
    expect(d.advanceTo(10 * S)).toEqual([]);
    const b = d.start(rq({ stream: false }));
    expect(all(b.actions, 'wait_until').map((w) => w.atMs - d.now).sort((x, y) => x - y)).toEqual([300 * S, 600 * S, 1_800 * S]);
  });

  it('with no other admissible route the offload route is primary (last_resort)', () => {
    const d = new MiniDriver(lcCore({ routes: { engine: { weight: 0 }, hosted: { weight: 0 } } }));
    const a = d.start(rq());
    expect(one(a.actions, 'dispatch')!.endpointId).toBe(OFFLOAD);
    const end = d.step(a.life, { kind: 'finished', attemptId: one(a.actions, 'dispatch')!.attemptId, usage });
    expect(one(end, 'done')!.metadata.offloadReason).toBe('last_resort');
  });

  it('policy validation: missing route, weight 0, routewise ⇒ inactive with a reason', () => {
    expect(lcCore({ offload: { route: 'nope', wait_sec: 1 } }).offloadPolicies()[0]!.policy).toMatchObject({ active: false, inactiveReason: 'route_not_found' });
    expect(lcCore({ routes: { offload: { weight: 0 } } }).offloadPolicies()[0]!.policy).toMatchObject({ active: false, inactiveReason: 'route_weight_zero' });
    // hybrid_composition: true is refused at load (the seeds give it no behaviour); false is accepted.
    expect(() => lcCore({ router: 'fixed', routerParams: { hybrid_composition: true } })).toThrow(/hybrid_composition: true is refused: the seeds do not specify what hybrid composition does.*remove hybrid_composition from router_params/);
    expect(lcCore({ router: 'fixed', routerParams: { hybrid_composition: false } }).offloadPolicies()[0]!.policy).toMatchObject({ active: true });
    const views = [{ endpointId: 'a', provider: 'a', effectiveWeight: 1 }, { endpointId: 'b', provider: 'b', effectiveWeight: 1 }];
    expect(resolveOffloadPolicy({ route: 'b', wait_sec: 1 }, views, 'routewise')).toMatchObject({ active: false, inactiveReason: 'routewise_model' });
    expect(resolveOffloadPolicy({ route: 'b', wait_sec: 1 }, views.slice(1), 'fixed')).toMatchObject({ active: false, inactiveReason: 'only_route' });
    expect(() => lcCore({ offload: { route: OFFLOAD, wait_sec: 0 } })).toThrow(/wait_sec/);
    // An inactive policy is ignored: the offload route is an ordinary route.
    const d = new MiniDriver(lcCore({ offload: { route: 'nope', wait_sec: 1 }, routes: { engine: { weight: 0 }, hosted: { weight: 0 } } }));
    const a = d.start(rq());
    expect(all(a.actions, 'wait_until')).toHaveLength(2); // first token (it also bounds the headers) + overall, no engine wait
  });
});

describe('exclusions and max offload input', () => {
  it('pinned requests are never offloaded and get no engine wait', () => {
    const d = new MiniDriver(lcCore());
    const a = d.start(rq({ pin: ENGINE }));
    expect(all(a.actions, 'wait_until')).toHaveLength(2);
    expect(d.advanceTo(100 * S).some((x) => x.kind === 'dispatch')).toBe(false);
  });

  it('a prompt over max_input_tokens never goes to the offload route: no engine wait, and 503 when nothing else is admissible', () => {
    const d = new MiniDriver(lcCore({ offload: { route: OFFLOAD, wait_sec: 2, max_input_tokens: 1_000 } }));
    const big = d.start(rq({ inputTokens: 1_001 }));
    expect(all(big.actions, 'wait_until')).toHaveLength(2); // first token (it also bounds the headers) + overall
    const small = d.start(rq({ inputTokens: 1_000 }));
    expect(all(small.actions, 'wait_until')).toHaveLength(3); // first token, overall and the engine wait
    const only = new MiniDriver(lcCore({ offload: { route: OFFLOAD, wait_sec: 2, max_input_tokens: 1_000 }, routes: { engine: { weight: 0 }, hosted: { weight: 0 } } }));
    expect(one(only.start(rq({ inputTokens: 5_000 })).actions, 'respond_error')).toMatchObject({ status: 503 });
  });

  it('a prompt the offload route’s context window cannot hold is not offloaded; after a context-length rejection routes that are not larger are skipped', () => {
    const d = new MiniDriver(lcCore({ routes: { engine2: { context_length: 8_000 }, hosted: { context_length: 32_000 }, offload: { context_length: 4_000 }, engine: { context_length: 8_000 } } }));
    const a = d.start(rq({ inputTokens: 5_000 }));
    expect(all(a.actions, 'wait_until')).toHaveLength(2); // offload cannot hold it: no engine wait
    const first = one(a.actions, 'dispatch')!;
    expect(first.endpointId).toBe(ENGINE);
    const out = d.step(a.life, { kind: 'failed', attemptId: first.attemptId, outcome: { kind: 'http_status', status: 400, errorClass: 'context_length', retryAfterMs: null } });
    expect(one(out, 'dispatch')!.endpointId).toBe(HOSTED); // engine2 (8k) skipped
  });
});

describe('engine hold', () => {
  const hold = (limit: number, over: Record<string, unknown> = {}) => lcCore({ offload: { route: OFFLOAD, wait_sec: 2, engine_queue_limit: limit }, routes: { hosted: null }, ...over });

  it('limit 1: the next stream reaches the engine only after the previous one’s first token', () => {
    const d = new MiniDriver(hold(1));
    const a = d.start(rq({ inputTokens: 10 }));
    const b = d.start(rq({ inputTokens: 10 }));
    expect(one(b.actions, 'acquire_slot')).toMatchObject({ endpointId: ENGINE, giveUpAtMs: 2 * S });
    d.now = 500;
    d.step(a.life, { kind: 'first_token', attemptId: one(a.actions, 'dispatch')!.attemptId });
    expect(all(d.actionsOf(b.life), 'dispatch').map((x) => x.endpointId)).toEqual([ENGINE]);
    expect(d.core.hold.snapshot()).toEqual([{ endpointId: ENGINE, limit: 1, held: 1, waiting: 0 }]);
  });

  it('an offloadable waiter leaves at the wait (queue_wait) before the engine sees it', () => {
    const d = new MiniDriver(hold(1));
    d.start(rq({ pin: ENGINE })); // holds the place with no engine wait of its own
    const b = d.start(rq());
    d.advanceTo(2 * S);
    const disp = all(d.actionsOf(b.life), 'dispatch');
    expect(disp.map((x) => x.endpointId)).toEqual([OFFLOAD]);
    const end = d.step(b.life, { kind: 'finished', attemptId: disp[0]!.attemptId, usage });
    expect(one(end, 'done')!.metadata.offloadReason).toBe('queue_wait');
  });

  it('a non-offloadable waiter (pinned) keeps its place to the 30 s acquire timeout, then goes in over the limit — never failed', () => {
    const d = new MiniDriver(hold(1));
    d.start(rq({ pin: ENGINE }));
    const b = d.start(rq({ pin: ENGINE }));
    expect(one(b.actions, 'acquire_slot')!.giveUpAtMs).toBe(30 * S);
    d.advanceTo(29 * S);
    expect(all(d.actionsOf(b.life), 'dispatch')).toHaveLength(0);
    d.advanceTo(30 * S);
    expect(all(d.actionsOf(b.life), 'dispatch').map((x) => x.endpointId)).toEqual([ENGINE]);
    expect(d.actionsOf(b.life).some((x) => x.kind === 'respond_error')).toBe(false);
    expect(d.core.hold.snapshot()[0]!.held).toBe(2);
  });

  it('a client disconnect while held releases the hold position; non-streaming requests are never held', () => {
    const d = new MiniDriver(hold(1));
    d.start(rq());
    const b = d.start(rq());
    expect(d.core.hold.snapshot()[0]!.waiting).toBe(1);
    d.step(b.life, { kind: 'client_gone' });
    expect(d.core.hold.snapshot()[0]!.waiting).toBe(0);
    expect(one(d.start(rq({ stream: false })).actions, 'dispatch')!.endpointId).toBe(ENGINE);
  });

  it('a limit change applies from the next request, to waiters too (engine shared: latest request wins)', () => {
    const core = new MiniDriver(hold(1));
    core.start(rq());
    const b = core.start(rq());
    expect(one(b.actions, 'acquire_slot')).toBeDefined();
    // Same engine, a request carrying limit 2 (simulated by acquiring directly with the new limit).
    const t = core.core.hold.acquire(ENGINE, 2, {}, 99);
    expect(t.state).toBe('queued'); // FIFO: behind b
    expect(all(core.actionsOf(b.life), 'dispatch')).toHaveLength(0); // b granted: wakeup pending
    expect(core.core.drainWakeups().map((w) => w.event)).toEqual([{ kind: 'slot_acquired', attemptId: one(b.actions, 'acquire_slot')!.attemptId }]);
    t.pool.release(t);
  });
});

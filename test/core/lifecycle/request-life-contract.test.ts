// One contract for a request's life, run on a model with its own `router:` routes and on a
// multi-target alias over direct models. A case that cannot apply to one kind says why.
import { describe, expect, it } from 'vitest';
import { RoutingCore, deriveRng, parseModelsConfig, type LifecycleAction, type LifecycleEvent, type Outcome, type RequestLife, type RouteRequest } from '../../../core/index.ts';
import { req } from '../harness.ts';
import { Life } from '../../../core/request/life.ts';

interface RouteSpec {
  name: string;
  contextLength?: number;
  /** Same provider label and `local: false` ⇒ one outbound-limiter key. */
  provider?: string;
}

interface Kind {
  readonly name: 'router' | 'alias';
  /** A core whose model `m` tries `routes` in declaration order (strategy `failover`). */
  build(routes: RouteSpec[], settings?: Record<string, unknown>, routing?: Record<string, unknown>): RoutingCore;
  /** The endpoint id of route `name`. */
  ep(name: string): string;
}

const route = (r: RouteSpec) => ({
  base_url: `sim://${r.name}`,
  ...(r.contextLength !== undefined && { context_length: r.contextLength }),
  ...(r.provider !== undefined && { provider: r.provider, local: false }),
});

const KINDS: Kind[] = [
  {
    name: 'router',
    build: (routes, settings = {}) => new RoutingCore(parseModelsConfig({ models: [{ id: 'm', router: 'failover', route: routes.map(route) }] }), { settings }),
    ep: (name) => `m:${name}`,
  },
  {
    name: 'alias',
    build: (routes, settings = {}, routing = {}) =>
      new RoutingCore(
        parseModelsConfig({
          models: [...routes.map((r) => ({ id: r.name, route: [route(r)] })), { id: 'm', routing: { strategy: 'failover', targets: routes.map((r) => ({ model: r.name })), ...routing } }],
        }),
        { settings },
      ),
    ep: (name) => `${name}:${name}`,
  },
];

type Dispatch = Extract<LifecycleAction, { kind: 'dispatch' }>;

/** Every drive by its life, so a slot granted to one life is delivered to its own drive. */
const drives = new Map<RequestLife, Drive>();

/** Drives one life on a virtual clock: performs `wait_until`s (the only timers a driver arms) as a driver would. */
class Drive {
  now = 0;
  readonly life: RequestLife;
  readonly all: LifecycleAction[] = [];
  readonly dispatches: Dispatch[] = [];
  private readonly waits = new Map<number, number>();

  constructor(
    readonly core: RoutingCore,
    request: RouteRequest,
    seed = 1,
  ) {
    const { life, actions } = core.start(request, 0, deriveRng(seed, 'contract'));
    this.life = life;
    drives.set(life, this);
    this.absorb(actions);
  }

  absorb(actions: LifecycleAction[]): LifecycleAction[] {
    for (const a of actions) {
      this.all.push(a);
      if (a.kind === 'wait_until') this.waits.set(a.deadlineId, a.atMs);
      if (a.kind === 'dispatch') this.dispatches.push(a);
    }
    for (const w of this.core.drainWakeups()) drives.get(w.life)?.step(w.event);
    this.life.invariants();
    return actions;
  }

  step(e: LifecycleEvent): LifecycleAction[] {
    return this.absorb(this.life.step(e, this.now));
  }

  /** Advances the clock by `ms`, firing due waits in time order (equal times: in arming order). */
  advance(ms: number): void {
    const end = this.now + ms;
    for (;;) {
      if (this.life.isDone) break;
      let at = Number.POSITIVE_INFINITY;
      let fire: (() => void) | null = null;
      for (const [id, t] of this.waits) if (t < at) [at, fire] = [t, () => (this.waits.delete(id), this.step({ kind: 'deadline', deadlineId: id }))];
      if (at > end || fire === null) break;
      this.now = Math.max(this.now, at);
      fire();
    }
    this.now = end;
  }

  get last(): Dispatch {
    return this.dispatches[this.dispatches.length - 1]!;
  }
  fail(outcome: Outcome): LifecycleAction[] {
    return this.step({ kind: 'failed', attemptId: this.last.attemptId, outcome });
  }
  succeed(): LifecycleAction[] {
    const id = this.last.attemptId;
    this.step({ kind: 'first_output', attemptId: id });
    this.step({ kind: 'first_token', attemptId: id });
    return this.step({ kind: 'finished', attemptId: id, usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 } });
  }
  get error() {
    return this.all.find((a): a is Extract<LifecycleAction, { kind: 'respond_error' }> => a.kind === 'respond_error');
  }
  get done() {
    return this.all.find((a): a is Extract<LifecycleAction, { kind: 'done' }> => a.kind === 'done');
  }
  get sentTo(): string[] {
    return this.dispatches.map((d) => d.endpointId);
  }
}

const http = (status: number, errorClass: Extract<Outcome, { kind: 'http_status' }>['errorClass'], retryAfterMs: number | null = null): Outcome => ({ kind: 'http_status', status, errorClass, retryAfterMs });
const mreq = (over: Partial<RouteRequest> = {}) => req({ model: 'm', outputTokensHint: null, ...over });

describe.each(KINDS)('request life contract: $name', (kind) => {
  const ab = () => kind.build([{ name: 'a' }, { name: 'b' }]);

  it('a success commits at the first token and ends with one done', () => {
    const d = new Drive(ab(), mreq());
    expect(d.sentTo).toEqual([kind.ep('a')]);
    d.succeed();
    expect(d.all.filter((a) => a.kind === 'commit')).toHaveLength(1);
    expect(d.done?.metadata).toMatchObject({ status: 'ok', endpointId: kind.ep('a') });
    expect(d.error).toBeUndefined();
  });

  it('a bare 503 fails over and counts against the endpoint', () => {
    const core = ab();
    const d = new Drive(core, mreq());
    d.fail(http(503, 'server_error'));
    expect(d.sentTo).toEqual([kind.ep('a'), kind.ep('b')]);
    d.succeed();
    expect(d.done?.metadata.status).toBe('ok');
    expect(core.health.snapshotOf(kind.ep('a'), d.now).consecutiveFailures).toBe(1);
  });

  it('a 503 with Retry-After is busy: fail over, no breaker failure, the endpoint is skipped until then', () => {
    const core = ab();
    const d = new Drive(core, mreq({ stream: false }));
    d.fail(http(503, 'overloaded', 10_000));
    expect(d.sentTo).toEqual([kind.ep('a'), kind.ep('b')]);
    d.succeed();
    expect(core.health.snapshotOf(kind.ep('a'), d.now).consecutiveFailures).toBe(0);
    const next = new Drive(core, mreq());
    expect(next.sentTo).toEqual([kind.ep('b')]);
  });

  it('a malformed 400 goes back to the caller and is never sent to another route', () => {
    const d = new Drive(ab(), mreq());
    d.fail(http(400, 'client_error'));
    expect(d.sentTo).toEqual([kind.ep('a')]);
    expect(d.error).toMatchObject({ status: 400, code: 'upstream_client_error', attemptId: d.last.attemptId });
  });

  it('an upstream 404 falls back (a route configuration error), reported as 502 when every route answers it', () => {
    const d = new Drive(ab(), mreq());
    d.fail(http(404, 'route_not_found'));
    expect(d.sentTo).toEqual([kind.ep('a'), kind.ep('b')]);
    d.fail(http(404, 'route_not_found'));
    expect(d.error).toMatchObject({ status: 502, code: 'upstream_route_not_found' });
  });

  it('context-window floor: a prompt plus max_tokens that does not fit skips small windows; none fits ⇒ 400', () => {
    const core = kind.build([{ name: 'a', contextLength: 4096 }, { name: 'b', contextLength: 8192 }]);
    const d = new Drive(core, mreq({ inputTokens: 100, outputTokensHint: 6000 }));
    expect(d.sentTo).toEqual([kind.ep('b')]);
    const none = new Drive(core, mreq({ inputTokens: 3000, outputTokensHint: 6000 }));
    expect(none.sentTo).toEqual([]);
    expect(none.error).toMatchObject({ status: 400, code: 'context_length_exceeded' });
  });

  it('a context-length refusal moves on only to a larger window, and goes back when none is left', () => {
    const core = kind.build([{ name: 'a', contextLength: 4096 }, { name: 'b', contextLength: 4096 }, { name: 'c', contextLength: 16384 }]);
    const d = new Drive(core, mreq({ inputTokens: 3000 }));
    d.fail(http(400, 'context_length'));
    expect(d.sentTo).toEqual([kind.ep('a'), kind.ep('c')]);
    d.fail(http(400, 'context_length'));
    expect(d.error).toMatchObject({ status: 400, code: 'upstream_context_length' });
  });

  it('every route cooling after a 429 Retry-After ⇒ 429 with Retry-After, not 503', () => {
    const core = ab();
    for (const name of ['a', 'b']) core.retryAfter.set(kind.ep(name), 7_000, 429);
    const d = new Drive(core, mreq());
    expect(d.sentTo).toEqual([]);
    expect(d.error).toMatchObject({ status: 429, code: 'upstream_rate_limited', retryAfterSec: 7 });
  });

  it('the overall deadline ends a request that never answers with 504', () => {
    const d = new Drive(kind.build([{ name: 'a' }], { timeout_overall_sec: 10, timeout_headers_sec: 100, timeout_first_token_sec: 100 }), mreq());
    d.advance(10_001);
    expect(d.error).toMatchObject({ status: 504, code: 'upstream_timeout' });
    expect(d.life.isDone).toBe(true);
  });

  it('the headers deadline fails a silent upstream over to the next route', () => {
    const d = new Drive(kind.build([{ name: 'a' }, { name: 'b' }], { timeout_headers_sec: 5 }), mreq({ stream: false }));
    d.advance(5_001);
    expect(d.sentTo).toEqual([kind.ep('a'), kind.ep('b')]);
    expect(d.all.some((a) => a.kind === 'cancel' && a.attemptId === d.dispatches[0]!.attemptId)).toBe(true);
  });

  it("a stream's first-token wait is the core's own wait_until: no token by then ⇒ cancelled as first_token_timeout, then the next route", () => {
    // `router:` models take the deployment's timeout_first_token_sec, aliases their stream_timeout_ms.
    const d = new Drive(kind.build([{ name: 'a' }, { name: 'b' }], { timeout_first_token_sec: 3, timeout_headers_sec: 100 }, { stream_timeout_ms: 3_000 }), mreq({ stream: true }));
    const first = d.last.attemptId;
    expect(Object.keys(d.last).sort()).toEqual(['attemptId', 'endpointId', 'kind']); // nothing for the driver to enforce
    expect(d.all.filter((a) => a.kind === 'wait_until').map((w) => w.atMs)).toContain(3_000);
    d.step({ kind: 'first_output', attemptId: first }); // headers (or a role-only delta) are not a token
    d.advance(3_000);
    expect(d.all).toContainEqual({ kind: 'cancel', attemptId: first, reason: 'first_token_timeout' });
    expect(d.sentTo).toEqual([kind.ep('a'), kind.ep('b')]);
    // The next attempt's first token forgets its wait: nothing fires when it is due.
    const second = d.last.attemptId;
    d.advance(1_000);
    d.step({ kind: 'first_output', attemptId: second });
    d.step({ kind: 'first_token', attemptId: second });
    const before = d.all.length;
    d.advance(3_000);
    expect(d.all.slice(before).filter((a) => a.kind !== 'wait_until')).toEqual([]);
    d.step({ kind: 'finished', attemptId: second, usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 } });
    expect(d.done?.metadata.attempts.map((a) => a.outcome.kind)).toEqual(['first_token_timeout', 'ok']);
  });

  it('the stream-idle wait is armed by chunk events and ends a stalled committed stream in-band', () => {
    const d = new Drive(kind.build([{ name: 'a' }], { timeout_stream_idle_sec: 2 }), mreq({ stream: true }));
    const id = d.last.attemptId;
    d.step({ kind: 'first_output', attemptId: id });
    d.step({ kind: 'first_token', attemptId: id });
    d.step({ kind: 'chunk', attemptId: id });
    d.advance(1_500);
    d.step({ kind: 'chunk', attemptId: id }); // a chunk in time pushes the wait on
    d.advance(1_500);
    expect(d.life.isDone).toBe(false);
    d.advance(1_000);
    expect(d.error).toMatchObject({ status: 504, code: 'upstream_timeout' });
  });

  it('attempts over one provider key share its outbound limit: the second request queues for a slot', () => {
    const core = kind.build([{ name: 'a', provider: 'p' }], { upstream_concurrency_initial_limit: 1 });
    const first = new Drive(core, mreq());
    const second = new Drive(core, mreq());
    expect(first.sentTo).toEqual([kind.ep('a')]);
    expect(second.sentTo).toEqual([]);
    expect(second.all.some((a) => a.kind === 'acquire_slot')).toBe(true);
    // The freed slot goes to the queued attempt (delivered from drainWakeups, as a driver does).
    first.succeed();
    expect(second.sentTo).toEqual([kind.ep('a')]);
    second.succeed();
    expect(second.done?.metadata.status).toBe('ok');
    core.invariants();
    expect(core.limiter.totalHeld()).toBe(0);
  });

  it('a first attempt queued for an outbound slot past the overall deadline ends with the overall timeout, at that deadline', () => {
    const settings = { upstream_concurrency_initial_limit: 1, upstream_concurrency_acquire_timeout_sec: 60, timeout_overall_sec: 10 };
    const core = kind.build([{ name: 'a', provider: 'p' }], settings);
    const holder = new Drive(core, mreq()); // takes the provider key's only slot and never answers in time
    const queued = new Drive(core, mreq());
    const acquire = queued.all.find((a): a is Extract<LifecycleAction, { kind: 'acquire_slot' }> => a.kind === 'acquire_slot');
    expect(acquire?.giveUpAtMs).toBe(10_000); // the queue give-up is capped by the overall deadline
    queued.advance(9_999);
    expect(queued.life.isDone).toBe(false);
    queued.advance(1);
    expect(queued.sentTo).toEqual([]);
    expect(queued.error).toMatchObject({ status: 504, code: 'upstream_timeout' });
    expect(queued.error?.message).toContain('overall deadline');
    expect(queued.done?.metadata.finishedAtMs).toBe(10_000);
    holder.step({ kind: 'client_gone' });
    core.invariants();
    expect(core.limiter.totalHeld()).toBe(0);
  });

  it("the first attempt's bounds are capped by the overall deadline: a stream's total is that deadline, a non-stream total past it is not armed", () => {
    const settings = { timeout_overall_sec: 10, timeout_request_sec: 600, timeout_headers_sec: 5, timeout_first_token_sec: 600 };
    for (const stream of [true, false]) {
      const d = new Drive(kind.build([{ name: 'a' }], settings), mreq({ stream }));
      expect(Object.keys(d.last).sort()).toEqual(['attemptId', 'endpointId', 'kind']); // no bound for the driver to arm
      // The core's own waits: headers (+5 s) and the overall deadline (+10 s); no separate total.
      // A router stream's first-token wait (600 s) is capped at the overall deadline.
      const waits = d.all.filter((a) => a.kind === 'wait_until').map((w) => w.atMs).sort((x, y) => x - y);
      expect(waits).toEqual(kind.name === 'router' && stream ? [5_000, 10_000, 10_000] : [5_000, 10_000]);
    }
  });

  it("a non-stream attempt's total is one core wait_until: when it fires the attempt is cancelled and the request fails over", () => {
    const d = new Drive(kind.build([{ name: 'a' }, { name: 'b' }], { timeout_request_sec: 5, timeout_headers_sec: 100 }), mreq({ stream: false }));
    const first = d.last.attemptId;
    expect(d.all.filter((a) => a.kind === 'wait_until' && a.atMs === 5_000)).toHaveLength(1); // armed once, by the core
    d.step({ kind: 'first_output', attemptId: first }); // headers came; the body never completes
    d.advance(4_999);
    expect(d.sentTo).toEqual([kind.ep('a')]);
    d.advance(1);
    expect(d.all.some((a) => a.kind === 'cancel' && a.attemptId === first)).toBe(true);
    expect(d.sentTo).toEqual([kind.ep('a'), kind.ep('b')]);
    d.succeed();
    expect(d.done?.metadata.attempts[0]).toMatchObject({ endpointId: kind.ep('a'), endMs: 5_000, outcome: { kind: 'transport', cause: 'timeout' } });
    expect(d.done?.metadata.status).toBe('ok');
  });

  it("a stream's per-attempt total is the core's overall deadline: a committed stream that never ends gets an in-band 504 at it", () => {
    const d = new Drive(kind.build([{ name: 'a' }], { timeout_overall_sec: 3, timeout_stream_idle_sec: 100 }), mreq({ stream: true }));
    const id = d.last.attemptId;
    d.step({ kind: 'first_output', attemptId: id });
    d.step({ kind: 'first_token', attemptId: id });
    expect(d.all.some((a) => a.kind === 'commit' && a.attemptId === id)).toBe(true);
    for (let t = 100; t < 3_000; t += 100) {
      d.advance(100);
      d.step({ kind: 'chunk', attemptId: id }); // a chunk every 100 ms, forever
    }
    expect(d.life.isDone).toBe(false);
    d.advance(100);
    expect(d.all.some((a) => a.kind === 'cancel' && a.attemptId === id)).toBe(true);
    expect(d.error).toMatchObject({ status: 504, code: 'upstream_timeout' });
    expect(d.done?.metadata.finishedAtMs).toBe(3_000);
  });

  it('the client leaving ends the life with one done and no error response', () => {
    const d = new Drive(ab(), mreq());
    d.step({ kind: 'client_gone' });
    expect(d.done?.metadata.status).toBe('client_gone');
    expect(d.error).toBeUndefined();
  });

  it('same seed ⇒ same decisions', () => {
    const run = (seed: number) => {
      const core = kind.build([{ name: 'a' }, { name: 'b' }, { name: 'c' }]);
      const out: string[] = [];
      for (let i = 0; i < 20; i++) {
        const d = new Drive(core, mreq({ requestId: `s${i}` }), seed);
        if (i % 3 === 0) d.fail(http(503, 'server_error'));
        d.succeed();
        out.push(JSON.stringify(d.all));
      }
      return out;
    };
    expect(run(5)).toEqual(run(5));
  });

  it('one life: the same state machine and the same attempt record for both kinds', () => {
    const d = new Drive(ab(), mreq());
    expect(d.life).toBeInstanceOf(Life);
    d.fail(http(503, 'server_error'));
    d.succeed();
    const attempts = d.done!.metadata.attempts;
    expect(attempts.map((a) => [a.endpointId, a.outcome.kind])).toEqual([
      [kind.ep('a'), 'http_status'],
      [kind.ep('b'), 'ok'],
    ]);
    // Aliases add the target and its usage to each record; both kinds share the rest.
    for (const a of attempts) expect(a.target !== undefined).toBe(kind.name === 'alias');
  });

  it.skipIf(kind.name === 'router')('an upstream Retry-After longer than the backoff cap is waited for in full (same-target retry)', () => {
    // Per-model routers never retry the same route: they fail over and skip the route until its
    // Retry-After passes (the busy case above), so this case is the alias family's.
    const core = kind.build([{ name: 'a' }], {}, { retries: 1, retry_on_429: true });
    const d = new Drive(core, mreq());
    d.fail(http(429, 'rate_limited', 12_000));
    const wait = d.all.filter((a): a is Extract<LifecycleAction, { kind: 'wait_until' }> => a.kind === 'wait_until').pop()!;
    expect(wait.atMs).toBeGreaterThanOrEqual(12_000);
    d.advance(11_000);
    expect(d.dispatches).toHaveLength(1);
    d.advance(1_001);
    expect(d.dispatches).toHaveLength(2);
  });

  it.skipIf(kind.name === 'router')('a Retry-After beyond what the request may wait returns the 429 with the hint', () => {
    // Alias family only, as above.
    const core = kind.build([{ name: 'a' }], { timeout_overall_sec: 30 }, { retries: 1, retry_on_429: true });
    const d = new Drive(core, mreq());
    d.fail(http(429, 'rate_limited', 60_000));
    expect(d.dispatches).toHaveLength(1);
    expect(d.error).toMatchObject({ status: 429, code: 'upstream_rate_limited', retryAfterSec: 60 });
  });

  it.skipIf(kind.name === 'router')("a model's own timeout_ms is the stream's first-chunk wait when stream_timeout_ms is absent", () => {
    // `timeout_ms` is a field of a multi-target `routing:` block (seed 003); per-model routers use
    // the deployment's timeout_first_token_sec.
    const core = kind.build([{ name: 'a' }, { name: 'b' }], {}, { timeout_ms: 3_000 });
    const d = new Drive(core, mreq({ stream: true }));
    expect(d.all.some((a) => a.kind === 'wait_until' && a.atMs === 3_000)).toBe(true); // the first-token wait
    d.step({ kind: 'first_output', attemptId: d.last.attemptId });
    expect(d.all.some((a) => a.kind === 'commit')).toBe(false); // waits for the first chunk, not the response start
    d.advance(3_001);
    expect(d.sentTo).toEqual([kind.ep('a'), kind.ep('b')]);
  });

  for (const excludeOwn of [false, true]) {
    it.skipIf(kind.name === 'alias')(`session affinity: a caller’s own prefill ${excludeOwn ? 'does not count (prefill_affinity_exclude_own)' : 'counts against its ceiling (seed 000, the default)'}`, () => {
      // Multi-target aliases have no session affinity (seed 003 has none).
      const settings = { prefill_affinity_ceiling: 1_000, ...(excludeOwn ? { prefill_affinity_exclude_own: true } : {}) };
      const core = new RoutingCore(parseModelsConfig({ models: [{ id: 'm', router: 'fixed', route: [route({ name: 'a' }), route({ name: 'b' })] }] }), { settings });
      const first = new Drive(core, mreq({ callerId: 'key:1', inputTokens: 5_000 }));
      const pinned = first.last.endpointId;
      first.succeed();
      const big = new Drive(core, mreq({ callerId: 'key:1', inputTokens: 12_000 })); // 7,000 beyond its cached prefix
      expect(big.last.endpointId).toBe(pinned);
      expect(core.prefill.backlogTokens(pinned)).toBeGreaterThan(1_000);
      // While its own 7,000-token prefill runs there, the same caller's next turn stays pinned
      // only when its own backlog is exempt; by default it is moved like anyone else's.
      const again = new Drive(core, mreq({ callerId: 'key:1', inputTokens: 10 }));
      again.succeed();
      if (excludeOwn) expect(again.done?.metadata).toMatchObject({ endpointId: pinned, reason: 'affinity' });
      else expect(again.done?.metadata?.endpointId).not.toBe(pinned);
      big.succeed();
    });
  }
});

// Background health checks as core state (seed 000's report-only checks, seed 003's enforcing
// checks of direct models): the threshold state machine, its invariant under any result
// sequence, and what an enforcing check does to candidate sets and the hash ring.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { HealthCheckRegistry, parseModelsConfig, RoutingCore, type HealthCheckMode, type HealthCheckPolicy, type HealthCheckResult } from '../../../core/index.ts';
import { seeded } from '../harness.ts';
import { drive, ep, group, makeMtCore, mreq, ok, reset } from '../multi-target/mt-harness.ts';

const policy = (over: Partial<HealthCheckPolicy> = {}): HealthCheckPolicy => ({ mode: 'enforce', intervalMs: 1_000, timeoutMs: 500, unhealthyThreshold: 3, healthyThreshold: 2, ...over });
const pass: HealthCheckResult = { passed: true, reason: null, latencyMs: 5 };
const fail = (reason = 'http_503'): HealthCheckResult => ({ passed: false, reason, latencyMs: 7 });
const hc = (over: Record<string, unknown> = {}) => ({ mode: 'enforce', interval_sec: 1, unhealthy_threshold: 2, healthy_threshold: 2, ...over });

describe('the health-check state machine', () => {
  it('unhealthy after unhealthy_threshold failures in a row, healthy again after healthy_threshold passes in a row', () => {
    const r = new HealthCheckRegistry();
    r.configure('a', policy());
    expect(r.status('a')).toMatchObject({ state: 'healthy', excluded: false, probes: 0, lastResult: null });
    expect(r.record('a', fail(), 1)).toBeNull();
    expect(r.record('a', fail(), 2)).toBeNull();
    expect(r.record('a', pass, 3)).toBeNull(); // the run is broken: counting starts again
    expect(r.record('a', fail(), 4)).toBeNull();
    expect(r.record('a', fail(), 5)).toBeNull();
    expect(r.record('a', fail('timeout'), 6)).toEqual({ endpointId: 'a', mode: 'enforce', from: 'healthy', to: 'unhealthy', atMs: 6, reason: 'timeout' });
    expect(r.excludes('a')).toBe(true);
    expect(r.record('a', pass, 7)).toBeNull();
    expect(r.record('a', fail(), 8)).toBeNull(); // a failure resets the pass run
    expect(r.record('a', pass, 9)).toBeNull();
    expect(r.record('a', pass, 10)).toMatchObject({ from: 'unhealthy', to: 'healthy', atMs: 10, reason: null });
    expect(r.status('a')).toMatchObject({ state: 'healthy', excluded: false, probes: 10, consecutivePasses: 2, lastFailureReason: 'http_503', lastCheckedAtMs: 10, changedAtMs: 10 });
    r.invariants();
  });

  it('report_only reads unhealthy but never excludes', () => {
    const r = new HealthCheckRegistry();
    r.configure('a', policy({ mode: 'report_only', unhealthyThreshold: 1 }));
    expect(r.record('a', fail(), 1)).toMatchObject({ mode: 'report_only', to: 'unhealthy' });
    expect(r.status('a')).toMatchObject({ state: 'unhealthy', excluded: false });
    expect(r.excludes('a')).toBe(false);
    expect(r.excludesNone).toBe(true);
  });

  it('refuses a result for an endpoint without a check, and bad policies, naming the field', () => {
    const r = new HealthCheckRegistry();
    expect(() => r.record('x', pass, 0)).toThrow(/'x', which has no health_check configured/);
    expect(() => r.configure('a', policy({ unhealthyThreshold: 0 }))).toThrow(/unhealthyThreshold must be an integer >= 1/);
    expect(() => r.configure('a', policy({ intervalMs: 0 }))).toThrow(/intervalMs must be a finite number of ms > 0/);
    r.configure('a', policy());
    expect(() => r.record('a', pass, Number.NaN)).toThrow(RangeError);
  });

  it('a reload keeps the state of an unchanged check and starts a changed one fresh', () => {
    const prev = new HealthCheckRegistry();
    prev.configure('a', policy({ unhealthyThreshold: 1 }));
    prev.configure('b', policy({ unhealthyThreshold: 1 }));
    prev.record('a', fail(), 1);
    prev.record('b', fail(), 1);
    const next = new HealthCheckRegistry();
    next.configure('a', policy({ unhealthyThreshold: 1, intervalMs: 9_000 })); // interval only: kept
    next.configure('b', policy({ unhealthyThreshold: 1, mode: 'report_only' })); // mode changed: fresh
    next.carryFrom(prev);
    expect(next.excludes('a')).toBe(true);
    expect(next.status('b')).toMatchObject({ state: 'healthy', probes: 0 });
    next.invariants();
  });

  it('property: after any result sequence the state is the threshold rule applied to it, and excluded iff enforce and unhealthy', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 5 }),
        fc.constantFrom<HealthCheckMode>('report_only', 'enforce'),
        fc.array(fc.boolean(), { maxLength: 60 }),
        (unhealthyThreshold, healthyThreshold, mode, results) => {
          const r = new HealthCheckRegistry();
          r.configure('e', policy({ mode, unhealthyThreshold, healthyThreshold }));
          let unhealthy = false; // the reference model
          const seen: boolean[] = [];
          results.forEach((passed, i) => {
            const t = r.record('e', passed ? pass : fail(), i);
            seen.push(passed);
            const tail = (n: number, v: boolean) => seen.length >= n && seen.slice(-n).every((x) => x === v);
            const before = unhealthy;
            if (!unhealthy && tail(unhealthyThreshold, false)) unhealthy = true;
            else if (unhealthy && tail(healthyThreshold, true)) unhealthy = false;
            const s = r.status('e')!;
            expect(s.state).toBe(unhealthy ? 'unhealthy' : 'healthy');
            expect(r.excludes('e')).toBe(mode === 'enforce' && unhealthy);
            expect(t === null).toBe(before === unhealthy);
            // The direct statements: N failures last ⇒ unhealthy; M passes last ⇒ healthy.
            if (tail(unhealthyThreshold, false)) expect(s.state).toBe('unhealthy');
            if (tail(healthyThreshold, true)) expect(s.state).toBe('healthy');
            r.invariants();
          });
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('health checks in the routing core', () => {
  const names = ['a', 'b', 'c', 'd'];
  const keys = Array.from({ length: 400 }, (_, i) => `user-${i}`);
  const route = (core: RoutingCore, now: number) => keys.map((k) => drive(core, mreq({ callerId: k }), now, seeded(1), () => ok).done.metadata.servedBy);
  const failProbes = (core: RoutingCore, id: string, n: number, at: number) => {
    for (let i = 0; i < n; i++) core.recordHealthCheck(ep(id), fail(), at + i);
  };

  it('an enforcing check takes a failing target off the hash ring (only its keys move) and back once it passes', () => {
    const core = makeMtCore(names.map((id) => ({ id, healthCheck: hc() })), [group('g', names, { strategy: 'consistent_hash' })]);
    const before = route(core, 0);
    failProbes(core, 'b', 2, 1);
    expect(core.multiTargetStatus(3)[0]!.targets[1]).toMatchObject({ model: 'b', status: 'unhealthy', statusReason: 'health_check_failed', healthCheck: { mode: 'enforce', state: 'unhealthy' } });
    const during = route(core, 10);
    for (let i = 0; i < keys.length; i++) {
      if (before[i] === 'b') expect(during[i]).not.toBe('b');
      else expect(during[i]).toBe(before[i]);
    }
    expect(before.filter((x) => x === 'b').length).toBeGreaterThan(50);
    core.recordHealthCheck(ep('b'), pass, 20);
    core.recordHealthCheck(ep('b'), pass, 21);
    expect(route(core, 30)).toEqual(before);
    core.invariants();
  });

  it('a report-only check changes no routing', () => {
    const core = makeMtCore(names.map((id) => ({ id, healthCheck: hc({ mode: 'report_only' }) })), [group('g', names, { strategy: 'consistent_hash' })]);
    const before = route(core, 0);
    failProbes(core, 'b', 5, 1);
    expect(core.healthChecks.status(ep('b'))).toMatchObject({ mode: 'report_only', state: 'unhealthy', excluded: false });
    expect(core.multiTargetStatus(10)[0]!.targets[1]).toMatchObject({ status: 'healthy' });
    expect(route(core, 10)).toEqual(before);
  });

  it('every target held out ⇒ 503 naming health_check_failed; try_anyway tries one anyway', () => {
    const directs = ['a', 'b'].map((id) => ({ id, healthCheck: hc() }));
    const strict = makeMtCore(directs, [group('g', ['a', 'b'])]);
    for (const id of ['a', 'b']) failProbes(strict, id, 2, 0);
    const r = drive(strict, mreq(), 5, seeded(1), () => ok);
    expect(r.error).toMatchObject({ status: 503, code: 'all_candidates_unavailable' });
    expect(r.error!.message).toContain('a (unhealthy: health_check_failed)');
    const anyway = makeMtCore(directs, [group('g', ['a', 'b'], { when_all_unavailable: 'try_anyway' })]);
    for (const id of ['a', 'b']) failProbes(anyway, id, 2, 0);
    expect(drive(anyway, mreq(), 5, seeded(1), () => ok).done.metadata).toMatchObject({ status: 'ok', reason: 'try_anyway' });
  });

  it('a per-model router leaves an enforced-unhealthy route out of its candidates; a route-level block wins over the model-level one', () => {
    const cfg = parseModelsConfig({
      models: [{ id: 'm', health_check: hc({ mode: 'report_only' }), route: [{ base_url: 'sim://x', health_check: hc() }, { base_url: 'sim://y' }] }],
    });
    const core = new RoutingCore(cfg);
    const [x, y] = core.model('m')!.routes.map((r) => r.endpointId) as [string, string];
    expect(core.healthChecks.policyOf(x)!.mode).toBe('enforce');
    expect(core.healthChecks.policyOf(y)!.mode).toBe('report_only');
    core.recordHealthCheck(x, fail(), 0);
    core.recordHealthCheck(x, fail(), 1);
    for (let i = 0; i < 40; i++) expect(drive(core, mreq({ model: 'm' }), 10 + i, seeded(i), () => ok).dispatched).toEqual([y]);
    const only = new RoutingCore(parseModelsConfig({ models: [{ id: 'n', route: [{ base_url: 'sim://z', health_check: hc() }] }] }));
    const z = only.model('n')!.routes[0]!.endpointId;
    only.recordHealthCheck(z, fail(), 0);
    only.recordHealthCheck(z, fail(), 1);
    const r = drive(only, mreq({ model: 'n' }), 5, seeded(1), () => ok);
    expect(r.dispatched).toEqual([]);
    expect(r.error).toMatchObject({ status: 503 });
    expect(r.error!.message).toContain(`${z} (unhealthy: health_check_failed)`);
  });

  it('a failing probe never touches the breaker, and a request outcome never feeds the check', () => {
    const core = makeMtCore([{ id: 'a', healthCheck: hc() }, 'b'], [group('g', ['a', 'b'])]);
    failProbes(core, 'a', 5, 0);
    expect(core.health.snapshotOf(ep('a'), 10)).toMatchObject({ state: 'closed', consecutiveFailures: 0, availability: 1 });
    const core2 = makeMtCore([{ id: 'a', healthCheck: hc() }, 'b'], [group('g', ['a', 'b'])]);
    for (let t = 0; t < 5; t++) drive(core2, mreq(), t, seeded(t), (id) => (id === ep('a') ? reset : ok));
    expect(core2.healthChecks.status(ep('a'))).toMatchObject({ state: 'healthy', probes: 0 });
  });

  it('config: a multi-target model cannot carry health_check:, and the fields are checked', () => {
    expect(() => parseModelsConfig({ models: [{ id: 'a', route: [{ base_url: 'sim://a' }] }, { id: 'g', health_check: hc(), routing: { targets: [{ model: 'a' }] } }] })).toThrow(/health_check: belongs on its target \(direct\) models/);
    expect(() => parseModelsConfig({ models: [{ id: 'a', route: [{ base_url: 'sim://a', health_check: { mode: 'strict' } }] }] })).toThrow(/health_check\.mode/);
    expect(() => parseModelsConfig({ models: [{ id: 'a', route: [{ base_url: 'sim://a', health_check: { unhealthy_threshold: 0 } }] }] })).toThrow(/health_check\.unhealthy_threshold/);
    expect(parseModelsConfig({ models: [{ id: 'a', route: [{ base_url: 'sim://a', health_check: {} }] }] }).models[0]!.route[0]!.health_check).toEqual({ mode: 'report_only', interval_sec: 30, timeout_ms: 5_000, unhealthy_threshold: 3, healthy_threshold: 2 });
  });

  it('a new generation keeps the verdict of an unchanged check', () => {
    const directs = [{ id: 'a', healthCheck: hc() }, 'b'];
    const first = makeMtCore(directs, [group('g', ['a', 'b'])]);
    failProbes(first, 'a', 2, 0);
    const second = makeMtCore(directs, [group('g', ['a', 'b'])], { carryFrom: first });
    expect(second.healthChecks.excludes(ep('a'))).toBe(true);
    expect(drive(second, mreq(), 10, seeded(1), () => ok).dispatched).toEqual([ep('b')]);
  });
});

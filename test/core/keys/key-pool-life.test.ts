// Key pools inside the request life (seed 000 "为某个层级预留上游 key"), through `RoutingCore`:
// which key an attempt sends with, a refusal that falls back to the next route, a key-related
// failure that silences only the key, and which refusals the endpoint's breaker hears of.
import { describe, expect, it } from 'vitest';
import { RoutingCore, deriveRng, keyFingerprint, parseModelsConfig, type CallerRole, type Outcome, type RequestRole } from '../../../core/index.ts';
import { dispatchOf, req, runOne } from '../harness.ts';

const rate429: Outcome = { kind: 'http_status', status: 429, errorClass: 'rate_limited', retryAfterMs: null };
const auth401: Outcome = { kind: 'http_status', status: 401, errorClass: 'auth_rejected', retryAfterMs: null };
const ok: Outcome = { kind: 'ok' };

/** A model with a pooled first route (`pool`) and, optionally, a plain fallback route (`spare`). */
function core(keys: Array<{ key: string; min_role?: CallerRole; id?: string }>, spare = true): RoutingCore {
  const models: unknown[] = [
    {
      id: 'm',
      router: 'failover',
      route: [
        { base_url: 'sim://pool', provider: 'acme', api_keys: keys },
        ...(spare ? [{ base_url: 'sim://spare', provider: 'spare' }] : []),
      ],
    },
  ];
  return new RoutingCore(parseModelsConfig({ models }), { health: { failureThreshold: 2 } });
}

const POOL = 'm:pool';
function endpoint(c: RoutingCore, suffix: string): string {
  return c.model('m')!.routes.find((r) => r.endpointId.includes(suffix))!.endpointId;
}
function run(c: RoutingCore, role: RequestRole, outcomeFor: (endpointId: string, keyId: string | undefined) => Outcome, callerId: string | null = null, model = 'm') {
  const keys: Array<string | undefined> = [];
  const r = runOne(c, 0, deriveRng(1, 't'), (e) => outcomeFor(e, undefined), req({ model, callerRole: role, callerId }));
  for (const a of r.actions) if (a.kind === 'dispatch') keys.push(a.key?.keyId);
  return { ...r, keys };
}

describe('key pools in the request life', () => {
  it('the chosen key reaches the dispatch by id and fingerprint, never the secret; it is logged by id', () => {
    const c = core([{ key: 'sk-shared', id: 'shared' }, { key: 'sk-pro', id: 'pro', min_role: 'pro' }]);
    const { life, actions } = c.start(req({ callerRole: 'free' }), 0, deriveRng(1, 't'));
    const d = dispatchOf(actions)!;
    expect(d.key).toEqual({ keyId: 'shared', fingerprint: keyFingerprint('sk-shared') });
    expect(JSON.stringify(actions)).not.toContain('sk-shared');
    const end = life.step({ kind: 'finished', attemptId: d.attemptId, usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 } }, 1);
    const done = end.find((a) => a.kind === 'done')!;
    expect(done.kind === 'done' && done.metadata.attempts[0]!.keyId).toBe('shared');
  });

  it('a free caller never uses a pro key; a pro caller drains its reserved key first', () => {
    const c = core([{ key: 'sk-shared', id: 'shared' }, { key: 'sk-pro', id: 'pro', min_role: 'pro' }]);
    for (let i = 0; i < 10; i++) expect(run(c, 'free', () => ok, `f${i}`).keys).toEqual(['shared']);
    for (let i = 0; i < 10; i++) expect(run(c, 'pro', () => ok, `p${i}`).keys).toEqual(['pro']);
    for (let i = 0; i < 3; i++) expect(run(c, 'admin', () => ok, `a${i}`).keys).toEqual(['pro']);
  });

  it('a free caller whose only keys are reserved falls back to the next route; the pool\'s breaker never opens', () => {
    const c = core([{ key: 'sk-pro', id: 'pro', min_role: 'pro' }]);
    const pool = endpoint(c, 'pool');
    for (let i = 0; i < 20; i++) {
      const r = run(c, 'free', () => ok);
      expect(r.done.metadata.endpointId).toBe(endpoint(c, 'spare'));
      expect(r.done.metadata.attempts[0]!.outcome).toEqual({ kind: 'key_pool_exhausted', roleRestricted: true });
    }
    expect(c.health.snapshotOf(pool, 0).state).toBe('closed');
    expect(c.health.snapshotOf(pool, 0).consecutiveFailures).toBe(0);
    expect(run(c, 'pro', () => ok).done.metadata.endpointId).toBe(pool); // the pro tier is still served
  });

  it('without a fallback route, a role-restricted refusal is a 503 key_pool_exhausted', () => {
    const c = core([{ key: 'sk-pro', min_role: 'pro' }], false);
    const r = run(c, 'free', () => ok);
    expect(r.error).toMatchObject({ code: 'key_pool_exhausted', status: 503 });
  });

  it('a 429 on one key silences only that key: the request goes on with the next key and the breaker hears nothing', () => {
    const c = core([{ key: 'sk-a', id: 'a' }, { key: 'sk-b', id: 'b' }], false);
    const pool = endpoint(c, 'pool');
    let failedKey: string | null = null;
    const { life, actions } = c.start(req({ callerRole: 'free', callerId: 'u' }), 0, deriveRng(1, 't'));
    const d1 = dispatchOf(actions)!;
    failedKey = d1.key!.keyId;
    const next = life.step({ kind: 'failed', attemptId: d1.attemptId, outcome: rate429 }, 10);
    const d2 = dispatchOf(next)!;
    expect(d2.endpointId).toBe(pool);
    expect(d2.key!.keyId).not.toBe(failedKey);
    life.step({ kind: 'finished', attemptId: d2.attemptId, usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 } }, 20);
    life.invariants();
    expect(c.health.snapshotOf(pool, 20).consecutiveFailures).toBe(0);
    // Later requests skip the silenced key until it returns by itself (60 s without Retry-After).
    for (let i = 0; i < 5; i++) expect(run(c, 'free', () => ok, `x${i}`).keys).not.toContain(failedKey);
    expect(c.keyPools.pool(pool)!.isSilenced(keyFingerprint(failedKey === 'a' ? 'sk-a' : 'sk-b'), 60_011)).toBe(false);
  });

  it('a key refused with 401 does not degrade the endpoint while another key remains; when every key is silenced it does', () => {
    const c = core([{ key: 'sk-a', id: 'a' }, { key: 'sk-b', id: 'b' }]);
    const pool = endpoint(c, 'pool');
    const r = run(c, 'free', (e) => (e === pool ? auth401 : ok));
    // Both keys failed with 401 in turn; the second silenced the last key: the endpoint is degraded, then the spare served.
    expect(r.keys.slice(0, 2).sort()).toEqual(['a', 'b']);
    expect(r.done.metadata.endpointId).toBe(endpoint(c, 'spare'));
    expect(c.health.snapshotOf(pool, 0).state).toBe('open');
  });

  it('a pool nobody can use (every key silenced) is a plain KeyPoolExhausted and counts against the endpoint', () => {
    const c = core([{ key: 'sk-a' }]);
    const pool = endpoint(c, 'pool');
    c.keyPools.pool(pool)!.silence(keyFingerprint('sk-a'), 0, 60_000);
    const r = run(c, null, () => ok);
    expect(r.done.metadata.attempts[0]!.outcome).toEqual({ kind: 'key_pool_exhausted', roleRestricted: false });
    expect(c.health.snapshotOf(pool, 0).consecutiveFailures).toBe(1);
    run(c, 'free', () => ok);
    expect(c.health.snapshotOf(pool, 0).state).toBe('open'); // failureThreshold 2
  });

  it('a single-route request (/v1/messages) takes the first route holding a key the caller may use, and no other after an upstream answered', () => {
    const c = core([{ key: 'sk-pro', id: 'pro', min_role: 'pro' }]);
    const served = runOne(c, 0, deriveRng(1, 't'), () => ok, req({ callerRole: 'free', singleRoute: true }));
    expect(served.done.metadata.endpointId).toBe(endpoint(c, 'spare'));
    const c2 = core([{ key: 'sk-a', id: 'a' }]);
    const failed = runOne(c2, 0, deriveRng(1, 't'), () => ({ kind: 'http_status', status: 500, errorClass: 'server_error', retryAfterMs: null }), req({ callerRole: 'free', singleRoute: true }));
    expect(failed.done.metadata.attempts).toHaveLength(1);
  });

  it('the adaptive outbound limit is per key: a 429 shrinks only the key that got it', () => {
    const c = new RoutingCore(
      parseModelsConfig({ models: [{ id: 'm', route: [{ base_url: 'https://api.acme.example/v1', provider: 'acme', api_keys: [{ key: 'sk-a', id: 'a' }, { key: 'sk-b', id: 'b' }] }] }] }),
      { settings: { upstream_concurrency_enabled: true, upstream_concurrency_initial_limit: 4, upstream_concurrency_max_limit: 8 } },
    );
    const keyA = `acme|${keyFingerprint('sk-a')}`;
    const keyB = `acme|${keyFingerprint('sk-b')}`;
    // Caller 1 is bound to one key; its 429 moves the request to the other key.
    const { life, actions } = c.start(req({ callerRole: 'free', callerId: 'u1' }), 0, deriveRng(1, 't'));
    const d1 = dispatchOf(actions)!;
    const d2 = dispatchOf(life.step({ kind: 'failed', attemptId: d1.attemptId, outcome: rate429 }, 1))!;
    life.step({ kind: 'finished', attemptId: d2.attemptId, usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 } }, 2);
    const limits = new Map(c.limiter.snapshot().map((x) => [x.key, x.limit]));
    const failed = d1.key!.keyId === 'a' ? keyA : keyB;
    const other = failed === keyA ? keyB : keyA;
    expect(limits.get(failed)).toBe(3);
    expect(limits.get(other)).toBe(4);
  });

  it('the gateway\'s own (unrestricted) traffic sees reserved keys', () => {
    const c = core([{ key: 'sk-admin', id: 'adm', min_role: 'admin' }], false);
    expect(run(c, null, () => ok).keys).toEqual(['adm']);
    expect(run(c, 'internal', () => ok).error).toMatchObject({ code: 'key_pool_exhausted' });
  });

  it('a single api_key takes the pool path once a reservation applies, at once, and leaves it when lifted', () => {
    const c = new RoutingCore(parseModelsConfig({ models: [{ id: 'm', route: [{ base_url: 'sim://solo', api_key: 'sk-solo' }] }] }));
    const solo = c.model('m')!.routes[0]!.endpointId;
    expect(run(c, 'free', () => ok).keys).toEqual([undefined]);
    c.keyPools.setReservations(new Map([[keyFingerprint('sk-solo'), 'pro']]));
    expect(run(c, 'free', () => ok).error).toMatchObject({ code: 'key_pool_exhausted' });
    expect(run(c, 'pro', () => ok).done.metadata.endpointId).toBe(solo);
    c.keyPools.setReservations(new Map());
    expect(run(c, 'free', () => ok).keys).toEqual([undefined]);
  });

  it('multi-target aliases over a pooled model use the same pool and fall over past a refusal', () => {
    const c = new RoutingCore(
      parseModelsConfig({
        models: [
          { id: 'one', route: [{ base_url: 'sim://pool', provider: 'acme', api_keys: [{ key: 'sk-pro', id: 'pro', min_role: 'pro' }] }] },
          { id: 'two', route: [{ base_url: 'sim://spare' }] },
          { id: 'alias', routing: { targets: [{ model: 'one', priority: 1 }, { model: 'two' }] } },
        ],
      }),
    );
    expect(run(c, 'pro', () => ok, null, 'alias').keys).toEqual(['pro']);
    const free = run(c, 'free', () => ok, null, 'alias');
    expect(free.keys).toEqual([undefined]);
    expect(free.done.metadata.attempts[0]!.outcome).toEqual({ kind: 'key_pool_exhausted', roleRestricted: true });
    expect(free.done.metadata.endpointId).toContain('two');
  });

  it('pools, silence and reservations carry over to the next configuration generation', () => {
    const c = core([{ key: 'sk-a' }, { key: 'sk-b' }]);
    c.keyPools.pool(POOL)!.silence(keyFingerprint('sk-a'), 0, 60_000);
    const next = new RoutingCore(parseModelsConfig({ models: [{ id: 'm', router: 'failover', route: [{ base_url: 'sim://pool', provider: 'acme', api_keys: [{ key: 'sk-a' }, { key: 'sk-b' }] }] }] }), { carryFrom: c });
    expect(next.keyPools.pool(POOL)!.isSilenced(keyFingerprint('sk-a'), 1)).toBe(true);
  });

  it('models.yaml refuses api_key together with api_keys, and an empty key', () => {
    expect(() => parseModelsConfig({ models: [{ id: 'm', route: [{ base_url: 'sim://x', api_key: 'a', api_keys: [{ key: 'b' }] }] }] })).toThrow(/either api_key .* or api_keys/);
    expect(() => parseModelsConfig({ models: [{ id: 'm', route: [{ base_url: 'sim://x', api_keys: [{ key: '' }] }] }] })).toThrow(/environment variable/);
    expect(() => parseModelsConfig({ models: [{ id: 'm', route: [{ base_url: 'sim://x', api_keys: [{ key: 'a', min_role: 'gold' }] }] }] })).toThrow(/min_role/);
  });
});

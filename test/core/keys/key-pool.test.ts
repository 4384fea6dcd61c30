// The key pool's own rules (seed 000 "为某个层级预留上游 key"): visibility by role, most reserved
// first, bindings per role, silence that returns by itself, exhaustion vs role restriction,
// declaration changes, the strictest duplicate declaration, and routes of a kind that holds its
// own credential (no reservations).
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { CALLER_ROLES, KeyPool, KeyPools, kindTakesReservations, mergeKeyDeclarations, parseModelsConfig, roleMeets, roleRank, type CallerRole, type PoolKeyDeclaration, type RequestRole } from '../../../core/index.ts';

const k = (fingerprint: string, minRole: CallerRole = 'free'): PoolKeyDeclaration => ({ keyId: `id-${fingerprint}`, fingerprint, minRole });
const roleArb = fc.constantFrom<CallerRole>(...CALLER_ROLES);
const requestRoleArb: fc.Arbitrary<RequestRole> = fc.option(roleArb, { nil: null });
const declArb = fc.array(fc.record({ fp: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'), role: roleArb }), { minLength: 1, maxLength: 10 }).map((xs) => xs.map((x) => k(x.fp, x.role)));

describe('key pool selection', () => {
  it('a free caller never sees a pro key; a pro caller gets its reserved key first', () => {
    const pool = new KeyPool([k('shared'), k('pro', 'pro')]);
    for (let i = 0; i < 5; i++) expect(pool.acquire('free', `f${i}`, 0)).toMatchObject({ kind: 'key', fingerprint: 'shared' });
    for (let i = 0; i < 5; i++) expect(pool.acquire('pro', `p${i}`, 0)).toMatchObject({ kind: 'key', fingerprint: 'pro' });
    expect(pool.acquire(null, null, 0)).toMatchObject({ kind: 'key', fingerprint: 'pro' }); // unrestricted: sees every key
  });

  it('property: a lower tier never gets a key reserved above it, whatever the silences', () => {
    fc.assert(
      fc.property(declArb, requestRoleArb, fc.array(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f')), fc.array(fc.string({ maxLength: 3 }), { maxLength: 20 }), (decls, role, silenced, callers) => {
        const pool = new KeyPool(decls);
        for (const fp of silenced) pool.silence(fp, 0, 1000);
        for (const c of callers) {
          const pick = pool.acquire(role, c, 10);
          if (pick.kind === 'key') {
            const key = pool.key(pick.fingerprint)!;
            expect(roleMeets(role, key.minRole)).toBe(true);
            expect(pool.isSilenced(pick.fingerprint, 10)).toBe(false);
          }
        }
        pool.invariants();
      }),
    );
  });

  it('property: the pick is from the most reserved tier that has a key in the rotation', () => {
    fc.assert(
      fc.property(declArb, requestRoleArb, fc.array(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f')), (decls, role, silenced) => {
        const pool = new KeyPool(decls);
        for (const fp of silenced) pool.silence(fp, 0, 1000);
        const inRotation = pool.visibleTo(role).filter((x) => !pool.isSilenced(x.fingerprint, 10));
        const pick = pool.acquire(role, null, 10);
        if (inRotation.length === 0) {
          expect(pick.kind).toBe('exhausted');
          return;
        }
        expect(pick.kind).toBe('key');
        const top = Math.max(...inRotation.map((x) => roleRank(x.minRole)));
        expect(roleRank(pool.key((pick as { fingerprint: string }).fingerprint)!.minRole)).toBe(top);
      }),
    );
  });

  it('property: merged keys are ordered most reserved first, and each secret keeps its strictest role in any order', () => {
    fc.assert(
      fc.property(declArb, fc.integer(), (decls, seed) => {
        const shuffled = [...decls].sort((x, y) => ((x.fingerprint.charCodeAt(0) * 31 + seed) % 7) - ((y.fingerprint.charCodeAt(0) * 31 + seed) % 7));
        const a = mergeKeyDeclarations(decls);
        const b = mergeKeyDeclarations(shuffled);
        for (let i = 1; i < a.length; i++) expect(roleRank(a[i - 1]!.minRole)).toBeGreaterThanOrEqual(roleRank(a[i]!.minRole));
        const strictest = (ds: PoolKeyDeclaration[], fp: string) => Math.max(...ds.filter((d) => d.fingerprint === fp).map((d) => roleRank(d.minRole)));
        for (const x of a) expect(roleRank(x.minRole)).toBe(strictest(decls, x.fingerprint));
        expect(new Map(a.map((x) => [x.fingerprint, x.minRole]))).toEqual(new Map(b.map((x) => [x.fingerprint, x.minRole])));
      }),
    );
  });

  it('the strictest of duplicate declarations wins, whichever comes first', () => {
    expect(mergeKeyDeclarations([k('x', 'pro'), k('x', 'free')])).toEqual([k('x', 'pro')]);
    expect(mergeKeyDeclarations([k('x', 'free'), k('x', 'pro')])[0]!.minRole).toBe('pro');
  });

  it('new callers rotate within a tier; a caller stays on its key (binding)', () => {
    const pool = new KeyPool([k('a'), k('b')]);
    const first = pool.acquire('free', 'c1', 0);
    const second = pool.acquire('free', 'c2', 0);
    expect(first).not.toEqual(second);
    for (let i = 0; i < 4; i++) expect(pool.acquire('free', 'c1', i * 1000)).toMatchObject({ fingerprint: (first as { fingerprint: string }).fingerprint, reason: 'binding' });
  });
});

describe('key pool bindings', () => {
  it('a binding is valid only for the role that created it', () => {
    const pool = new KeyPool([k('shared'), k('pro', 'pro')]);
    expect(pool.acquire('pro', 'u', 0)).toMatchObject({ fingerprint: 'pro' });
    // The same caller id presenting a lower role does not inherit the pro binding.
    expect(pool.acquire('free', 'u', 1)).toMatchObject({ fingerprint: 'shared', reason: 'order' });
    // It replaced the caller's binding with one of its own role.
    expect(pool.bindingOf('u', 'pro', 1)).toBeNull();
    expect(pool.bindingOf('u', 'free', 1)).toBe('shared');
  });

  it('expires after five minutes without use', () => {
    const pool = new KeyPool([k('a'), k('b')]);
    const fp = (pool.acquire('free', 'u', 0) as { fingerprint: string }).fingerprint;
    expect(pool.bindingOf('u', 'free', 299_999)).toBe(fp);
    expect(pool.bindingOf('u', 'free', 300_000)).toBeNull();
  });

  it('a silenced bound key is routed around and the binding is kept', () => {
    const pool = new KeyPool([k('a'), k('b')]);
    const fp = (pool.acquire('free', 'u', 0) as { fingerprint: string }).fingerprint;
    pool.silence(fp, 1, 60_000);
    expect(pool.acquire('free', 'u', 2)).toMatchObject({ kind: 'key' });
    expect((pool.acquire('free', 'u', 3) as { fingerprint: string }).fingerprint).not.toBe(fp);
    expect(pool.bindingOf('u', 'free', 3)).toBe(fp);
    expect(pool.acquire('free', 'u', 60_002)).toMatchObject({ fingerprint: fp, reason: 'binding' });
  });

  it('declaration changes drop exactly the bindings whose preferred key changed', () => {
    const pool = new KeyPool([k('a'), k('b'), k('p', 'pro')]);
    pool.acquire('free', 'free-user', 0);
    pool.acquire('pro', 'pro-user', 0);
    const freeKey = pool.bindingOf('free-user', 'free', 0)!;
    // Adding a shared key: the free user's top tier is unchanged, the pro user's key unchanged.
    pool.redeclare([k('a'), k('b'), k('c'), k('p', 'pro')]);
    expect(pool.bindingOf('free-user', 'free', 1)).toBe(freeKey);
    expect(pool.bindingOf('pro-user', 'pro', 1)).toBe('p');
    // A new internal key above the free user's view changes nothing for it; the pro user does not see it either.
    pool.redeclare([k('a'), k('b'), k('c'), k('p', 'pro'), k('i', 'internal')]);
    expect(pool.bindingOf('free-user', 'free', 2)).toBe(freeKey);
    expect(pool.bindingOf('pro-user', 'pro', 2)).toBe('p');
    // A key re-tiered to pro: its bindings go; the pro user's top tier gains a key but its own key stays pro.
    pool.redeclare([k('a'), k('b'), k('c'), k('p', 'pro'), k('i', 'internal'), k(freeKey, 'pro')]);
    expect(pool.bindingOf('free-user', 'free', 3)).toBeNull();
    expect(pool.bindingOf('pro-user', 'pro', 3)).toBe('p');
    // The pro key removed: its binding goes.
    pool.redeclare([k('a'), k('b')]);
    expect(pool.bindingOf('pro-user', 'pro', 4)).toBeNull();
  });

  it('a new key in a tier above the bound one drops the binding (the preferred key changed)', () => {
    const pool = new KeyPool([k('a')]);
    pool.acquire('pro', 'u', 0);
    expect(pool.bindingOf('u', 'pro', 0)).toBe('a');
    pool.redeclare([k('a'), k('p', 'pro')]);
    expect(pool.bindingOf('u', 'pro', 1)).toBeNull();
    expect(pool.acquire('pro', 'u', 2)).toMatchObject({ fingerprint: 'p' });
  });

  it('keeps its binding table bounded', () => {
    const pool = new KeyPool([k('a')], { bindingTtlMs: 300_000, maxBindings: 3 });
    for (let i = 0; i < 10; i++) pool.acquire('free', `c${i}`, i);
    expect(pool.bindingCount).toBeLessThanOrEqual(3);
    pool.invariants();
  });
});

describe('silence and exhaustion', () => {
  it('a silenced key returns by itself', () => {
    const pool = new KeyPool([k('a')]);
    pool.silence('a', 0, 1000);
    expect(pool.acquire('free', null, 999)).toEqual({ kind: 'exhausted', roleRestricted: false });
    expect(pool.acquire('free', null, 1000)).toMatchObject({ kind: 'key', fingerprint: 'a' });
  });

  it('role-restricted when an unrestricted caller could still be served; plain exhausted when nobody could', () => {
    const pool = new KeyPool([k('shared'), k('pro', 'pro')]);
    pool.silence('shared', 0, 1000);
    expect(pool.acquire('free', 'f', 1)).toEqual({ kind: 'exhausted', roleRestricted: true });
    expect(pool.acquire('pro', 'p', 1)).toMatchObject({ kind: 'key', fingerprint: 'pro' });
    pool.silence('pro', 0, 1000);
    expect(pool.acquire('pro', 'p', 2)).toEqual({ kind: 'exhausted', roleRestricted: false });
    expect(pool.allSilenced(2)).toBe(true);
    // A pool whose only key is reserved: a free caller is restricted, never exhausted-for-all.
    expect(new KeyPool([k('p', 'internal')]).acquire('free', null, 0)).toEqual({ kind: 'exhausted', roleRestricted: true });
  });

  it('property: exhausted is role-restricted exactly when an unrestricted request would get a key', () => {
    fc.assert(
      fc.property(declArb, roleArb, fc.array(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f')), (decls, role, silenced) => {
        const pool = new KeyPool(decls);
        for (const fp of silenced) pool.silence(fp, 0, 1000);
        const pick = pool.acquire(role, null, 5);
        if (pick.kind === 'exhausted') expect(pick.roleRestricted).toBe(pool.acquire(null, null, 5).kind === 'key');
      }),
    );
  });
});

describe('key pools registry', () => {
  const route = (endpointId: string, keys: PoolKeyDeclaration[], listed: boolean, provider = 'openai') => ({ endpointId, provider, outboundKey: `${provider}|x`, listed, keys });

  it('a single api_key takes the pool path only while a reservation applies to it', () => {
    const pools = new KeyPools();
    pools.configure([route('m:e', [k('solo')], false)]);
    expect(pools.pool('m:e')).toBeNull();
    pools.setReservations(new Map([['solo', 'pro']]));
    expect(pools.pool('m:e')!.keys).toEqual([k('solo', 'pro')]);
    expect(pools.acquire('m:e', 'free', null, 0)).toEqual({ kind: 'exhausted', roleRestricted: true });
    pools.setReservations(new Map());
    expect(pools.pool('m:e')).toBeNull();
  });

  it('api_keys always pools; reservations and provider keys apply to the running pool, keeping its silence', () => {
    const pools = new KeyPools();
    pools.configure([route('m:e', [k('a'), k('b')], true)]);
    const pool = pools.pool('m:e')!;
    pool.silence('a', 0, 10_000);
    pools.setProviderKeys(new Map([['openai', [k('c', 'internal')]]]));
    expect(pools.pool('m:e')).toBe(pool);
    expect(pool.keys.map((x) => x.fingerprint)).toEqual(['c', 'a', 'b']);
    expect(pool.isSilenced('a', 1)).toBe(true);
    // A looser reservation cannot widen a key: the strictest declaration wins.
    pools.setReservations(new Map([['c', 'free']]));
    expect(pool.key('c')!.minRole).toBe('internal');
    expect(pools.outboundKeyFor('m:e', 'c')).toBe('openai|c');
  });

  it('refuses one id naming two different keys', () => {
    const pools = new KeyPools();
    expect(() => pools.configure([route('m:e', [{ keyId: 'pro', fingerprint: 'a', minRole: 'pro' }, { keyId: 'pro', fingerprint: 'b', minRole: 'pro' }], true)])).toThrow(/id 'pro' names two different keys/);
  });

  it('a route that holds its own credential (reservable false) takes no reservation and no provider key', () => {
    const pools = new KeyPools();
    pools.configure([{ ...route('m:native', [k('solo')], false, 'anthro'), reservable: false }, { ...route('m:list', [k('a'), k('b')], true, 'anthro'), reservable: false }, route('m:compat', [k('c')], false, 'anthro')]);
    pools.setReservations(new Map([['solo', 'pro'], ['a', 'admin'], ['c', 'pro']]));
    pools.setProviderKeys(new Map([['anthro', [k('added', 'internal')]]]));
    expect(pools.pool('m:native')).toBeNull(); // recorded, never applied: the single key stays off the pool path
    expect(pools.pool('m:list')!.keys).toEqual([k('a'), k('b')]); // a listed pool still rotates, every key free
    expect(pools.acquire('m:list', 'free', null, 0)).toMatchObject({ kind: 'key' });
    expect(pools.pool('m:compat')!.keys.map((x) => [x.fingerprint, x.minRole])).toEqual([['added', 'internal'], ['c', 'pro']]);
  });
});

describe('own-credential routes under any run-time declarations', () => {
  it('property: whatever reservations and provider keys say, such a route pools only its own listed keys, every one free', () => {
    fc.assert(
      fc.property(declArb, fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c', 'x'), roleArb)), fc.array(fc.tuple(fc.constantFrom('y', 'z'), roleArb)), fc.boolean(), (own, reserved, added, listed) => {
        const pools = new KeyPools();
        const decl = listed ? mergeKeyDeclarations(own) : [own[0]!];
        pools.configure([{ endpointId: 'm:native', provider: 'anthro', outboundKey: 'anthro|x', listed, keys: decl.map((d) => ({ ...d, minRole: 'free' as const })), reservable: false }]);
        pools.setReservations(new Map(reserved));
        pools.setProviderKeys(new Map([['anthro', added.map(([fp, role]) => k(fp, role))]]));
        const p = pools.pool('m:native');
        if (!listed) {
          expect(p).toBeNull();
          return;
        }
        expect(p!.keys.every((x) => x.minRole === 'free')).toBe(true);
        expect(new Set(p!.keys.map((x) => x.fingerprint))).toEqual(new Set(decl.map((d) => d.fingerprint)));
        for (const role of CALLER_ROLES) expect(pools.acquire('m:native', role, null, 0)).toMatchObject({ kind: 'key' });
      }),
    );
  });
});

describe('own-credential route kinds in models.yaml', () => {
  const route = (kind: string, minRole: CallerRole) => ({ models: [{ id: 'm', route: [{ kind, base_url: 'https://api.example.com', api_keys: [{ key: 'k1' }, { key: 'k2', min_role: minRole }] }] }] });

  it('an anthropic route may not reserve a key; free keys and other kinds are fine', () => {
    expect(kindTakesReservations('anthropic')).toBe(false);
    expect(kindTakesReservations('openai_compat')).toBe(true);
    expect(() => parseModelsConfig(route('anthropic', 'pro'))).toThrow(/api_keys\.1\.min_role.*holds its own credential.*allowed_models/s);
    expect(() => parseModelsConfig(route('anthropic', 'free'))).not.toThrow();
    expect(() => parseModelsConfig(route('openai_compat', 'pro'))).not.toThrow();
  });
});

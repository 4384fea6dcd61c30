// The scripts the request path takes shared units with (`SharedQuotas.takeRolling`,
// `adjustRolling`, `takeBucket`, `reserveCounted`), three replicas' clients against the run's
// redis-server: rolling windows (several per pool, request and token units) never admit more
// than their limits across replicas and free units as uses leave the window; a token bucket is
// one bucket for all; counted reservations report what is held. And a key-pool binding made in
// one replica's core pool reaches the others' pools.
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { StateSchema } from '../../gateway/config/gateway-settings.ts';
import type { RedisStateConfig } from '../../gateway/state/shared-state.ts';
import { SharedQuotas } from '../../gateway/state/quota-sync.ts';
import { KeyPoolSync } from '../../gateway/state/key-pool-sync.ts';
import { KeyPools } from '../../core/keys/key-pools.ts';

const url = inject('redisUrl');
const skip = inject('redisSkip');
if (skip) console.warn(`shared-takes tests skipped: ${skip}`);

let n = 0;
const open: SharedQuotas[] = [];

async function replicas(count: number, onBinding?: (replica: number, name: string, fp: string, exp: number) => void): Promise<SharedQuotas[]> {
  const c = StateSchema.parse({ backend: 'redis', url, prefix: `t${process.pid}-${++n}:`, acquire_timeout_ms: 500, max_staleness_ms: 100, connect_timeout_ms: 1_000 }) as RedisStateConfig;
  const out: SharedQuotas[] = [];
  for (let i = 0; i < count; i++) {
    const s = new SharedQuotas(c, { replicaId: `r${i}`, ...(onBinding && { onBinding: (name: string, fp: string, exp: number) => onBinding(i, name, fp, exp) }) });
    await s.start();
    open.push(s);
    out.push(s);
  }
  await vi.waitFor(() => expect(out.map((s) => s.health().status)).toEqual(out.map(() => 'up')));
  return out;
}

afterAll(async () => {
  for (const s of open) await s.close();
});

const HOUR = 3_600_000;

describe.skipIf(!!skip)('shared takes on Redis', () => {
  it('a rolling window admits its limit across replicas, says when a unit frees, and frees it then', async () => {
    const rs = await replicas(3);
    const got = await Promise.all(rs.flatMap((s, i) => Array.from({ length: 10 }, (_, j) => s.takeRolling('q:a', `${i}-${j}`, [{ limit: 25, windowMs: HOUR }], 1))));
    expect(got.filter((g) => g.taken)).toHaveLength(25);
    expect(got.every((g) => g.shared)).toBe(true);
    const refused = got.find((g) => !g.taken)!;
    expect(refused.level).toEqual([25]);
    expect(refused.retryAfterMs).toBeGreaterThan(HOUR - 60_000);
    // A short window: spent, then free again once its uses have left it.
    const short = [{ limit: 3, windowMs: 300 }];
    for (let j = 0; j < 3; j++) expect((await rs[j]!.takeRolling('q:s', `s${j}`, short, 1)).taken).toBe(true);
    const full = await rs[0]!.takeRolling('q:s', 's3', short, 1);
    expect(full.taken).toBe(false);
    expect(full.retryAfterMs).toBeGreaterThan(0);
    expect(full.retryAfterMs).toBeLessThanOrEqual(300);
    await vi.waitFor(async () => expect((await rs[1]!.takeRolling('q:s', `s4-${Math.random()}`, short, 1)).taken).toBe(true), { timeout: 2_000, interval: 50 });
  });

  it('several windows are taken together; token uses are set to their real count', async () => {
    const [a, b] = await replicas(2);
    const ws = [{ limit: 3, windowMs: HOUR }, { limit: 5, windowMs: 2 * HOUR }];
    const r = await Promise.all([0, 1, 2, 3].map((j) => (j % 2 ? a! : b!).takeRolling('q:m', `m${j}`, ws, 1)));
    expect(r.filter((x) => x.taken)).toHaveLength(3);
    expect(r.find((x) => !x.taken)!.level).toEqual([3, 3]); // nothing was added to the wider window either
    const tw = [{ limit: 100, windowMs: HOUR }];
    expect((await a!.takeRolling('q:t', 't1', tw, 60)).taken).toBe(true);
    expect((await b!.takeRolling('q:t', 't2', tw, 50)).taken).toBe(false);
    a!.adjustRolling('q:t', 't1', 1, 30); // the request used 30 tokens, not the 60 estimated
    await vi.waitFor(async () => expect((await b!.takeRolling('q:t', `t3-${Math.random()}`, tw, 50)).level).toEqual([80]));
    expect((await b!.takeRolling('q:t', 'big', tw, 101)).retryAfterMs).toBeNull(); // never fits
  });

  it('one token bucket for all replicas; counted reservations report the holds in force', async () => {
    const rs = await replicas(3);
    const got = await Promise.all(rs.flatMap((s) => Array.from({ length: 4 }, () => s.takeBucket('rl:x', 1, 4))));
    expect(got.filter((g) => g.taken)).toHaveLength(4);
    const no = got.find((g) => !g.taken)!;
    expect(no.level[0]).toBeLessThan(1);
    expect(no.retryAfterMs).toBeGreaterThan(50_000); // one per minute
    const held = await Promise.all(rs.map((s, i) => s.reserveCounted('c:x', `h${i}`, 2, 60_000)));
    expect(held.filter((h) => h.taken)).toHaveLength(2);
    expect(held.map((h) => h.level[0]).sort()).toEqual([1, 2, 2]);
    const i = held.findIndex((h) => h.taken);
    rs[i]!.release('c:x', `h${i}`);
    await vi.waitFor(async () => expect((await rs[0]!.reserveCounted('c:x', `again-${Math.random()}`, 2, 60_000)).taken).toBe(true));
  });

  it("a caller bound to a key in one replica's core pool is bound to it in the others'", async () => {
    const syncs: KeyPoolSync[] = [];
    const rs = await replicas(3, (i, name, fp, exp) => syncs[i]?.onSharedBinding(name, fp, exp));
    const keys = [{ keyId: 'k1', fingerprint: 'fp1', minRole: 'free' as const }, { keyId: 'k2', fingerprint: 'fp2', minRole: 'free' as const }];
    const pools = rs.map(() => {
      const p = new KeyPools();
      p.configure([{ endpointId: 'ep', provider: null, outboundKey: null, listed: true, keys }]);
      return p;
    });
    const now = () => performance.now();
    rs.forEach((s, i) => syncs.push(new KeyPoolSync(s, { pools: () => pools[i]!, now, pollMs: 10 })));
    await new Promise((r) => setTimeout(r, 30)); // the syncs have turned binding tracking on
    // Replica 1 rotates once, so its next caller gets the second key; replica 0's caller the first.
    pools[1]!.pool('ep')!.acquire(null, null, now());
    const got = pools[1]!.pool('ep')!.acquire(null, 'alice', now());
    expect(got).toMatchObject({ kind: 'key', fingerprint: 'fp2' });
    await vi.waitFor(() => expect(pools.map((p) => p.pool('ep')!.bindingOf('alice', null, now()))).toEqual(['fp2', 'fp2', 'fp2']));
    // The others now send alice with her key, not by their own rotation.
    expect(pools[0]!.pool('ep')!.acquire(null, 'alice', now())).toMatchObject({ fingerprint: 'fp2', reason: 'binding' });
    expect(pools[2]!.pool('ep')!.acquire(null, 'alice', now())).toMatchObject({ fingerprint: 'fp2', reason: 'binding' });
    syncs.forEach((s) => s.close());
  });
});

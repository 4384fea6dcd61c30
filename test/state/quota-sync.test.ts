// Three replicas' SharedQuotas in one process, each with its own Redis clients, against the run's
// real redis-server: a quota window and a concurrency limit are never exceeded across replicas
// under concurrent load, a per-target rate-limit window is one window for all, a key silenced on
// one replica is silenced on all, and killing Redis under load fails no take (the local shares
// then add up to at most the limit).
import { spawnSync } from 'node:child_process';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { StateSchema } from '../../gateway/config/gateway-settings.ts';
import type { RedisStateConfig } from '../../gateway/state/shared-state.ts';
import { SharedQuotas } from '../../gateway/state/quota-sync.ts';
import { KeyPoolSync } from '../../gateway/state/key-pool-sync.ts';
import { KeyPools } from '../../core/keys/key-pools.ts';
import { startRedis } from './redis-server.ts';

const url = inject('redisUrl');
const skip = inject('redisSkip');
if (skip) console.warn(`quota-sync tests skipped: ${skip}`);

let n = 0;
const open: SharedQuotas[] = [];

async function replicas(count: number, onSilence?: (replica: number, name: string, untilMs: number) => void): Promise<SharedQuotas[]> {
  const c = StateSchema.parse({ backend: 'redis', url, prefix: `q${process.pid}-${++n}:`, acquire_timeout_ms: 500, max_staleness_ms: 100, connect_timeout_ms: 1_000 }) as RedisStateConfig;
  const out: SharedQuotas[] = [];
  for (let i = 0; i < count; i++) {
    const s = new SharedQuotas(c, { replicaId: `r${i}`, ...(onSilence && { onSilence: (name: string, until: number) => onSilence(i, name, until) }) });
    await s.start();
    open.push(s);
    out.push(s);
  }
  // Every replica has counted all of them.
  await vi.waitFor(() => expect(out.map((s) => s.health().replicasSeen)).toEqual(out.map(() => count)));
  return out;
}

afterAll(async () => {
  for (const s of open) await s.close();
});

describe.skipIf(!!skip)('shared quotas on Redis', () => {
  it('RouteWise never exceeds a quota across replicas', async () => {
    const rs = await replicas(3);
    const got = await Promise.all(rs.flatMap((s) => Array.from({ length: 40 }, () => s.takeWindow('rw:sub-a', 25, 3_600_000))));
    expect(got.filter(Boolean)).toHaveLength(25);
    const held = await Promise.all(rs.flatMap((s, i) => Array.from({ length: 10 }, (_, j) => s.reserve('rw:cc', `h${i}-${j}`, 5, 60_000))));
    expect(held.filter(Boolean)).toHaveLength(5);
    rs[0]!.release('rw:cc', `h0-${held.indexOf(true)}`);
    expect(rs.every((s) => s.health().fallbacks === 0)).toBe(true);
  });

  it('shares one rate-limit window per target', async () => {
    const [a, b] = await replicas(2);
    const fromA = await Promise.all(Array.from({ length: 6 }, () => a!.takeWindow('rl:target-1', 10, 3_600_000)));
    const fromB = await Promise.all(Array.from({ length: 6 }, () => b!.takeWindow('rl:target-1', 10, 3_600_000)));
    expect(fromA.filter(Boolean)).toHaveLength(6);
    expect(fromB.filter(Boolean)).toHaveLength(4);
    expect(await b!.takeWindow('rl:target-2', 10, 3_600_000)).toBe(true);
  });

  it('silences a key on every replica, and binds a caller on every replica', async () => {
    const rs = await replicas(3);
    const until = Date.now() + 60_000;
    rs[1]!.silence('fp-429', until);
    await vi.waitFor(() => expect(rs.map((s) => s.silencedUntil('fp-429'))).toEqual([until, until, until]));
    rs[2]!.bind('caller-1', 'fp-b', until);
    await vi.waitFor(() => expect(rs.map((s) => s.bindingOf('caller-1'))).toEqual(['fp-b', 'fp-b', 'fp-b']));
  });

  it('a key silenced in one replica\'s core pool is silenced in the others\' pools', async () => {
    const syncs: KeyPoolSync[] = [];
    const rs = await replicas(3, (i, name, until) => syncs[i]?.onSharedSilence(name, until));
    const keys = [{ keyId: 'k1', fingerprint: 'fp1', minRole: 'free' as const }, { keyId: 'k2', fingerprint: 'fp2', minRole: 'free' as const }];
    const pools = rs.map(() => {
      const p = new KeyPools();
      p.configure([{ endpointId: 'ep', provider: null, outboundKey: null, listed: true, keys }]);
      return p;
    });
    const now = () => performance.now();
    rs.forEach((s, i) => syncs.push(new KeyPoolSync(s, { pools: () => pools[i]!, now, pollMs: 10 })));
    pools[0]!.pool('ep')!.silence('fp1', now(), 60_000); // e.g. after a 429 on replica 0
    await vi.waitFor(() => expect(pools.map((p) => p.pool('ep')!.isSilenced('fp1', now()))).toEqual([true, true, true]));
    expect(pools.map((p) => p.pool('ep')!.isSilenced('fp2', now()))).toEqual([false, false, false]);
    const ends = pools.map((p) => p.pool('ep')!.silencedUntilMs('fp1', now())! - now());
    expect(Math.max(...ends) - Math.min(...ends)).toBeLessThan(1_000); // the same end, up to the clocks' conversion
    syncs.forEach((s) => s.close());
  });

  // Last: it stops and restarts the run's server.
  it('fails no take when Redis dies under load, and the local shares stay within the limit', async () => {
    const rs = await replicas(3);
    const port = inject('redisPort');
    const during = Promise.all(rs.flatMap((s) => Array.from({ length: 30 }, () => s.takeWindow('rw:outage', 1_000, 3_600_000))));
    spawnSync('redis-cli', ['-p', String(port), 'shutdown', 'nosave']);
    const results = await during; // resolves: never rejects
    expect(results).toHaveLength(90);
    await vi.waitFor(() => expect(rs.map((s) => s.health().status)).toEqual(['down', 'down', 'down']));
    // A window spent wholly on local shares: 3 × floor(30 / 3) = 30 at most.
    const local = await Promise.all(rs.flatMap((s) => Array.from({ length: 20 }, () => s.takeWindow('rw:local', 30, 3_600_000))));
    expect(local.filter(Boolean)).toHaveLength(30);
    expect(rs.every((s) => s.health().fallbacks > 0)).toBe(true);
    const server = await startRedis(inject('redisBin'), port, inject('redisDir'));
    server.unref();
    await vi.waitFor(() => expect(rs.map((s) => s.health().status)).toEqual(['up', 'up', 'up']), { timeout: 15_000 });
    expect(await rs[0]!.takeWindow('rw:after', 1, 3_600_000)).toBe(true);
  });
});

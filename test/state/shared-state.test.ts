// Three replicas' SharedState against one real redis-server (test/state/redis-server.ts): failure
// counts add up across replicas, exactly one replica wins the half-open probe, pins set on one
// replica are read on the others, and a Redis outage fails no call and is reconciled after.
import { spawnSync } from 'node:child_process';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { StateSchema } from '../../gateway/config/gateway-settings.ts';
import { SharedState, type RedisStateConfig } from '../../gateway/state/shared-state.ts';
import { startRedis } from './redis-server.ts';

const url = inject('redisUrl');
const skip = inject('redisSkip');
if (skip) console.warn(`shared-state tests skipped: ${skip}`);

let prefixN = 0;
const open: SharedState[] = [];

function cfg(): RedisStateConfig {
  return StateSchema.parse({ backend: 'redis', url, prefix: `t${process.pid}-${++prefixN}:`, acquire_timeout_ms: 200, max_staleness_ms: 100, connect_timeout_ms: 500 }) as RedisStateConfig;
}

async function replicas(n: number, c = cfg(), opened?: Map<string, string[]>): Promise<SharedState[]> {
  const out: SharedState[] = [];
  for (let i = 0; i < n; i++) {
    const id = `r${i}`;
    const s = new SharedState(c, {
      replicaId: id,
      failureThreshold: 3,
      cooldownMs: 60_000,
      warn: () => {},
      listener: { onBreakerOpen: (ep) => opened?.set(id, [...(opened.get(id) ?? []), ep]) },
    });
    await s.start();
    open.push(s);
    out.push(s);
  }
  return out;
}

afterAll(async () => {
  for (const s of open) await s.close();
});

describe.skipIf(!!skip)('shared state on Redis', () => {
  it('opens a breaker on every replica once the failures counted across them reach the threshold', async () => {
    const opened = new Map<string, string[]>();
    const [a, b, c] = await replicas(3, cfg(), opened);
    a!.reportFailure('p1');
    b!.reportFailure('p1');
    await vi.waitFor(() => expect(a!.health().failedWrites).toBe(0));
    expect([a!, b!, c!].some((s) => s.isOpen('p1'))).toBe(false);
    c!.reportFailure('p1');
    await vi.waitFor(() => expect([a!, b!, c!].map((s) => s.isOpen('p1'))).toEqual([true, true, true]));
    // Each replica is told exactly once.
    expect([...opened.values()].map((v) => v.length)).toEqual([1, 1, 1]);
  });

  it('gives the half-open probe to exactly one replica', async () => {
    const rs = await replicas(3);
    const won = await Promise.all(rs.map((s) => s.claimProbe('p2', 10_000)));
    expect(won.filter(Boolean)).toHaveLength(1);
    expect(rs.every((s) => s.health().fallbacks === 0)).toBe(true);
  });

  it('closes the breaker everywhere when the probe holder succeeds', async () => {
    const rs = await replicas(3);
    for (const s of rs) s.reportFailure('p3');
    await vi.waitFor(() => expect(rs.every((s) => s.isOpen('p3'))).toBe(true));
    const won = await Promise.all(rs.map((s) => s.claimProbe('p3', 10_000)));
    const winner = rs[won.indexOf(true)]!;
    rs.filter((s) => s !== winner).forEach((s) => s.reportSuccess('p3')); // not the holder: no effect
    await new Promise((r) => setTimeout(r, 50));
    expect(rs.every((s) => s.isOpen('p3'))).toBe(true);
    winner.reportSuccess('p3');
    await vi.waitFor(() => expect(rs.map((s) => s.isOpen('p3'))).toEqual([false, false, false]));
  });

  it('shares affinity pins, and a replica started later reads them from Redis', async () => {
    const c = cfg();
    const [a, b] = await replicas(2, c);
    a!.pin('caller-1', 'ep-b', 60_000);
    await vi.waitFor(() => expect(b!.pinOf('caller-1')).toBe('ep-b'));
    const [late] = await replicas(1, c);
    await vi.waitFor(() => expect(late!.pinOf('caller-1')).toBe('ep-b'));
  });

  it('rejects bad state: blocks naming the field', () => {
    const r = StateSchema.safeParse({ backend: 'redis', url: 'http://x' });
    expect(r.success).toBe(false);
    expect(JSON.stringify(r.error!.issues)).toMatch(/redis:\/\//);
    expect(StateSchema.safeParse({ backend: 'memcached' }).success).toBe(false);
    expect(StateSchema.safeParse({ backend: 'redis', url, prefix: 'a{b}' }).success).toBe(false);
    expect(StateSchema.parse({ backend: 'local' })).toEqual({ backend: 'local' });
  });

  it('starts on local state when Redis is unreachable, and never fails a call', async () => {
    const s = new SharedState(StateSchema.parse({ backend: 'redis', url: 'redis://127.0.0.1:1', connect_timeout_ms: 200 }) as RedisStateConfig, {
      replicaId: 'lonely', failureThreshold: 1, cooldownMs: 1_000, warn: () => {},
    });
    open.push(s);
    await s.start();
    expect(s.health().status).toBe('down');
    s.reportFailure('x');
    s.pin('k', 'ep', 1_000);
    expect(s.pinOf('k')).toBe('ep');
    expect(await s.claimProbe('x', 1_000)).toBe(true);
    expect(s.health().fallbacks).toBe(1);
  });

  // Last: it stops and restarts the run's server.
  it('keeps serving through a Redis outage and reconciles when it returns', async () => {
    const warnings: string[] = [];
    const c = cfg();
    const rs: SharedState[] = [];
    for (const id of ['a', 'b', 'c']) {
      const s = new SharedState(c, { replicaId: id, failureThreshold: 3, cooldownMs: 60_000, warn: (m) => warnings.push(m) });
      await s.start();
      open.push(s);
      rs.push(s);
    }
    const port = inject('redisPort');
    spawnSync('redis-cli', ['-p', String(port), 'shutdown', 'nosave']);
    await vi.waitFor(() => expect(rs.map((s) => s.health().status)).toEqual(['down', 'down', 'down']));
    expect(warnings.some((w) => /unavailable/.test(w))).toBe(true);
    // During the outage: nothing throws, local answers stand.
    rs[0]!.pin('caller-x', 'ep-a', 60_000);
    expect(rs[0]!.pinOf('caller-x')).toBe('ep-a');
    expect(await rs[1]!.claimProbe('p9', 1_000)).toBe(true);
    rs[2]!.reportFailure('p9');
    const server = await startRedis(inject('redisBin'), port, inject('redisDir'));
    server.unref();
    await vi.waitFor(() => expect(rs.map((s) => s.health().status)).toEqual(['up', 'up', 'up']), { timeout: 15_000 });
    // The pin made while cut off reaches the other replicas.
    await vi.waitFor(() => expect(rs.map((s) => s.pinOf('caller-x'))).toEqual(['ep-a', 'ep-a', 'ep-a']), { timeout: 5_000 });
    // The 'back' warning follows the full re-read, which may finish after the pins arrive.
    await vi.waitFor(() => expect(warnings.some((w) => /back/.test(w))).toBe(true), { timeout: 5_000 });
  });
});

// The outbound lease protocol on a real redis-server, with the core's `OutboundLimiter` driven
// directly (no gateway): replicas split a key's limit and never hold more than it together; a
// replica that waits gets slots another one holds idle; a dead replica's share returns when its
// lease expires; a 429 on one replica lowers the limit on all; and without Redis the limiter runs
// on its local limit and counts the fallbacks.
import fc from 'fast-check';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { OutboundLimiter } from '../../core/outbound/outbound-limiter.ts';
import type { SlotTicket } from '../../core/outbound/slot-pool.ts';
import { OutboundSync } from '../../gateway/state/outbound-sync.ts';
import type { RedisStateConfig } from '../../gateway/state/shared-state.ts';
import { freePort } from '../free-port.ts';

const url = inject('redisUrl');
const skip = inject('redisSkip');
if (skip) console.warn(`outbound sync tests skipped: ${skip}`);

const KEY = 'prov|abc';
const open: OutboundSync[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

let run = 0;
/** Called whenever a queued ticket is granted (the limiter's sink), to check sums at every grant. */
let onGrant = (): void => {};
interface Replica {
  lim: OutboundLimiter;
  sync: OutboundSync;
  tickets: SlotTicket[];
  held(): number;
}

async function replica(limit: number, prefix: string, id: string, opts: { url?: string; leaseTtlMs?: number; probe?: number } = {}): Promise<Replica> {
  const lim = new OutboundLimiter({ enabled: true, initialLimit: limit, maxLimit: limit, probeSuccessInterval: opts.probe ?? 1000 }, () => onGrant());
  const cfg: RedisStateConfig = { backend: 'redis', url: opts.url ?? url, prefix, acquire_timeout_ms: 100, max_staleness_ms: 200, connect_timeout_ms: 500 };
  const sync = new OutboundSync(cfg, { replicaId: id, limiter: () => lim, deliverWakeups: () => {}, tickMs: 10, ...(opts.leaseTtlMs !== undefined && { leaseTtlMs: opts.leaseTtlMs }) });
  open.push(sync);
  await sync.start();
  const tickets: SlotTicket[] = [];
  return { lim, sync, tickets, held: () => tickets.filter((t) => t.state === 'held').length };
}

const take = (r: Replica, n: number) => {
  for (let i = 0; i < n; i++) r.tickets.push(r.lim.acquire(KEY, {}, i));
};
const free = (r: Replica, n: number, result: 'success' | 'rate_limited' = 'success') => {
  for (const t of r.tickets.filter((x) => x.state === 'held').slice(0, n)) r.lim.release(t, result);
};

describe.skipIf(!!skip)('outbound leases on Redis', () => {
  it('split a limit between replicas, hand idle slots to a waiting one, and never exceed it together', async () => {
    const prefix = `os${process.pid}-${run++}:`;
    const a = await replica(4, prefix, 'a');
    const b = await replica(4, prefix, 'b');
    take(a, 4);
    await vi.waitFor(() => expect(a.held()).toBe(4));
    take(b, 3);
    await new Promise((r) => setTimeout(r, 150));
    expect(b.held()).toBe(0); // A holds the whole limit
    free(a, 3); // A's demand falls: B is waiting, so A gives back down to its fair share
    await vi.waitFor(() => expect(b.held()).toBe(3));
    expect(a.held() + b.held()).toBeLessThanOrEqual(4);
    take(a, 2); // A wants more again; only 0 are free
    await new Promise((r) => setTimeout(r, 150));
    expect(a.held() + b.held()).toBeLessThanOrEqual(4);
    free(b, 3);
    await vi.waitFor(() => expect(a.held()).toBe(3));
  });

  it('keep the sum of held slots within the limit under random acquires and releases of three replicas', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.integer({ min: 0, max: 2 }), fc.boolean(), fc.integer({ min: 1, max: 3 })), { minLength: 5, maxLength: 25 }), async (ops) => {
        const prefix = `osp${process.pid}-${run++}:`;
        const rs = [await replica(5, prefix, 'a'), await replica(5, prefix, 'b'), await replica(5, prefix, 'c')];
        let max = 0;
        onGrant = () => (max = Math.max(max, rs.reduce((n, r) => n + r.held(), 0)));
        for (const [i, acquire, n] of ops) {
          if (acquire) {
            take(rs[i]!, n);
            onGrant();
          }
          else free(rs[i]!, n);
          await new Promise((r) => setTimeout(r, 15));
        }
        // Let everything drain: all waiters are served eventually.
        for (let k = 0; k < 60 && rs.some((r) => r.tickets.some((t) => t.state === 'queued')); k++) {
          for (const r of rs) free(r, 1);
          await new Promise((r) => setTimeout(r, 20));
        }
        onGrant = () => {};
        for (const s of open.splice(0)) await s.close();
        expect(max).toBeLessThanOrEqual(5);
        expect(rs.flatMap((r) => r.tickets).filter((t) => t.state === 'queued')).toEqual([]);
      }),
      { numRuns: 6 },
    );
  });

  it("return a dead replica's share when its lease expires", async () => {
    const prefix = `os${process.pid}-${run++}:`;
    const a = await replica(3, prefix, 'a', { leaseTtlMs: 300 });
    const b = await replica(3, prefix, 'b', { leaseTtlMs: 300 });
    take(a, 3);
    await vi.waitFor(() => expect(a.held()).toBe(3));
    await a.sync.close(); // dies holding the whole limit (no release, no renewal)
    take(b, 3);
    await vi.waitFor(() => expect(b.held()).toBe(3), { timeout: 3_000 });
  });

  it('lower the limit on every replica after a 429 on one', async () => {
    const prefix = `os${process.pid}-${run++}:`;
    const a = await replica(4, prefix, 'a');
    const b = await replica(4, prefix, 'b');
    take(a, 2);
    take(b, 2);
    await vi.waitFor(() => expect(a.held() + b.held()).toBe(4));
    free(a, 1, 'rate_limited');
    await vi.waitFor(() => expect(b.sync.health().keys[0]?.sharedLimit).toBe(3));
    free(a, 1);
    free(b, 2);
    take(a, 4);
    take(b, 4);
    await new Promise((r) => setTimeout(r, 200));
    expect(a.held() + b.held()).toBeLessThanOrEqual(3);
  });

  it('run on the local limit without Redis and count the fallbacks', async () => {
    const dead = `redis://127.0.0.1:${await freePort()}`;
    const a = await replica(2, 'none:', 'a', { url: dead });
    take(a, 3);
    expect(a.held()).toBe(2);
    expect(a.sync.health().fallbacks).toBeGreaterThanOrEqual(1);
    free(a, 1);
    expect(a.held()).toBe(2);
  });
});

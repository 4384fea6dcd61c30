/**
 * Keeps one replica's key pools (`KeyPools`, core) in step with the other replicas' through
 * `SharedQuotas`, using the pools' existing API only (the core stays sans-I/O):
 *
 * - Local → shared: every `pollMs` each pool's keys are read (`silencedUntilMs`); a silence that
 *   is new, or ends later than the one last pushed, is pushed as `silence('<endpoint>|<fingerprint>',
 *   untilEpochMs)`, so every replica takes the key out of that route's rotation until the same end.
 * - Shared → local: a silence pushed by another replica is applied with `KeyPool.silence` for the
 *   time left (`onSharedSilence`). A silence for a route or key this replica does not declare is
 *   kept in the shared mirror and applied nowhere.
 * - Bindings (a caller kept on one key for its prompt cache): each poll takes the bindings the
 *   pools made since the last one (`KeyPool.takeNewBindings`) and pushes each as
 *   `bind('["<endpoint>","<role>","<caller>"]', fingerprint, expiresAtEpochMs)`; one pushed by
 *   another replica is applied with `KeyPool.applyBinding` (`onSharedBinding`), so a caller the
 *   load balancer moves keeps its key. A binding's sliding extension on use is not pushed: on
 *   another replica it lapses at the pushed expiry, after which a new binding is made and pushed.
 *
 * Clocks: the core's clock (`now`, ms, any origin) and the wall clock (`wallMs`, epoch ms, shared
 * between replicas) are converted by their difference at the moment of each call.
 */
import type { KeyPools } from '../../core/keys/key-pools.ts';
import type { SharedQuotas } from './quota-sync.ts';

/** Options of a `KeyPoolSync`. */
export interface KeyPoolSyncOptions {
  /** The pools in force. */
  pools: () => KeyPools;
  /** The core's clock, ms. */
  now: () => number;
  /** Wall clock, epoch ms. Default `Date.now`. */
  wallMs?: () => number;
  /** How often local silences are read, ms (> 0). */
  pollMs: number;
}

/** Bridges `KeyPools` and `SharedQuotas` silences; see the module comment. */
export class KeyPoolSync {
  /** `<endpoint>|<fingerprint>` → the silence end (epoch ms) last pushed or applied. */
  private readonly known = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;
  private readonly wall: () => number;

  /** Starts polling at once. @throws RangeError when `pollMs` is not > 0. */
  constructor(private readonly shared: SharedQuotas, private readonly opts: KeyPoolSyncOptions) {
    if (!(opts.pollMs > 0)) throw new RangeError(`KeyPoolSync: pollMs must be > 0, got ${opts.pollMs}`);
    this.wall = opts.wallMs ?? Date.now;
    this.timer = setInterval(() => this.poll(), opts.pollMs);
    this.timer.unref();
  }

  /** Another replica silenced `name` (`<endpoint>|<fingerprint>`) until `untilMs` (epoch ms): silence it here. */
  onSharedSilence(name: string, untilMs: number): void {
    const bar = name.lastIndexOf('|');
    if (bar < 0) return;
    const pool = this.opts.pools().pool(name.slice(0, bar));
    const fp = name.slice(bar + 1);
    if (!pool?.key(fp)) return;
    const forMs = untilMs - this.wall();
    if (forMs <= 0) return;
    this.known.set(name, Math.max(untilMs, this.known.get(name) ?? 0));
    pool.silence(fp, this.opts.now(), forMs);
  }

  /** Another replica bound a caller (`name` as pushed by `poll`) to key `fingerprint` until `expiresAtMs` (epoch ms): bind it here. */
  onSharedBinding(name: string, fingerprint: string, expiresAtMs: number): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(name);
    } catch {
      return;
    }
    if (!Array.isArray(parsed) || parsed.length !== 3 || typeof parsed[0] !== 'string' || typeof parsed[2] !== 'string') return;
    const [endpointId, role, callerId] = parsed as [string, string | null, string];
    const pool = this.opts.pools().pool(endpointId);
    if (!pool) return;
    const now = this.opts.now();
    pool.applyBinding({ callerId, fingerprint, role: role as Parameters<typeof pool.applyBinding>[0]['role'], expiresAtMs: now + (expiresAtMs - this.wall()) }, now);
  }

  /** Pushes every local silence that is new or ends later than the one last known, and the bindings made since the last poll. */
  poll(): void {
    const now = this.opts.now();
    const offset = this.wall() - now;
    for (const [endpointId, pool] of this.opts.pools().entries()) {
      pool.trackBindings();
      for (const b of pool.takeNewBindings()) this.shared.bind(JSON.stringify([endpointId, b.role, b.callerId]), b.fingerprint, Math.round(b.expiresAtMs + offset));
      for (const k of pool.keys) {
        const until = pool.silencedUntilMs(k.fingerprint, now);
        if (until === null) continue;
        const name = `${endpointId}|${k.fingerprint}`;
        const untilWall = Math.round(until + offset);
        // A margin of a few ms absorbs the clock conversion's jitter (no echo of a silence learnt here).
        if (untilWall <= (this.known.get(name) ?? 0) + 5) continue;
        this.known.set(name, untilWall);
        this.shared.silence(name, untilWall);
      }
    }
    if (this.known.size > 10_000) for (const [n, u] of this.known) if (u < this.wall()) this.known.delete(n);
  }

  /** Stops polling. */
  close(): void {
    clearInterval(this.timer);
  }
}

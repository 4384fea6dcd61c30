/**
 * One undici `Pool` per upstream origin, with keep-alive: connections are reused across
 * requests and attempts, so a request to a warm upstream costs no TCP (or TLS) handshake.
 * Pools are created for every configured origin at start, not on the first request.
 */
import { Pool } from 'undici';
import type { UpstreamSchema } from '../config/gateway-settings.ts';
import type { z } from 'zod';

/** The `upstream:` block of gateway.yaml. */
export type UpstreamSettings = z.infer<typeof UpstreamSchema>;

/** The pools of one gateway (one worker). */
export class UpstreamPools {
  private readonly pools = new Map<string, Pool>();

  constructor(private readonly settings: UpstreamSettings) {}

  /** The pool for `origin` (`scheme://host:port`), created on first use. */
  forOrigin(origin: string): Pool {
    let p = this.pools.get(origin);
    if (!p) {
      const s = this.settings;
      p = new Pool(origin, {
        connections: s.connections_per_origin,
        connectTimeout: s.connect_timeout_ms,
        headersTimeout: s.headers_timeout_ms,
        bodyTimeout: s.body_timeout_ms,
        keepAliveTimeout: s.keep_alive_timeout_ms,
        pipelining: 1,
      });
      this.pools.set(origin, p);
    }
    return p;
  }

  /**
   * Per origin: open connections, requests running on them, requests queued for a connection
   * (undici `Pool.stats`), and whether the pool is closed.
   */
  stats(): Array<{ origin: string; connected: number; running: number; pending: number; closed: boolean }> {
    return [...this.pools].map(([origin, p]) => ({ origin, connected: p.stats.connected, running: p.stats.running, pending: p.stats.pending, closed: p.closed || p.destroyed }));
  }

  /** Closes every pool, aborting requests still in flight. */
  async close(): Promise<void> {
    const all = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(all.map((p) => p.destroy().catch(() => undefined)));
  }
}

/**
 * The key-pool gate (seed 000 "为某个层级预留上游 key"): an attempt to a route that takes the
 * pool path is given one of the route's upstream keys, chosen for the request's role and
 * caller (`keys/key-pool.ts`), or refused with `key_pool_exhausted` when the caller may use no
 * key in the rotation. Unlike the check gates it reads the request (its role and caller id):
 * which key an attempt may use is a property of who sends it, not only of shared state. The
 * life asks it when an attempt starts, before the outbound slot, because the slot pool is the
 * chosen key's (`KeyPools.outboundKeyFor`).
 */
import type { KeyPools } from '../keys/key-pools.ts';
import type { KeyPick } from '../keys/key-pool.ts';
import type { RequestRole } from '../keys/caller-role.ts';
import type { Outcome } from '../lifecycle/outcome.ts';
import type { QueueTarget } from './queue-gate.ts';

/** Gate over the core's `KeyPools`. */
export class KeyPoolGate {
  readonly name = 'key_pool' as const;
  constructor(readonly pools: KeyPools) {}

  /** The key for an attempt on `endpointId` by `role`/`callerId` at `nowMs`; null when the route has no pool. */
  pick(endpointId: string, role: RequestRole, callerId: string | null, nowMs: number): KeyPick | null {
    if (this.pools.isEmpty) return null;
    return this.pools.acquire(endpointId, role, callerId, nowMs);
  }

  /** What a pooled attempt with key `fingerprint` queues on: the route with the key's own outbound key. */
  queueTarget(endpointId: string, fingerprint: string): QueueTarget {
    return { endpointId, outboundKey: this.pools.outboundKeyFor(endpointId, fingerprint) };
  }

  /** Silences the key after a key-related failure (`KeyPools.keyFailed`); returns whether it did. */
  keyFailed(endpointId: string, fingerprint: string, outcome: Outcome, nowMs: number): boolean {
    return this.pools.keyFailed(endpointId, fingerprint, outcome, nowMs);
  }

  /** Whether `role` still has a key of `endpointId`'s pool in the rotation at `nowMs`. */
  usableBy(endpointId: string, role: RequestRole, nowMs: number): boolean {
    return this.pools.pool(endpointId)?.usableBy(role, nowMs) === true;
  }

  /** Whether every key of `endpointId`'s pool is silenced (the endpoint is then degraded); false without a pool. */
  allSilenced(endpointId: string, nowMs: number): boolean {
    return this.pools.pool(endpointId)?.allSilenced(nowMs) === true;
  }
}

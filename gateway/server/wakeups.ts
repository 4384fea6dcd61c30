/**
 * Delivers the core's outbound-slot wake-ups to the exchanges that own the waiting lives.
 * When one request frees a slot (or an engine-hold place), the core grants it to a queued life
 * of another request and reports it through `RoutingCore.drainWakeups()`; the gateway must step
 * that other life with `slot_acquired` so it is sent at once rather than at its give-up deadline.
 * One router per core (a config generation), kept in a WeakMap so it goes with the core.
 */
import type { LifecycleEvent, RequestLife, RoutingCore } from '../../core/index.ts';

/** Maps lives to the callbacks that step them; drains the core after each step of any life. */
export class WakeupRouter {
  private readonly owners = new Map<RequestLife, (e: LifecycleEvent) => void>();

  /** Registers the callback that steps `life` (its exchange's event queue). */
  register(life: RequestLife, deliver: (e: LifecycleEvent) => void): void {
    this.owners.set(life, deliver);
  }

  /** Forgets a life once it is done. */
  unregister(life: RequestLife): void {
    this.owners.delete(life);
  }

  /** Hands every pending wake-up of `core` to its life's owner. Safe to call re-entrantly. */
  deliver(core: RoutingCore): void {
    for (const w of core.drainWakeups()) this.owners.get(w.life)?.(w.event);
  }
}

const routers = new WeakMap<RoutingCore, WakeupRouter>();

/** The wake-up router of `core`, created on first use. */
export function wakeupsFor(core: RoutingCore): WakeupRouter {
  let r = routers.get(core);
  if (!r) {
    r = new WakeupRouter();
    routers.set(core, r);
  }
  return r;
}

/**
 * Makes `next` (a new configuration generation's core that may share the outbound limiter and
 * engine-hold queues of `prev`) use `prev`'s router, so a slot freed by a request of either
 * generation wakes a waiting life of either. Sharing the router is right whether or not the
 * queues were shared: each core drains only its own grants.
 */
export function adoptWakeups(prev: RoutingCore, next: RoutingCore): void {
  routers.set(next, wakeupsFor(prev));
}

/**
 * The exchanges running now, which a drain cuts when its grace runs out (`gateway.ts`): a doubly
 * linked list whose members carry their own links, so admitting and ending a request allocates
 * nothing and leaves no entry behind in a long-lived table.
 *
 * Not a `Set`: a long-lived (old-generation) `Set` or `Map` that gains and loses one young object
 * per request makes V8's young-generation collections keep and promote request objects that are
 * already dead, so every request's garbage ends up in the old generation and each scavenge copies
 * it. The links here are cleared on removal; nothing else refers to a finished exchange.
 */

/** The links a member carries; managed by `LiveExchanges` only. */
export interface LiveLinks<T> {
  livePrev: T | null;
  liveNext: T | null;
  /** In the list now. */
  isLive: boolean;
}

/** The running members (exchanges), newest first. A member is in at most one such list. */
export class LiveExchanges<T extends LiveLinks<T>> {
  private head: T | null = null;
  private count = 0;

  /** Members now. */
  get size(): number {
    return this.count;
  }

  /** Adds `m` (O(1)); a member already in the list is left as it is. */
  add(m: T): void {
    if (m.isLive) return;
    m.isLive = true;
    m.livePrev = null;
    m.liveNext = this.head;
    if (this.head !== null) this.head.livePrev = m;
    this.head = m;
    this.count++;
  }

  /** Removes `m` (O(1)); false when it was not in the list. */
  delete(m: T): boolean {
    if (!m.isLive) return false;
    if (m.livePrev !== null) m.livePrev.liveNext = m.liveNext;
    else this.head = m.liveNext;
    if (m.liveNext !== null) m.liveNext.livePrev = m.livePrev;
    m.livePrev = null;
    m.liveNext = null;
    m.isLive = false;
    this.count--;
    return true;
  }

  /** The members now, newest first, as an array (safe to remove members while walking it). */
  toArray(): T[] {
    const out: T[] = [];
    for (let m = this.head; m !== null; m = m.liveNext) out.push(m);
    return out;
  }
}

/**
 * SGLang's radix-tree prefix cache (RadixAttention: Zheng et al., "SGLang: Efficient Execution of
 * Structured Language Model Programs", NeurIPS 2024, §3; `python/sglang/srt/mem_cache/radix_cache.py`),
 * at the granularity a trace gives: one tree edge per prefix hash block of `blockTokens` tokens
 * (Mooncake: 512). A path from the root spells a prompt prefix; a request that matches k edges
 * reuses k × blockTokens tokens of KV.
 *
 * Nodes hold KV in the shared token pool. A running request *locks* the path of its matched
 * prefix (`lock` increments the lock count of every node up to the root, as SGLang's
 * `inc_lock_ref`); unlocked nodes are evictable, leaves first, least recently used first
 * (`evict`, as SGLang's heap over leaves by `last_access_time`). Recency is a deterministic access
 * counter, not a clock. Sizes are tokens.
 *
 * KV events (SGLang's `--kv-events-config` publisher: `BlockStored` when `insert` adds a node,
 * `BlockRemoved` when `evict` deletes one, `AllBlocksCleared` on `reset`), for a KV-aware router:
 * one event hash per tree node, the node's trace hash id. That is the key the router uses too
 * (a request's `prefixHashes` are the trace's hash ids, and the vLLM model publishes the same ids,
 * one per cache entry of hashBlockTokens / block_size blocks). SGLang itself hashes each page of
 * `page_size` tokens (default 1); one trace hash block stands for the hashBlockTokens / page_size
 * pages it covers, all stored and evicted together here, since the trace names nothing finer and
 * a prompt's partial tail block is never inserted. The router only sees a set of hashes per
 * engine, so a hash is stored when the first live node carries it and removed when the last one
 * goes (two paths may hold the same id). Nothing is counted or allocated unless a sink listens.
 */
import type { KvEvent } from '../../core/index.ts';

/** A tree node: one hash block under its parent. */
export interface RadixNode {
  readonly hash: number;
  readonly parent: RadixNode | null;
  readonly children: Map<number, RadixNode>;
  /** Running requests whose locked path includes this node. */
  lockRef: number;
  /** Access counter value of the latest match or insert through this node. */
  lastAccess: number;
  /** Position in the tree (root = 0, its children = 1, …). */
  readonly depth: number;
  /** Still in the tree (false once evicted). */
  live: boolean;
}

/** A radix prefix cache over hash-block ids; see the module doc. */
export class RadixCache {
  readonly blockTokens: number;
  readonly root: RadixNode;
  private clock = 0;
  private nodes = 0;
  private evictableNodes = 0;
  /** Min-heap of candidate leaves by (lastAccess); stale entries are skipped lazily. */
  private heapNodes: RadixNode[] = [];
  private heapKeys: number[] = [];
  /** Key of the entry `popLeaf` returned last. */
  private poppedKey = 0;
  /** Receiver of KV events; null = nobody listens. */
  private kvSink: ((e: KvEvent) => void) | null = null;
  /** Live nodes per hash id, kept only while `kvSink` listens (module doc). */
  private liveByHash: Map<number, number> | null = null;

  /** @throws Error when blockTokens is not a positive integer. */
  constructor(blockTokens: number) {
    if (!Number.isInteger(blockTokens) || blockTokens < 1) throw new Error(`RadixCache: blockTokens must be a positive integer, got ${blockTokens}`);
    this.blockTokens = blockTokens;
    this.root = { hash: -1, parent: null, children: new Map(), lockRef: 1, lastAccess: 0, depth: 0, live: true };
  }

  /** Tokens held by the tree (all nodes). */
  get totalTokens(): number {
    return this.nodes * this.blockTokens;
  }

  /** Tokens held by unlocked nodes (could be evicted, leaves first). */
  get evictableTokens(): number {
    return this.evictableNodes * this.blockTokens;
  }

  /** Tokens held by locked nodes. */
  get lockedTokens(): number {
    return (this.nodes - this.evictableNodes) * this.blockTokens;
  }

  /**
   * Longest cached prefix of `hashIds[0..maxBlocks)`: returns the deepest matched node (the root
   * when nothing matches). Marks the path as recently used.
   */
  match(hashIds: readonly number[], maxBlocks: number): RadixNode {
    const t = ++this.clock;
    let node = this.root;
    const n = Math.min(maxBlocks, hashIds.length);
    for (let k = 0; k < n; k++) {
      const child = node.children.get(hashIds[k]!);
      if (child === undefined) break;
      child.lastAccess = t;
      node = child;
    }
    if (node !== this.root && node.children.size === 0 && node.lockRef === 0) this.pushLeaf(node);
    return node;
  }

  /**
   * Insert the prefix `hashIds[0..blocks)`, reusing the nodes that exist, and return the deepest
   * node. New nodes start unlocked (evictable). Marks the path as recently used.
   */
  insert(hashIds: readonly number[], blocks: number): RadixNode {
    const t = ++this.clock;
    const live = this.liveByHash;
    let stored: number[] | null = null;
    let node = this.root;
    const n = Math.min(blocks, hashIds.length);
    for (let k = 0; k < n; k++) {
      const h = hashIds[k]!;
      let child = node.children.get(h);
      if (child === undefined) {
        child = { hash: h, parent: node, children: new Map(), lockRef: 0, lastAccess: t, depth: node.depth + 1, live: true };
        node.children.set(h, child);
        this.nodes++;
        this.evictableNodes++;
        if (live !== null) {
          const c = live.get(h) ?? 0;
          live.set(h, c + 1);
          if (c === 0) (stored ??= []).push(h);
        }
      } else child.lastAccess = t;
      node = child;
    }
    if (node !== this.root && node.children.size === 0 && node.lockRef === 0) this.pushLeaf(node);
    if (stored !== null) this.kvSink!({ kind: 'stored', hashes: stored });
    return node;
  }

  /** Lock the path root→node (one running request uses it). */
  lock(node: RadixNode): void {
    for (let n: RadixNode | null = node; n !== null && n !== this.root; n = n.parent) {
      if (n.lockRef++ === 0) this.evictableNodes--;
    }
  }

  /** Release one lock on the path root→node; nodes reaching 0 become evictable. */
  unlock(node: RadixNode): void {
    for (let n: RadixNode | null = node; n !== null && n !== this.root; n = n.parent) {
      if (--n.lockRef === 0) {
        this.evictableNodes++;
        if (n.children.size === 0) this.pushLeaf(n);
      }
      if (n.lockRef < 0) throw new Error(`RadixCache: lock count of block ${n.hash} below 0`);
    }
  }

  /**
   * Evict unlocked leaves, least recently used first, until at least `tokens` tokens are freed or
   * nothing is evictable. Returns the tokens freed.
   */
  evict(tokens: number): number {
    const live = this.liveByHash;
    let removed: number[] | null = null;
    let freed = 0;
    while (freed < tokens && this.heapNodes.length > 0) {
      const node = this.popLeaf();
      if (!node.live || node.lockRef !== 0 || node.children.size !== 0) continue;
      if (node.lastAccess !== this.poppedKey) {
        // Touched after it was queued: re-queue at its newer access time.
        this.pushLeaf(node);
        continue;
      }
      node.live = false;
      node.parent!.children.delete(node.hash);
      this.nodes--;
      this.evictableNodes--;
      freed += this.blockTokens;
      if (live !== null) {
        const c = live.get(node.hash)!;
        if (c === 1) {
          live.delete(node.hash);
          (removed ??= []).push(node.hash);
        } else live.set(node.hash, c - 1);
      }
      const p = node.parent!;
      if (p !== this.root && p.children.size === 0 && p.lockRef === 0) this.pushLeaf(p);
    }
    if (removed !== null) this.kvSink!({ kind: 'removed', hashes: removed });
    return freed;
  }

  /**
   * Drop every node (SGLang `RadixCache.reset`, which `flush_cache` runs only when no request
   * holds KV) and, when a sink listens, send `cleared`.
   * @throws Error when a node is locked (a running request still uses it).
   */
  reset(): void {
    if (this.evictableNodes !== this.nodes) throw new Error(`RadixCache.reset: ${this.nodes - this.evictableNodes} blocks are locked`);
    for (const c of this.root.children.values()) markDead(c);
    this.root.children.clear();
    this.nodes = 0;
    this.evictableNodes = 0;
    this.heapNodes = [];
    this.heapKeys = [];
    if (this.liveByHash !== null) {
      this.liveByHash.clear();
      this.kvSink!({ kind: 'cleared' });
    }
  }

  /**
   * Send KV events to `sink` from now on (null: stop). A new sink first hears one `stored` event
   * with the distinct hashes already cached (none when the tree is empty), so its mirror starts
   * equal to the tree; O(nodes).
   */
  setKvEventSink(sink: ((e: KvEvent) => void) | null): void {
    this.kvSink = sink;
    if (sink === null) {
      this.liveByHash = null;
      return;
    }
    const live = this.countHashes();
    this.liveByHash = live;
    if (live.size > 0) sink({ kind: 'stored', hashes: [...live.keys()] });
  }

  /** Distinct hash ids held by the tree, in no particular order; O(nodes). */
  cachedHashes(): Set<number> {
    return new Set(this.countHashes().keys());
  }

  /** Live nodes per hash id over the whole tree (depth-first); O(nodes). */
  private countHashes(): Map<number, number> {
    const counts = new Map<number, number>();
    const stack = [...this.root.children.values()];
    while (stack.length > 0) {
      const n = stack.pop()!;
      counts.set(n.hash, (counts.get(n.hash) ?? 0) + 1);
      for (const ch of n.children.values()) stack.push(ch);
    }
    return counts;
  }

  /**
   * Check the counts against a full walk; O(nodes).
   * @throws Error when a count or lock is inconsistent.
   */
  invariants(): void {
    let nodes = 0;
    let evictable = 0;
    const live = this.liveByHash;
    const walk = (n: RadixNode): number => {
      let childLocks = 0;
      for (const c of n.children.values()) {
        if (c.parent !== n || !c.live) throw new Error(`RadixCache invariant: block ${c.hash} misparented or dead`);
        if (live !== null && live.get(c.hash) === undefined) throw new Error(`RadixCache invariant: block ${c.hash} cached but not counted for KV events`);
        nodes++;
        if (c.lockRef === 0) evictable++;
        if (c.lockRef < 0) throw new Error(`RadixCache invariant: block ${c.hash} lock ${c.lockRef} < 0`);
        childLocks = Math.max(childLocks, walk(c));
      }
      if (n !== this.root && n.lockRef < childLocks) throw new Error(`RadixCache invariant: block ${n.hash} locked less than a child`);
      return n.lockRef;
    };
    walk(this.root);
    if (nodes !== this.nodes || evictable !== this.evictableNodes) {
      throw new Error(`RadixCache invariant: counted ${nodes} nodes / ${evictable} evictable, tracked ${this.nodes} / ${this.evictableNodes}`);
    }
    if (live !== null) {
      // Cheap form (this runs after every simulated event in checked replays): every node's hash
      // is counted, every count is ≥ 1, and the counts add up to the nodes; tests compare the
      // full hash sets.
      let sum = 0;
      for (const c of live.values()) {
        if (!(c >= 1)) throw new Error(`RadixCache invariant: KV-event count ${c} < 1`);
        sum += c;
      }
      if (sum !== nodes) throw new Error(`RadixCache invariant: KV-event counts add to ${sum}, tree has ${nodes} nodes`);
    }
  }

  private pushLeaf(node: RadixNode): void {
    // Bound stale growth: rebuild from live candidates when the heap is much larger than the tree
    // (before reading the arrays: the rebuild replaces them).
    if (this.heapNodes.length > 4 * this.nodes + 64) this.rebuildHeap();
    const nodes = this.heapNodes;
    const keys = this.heapKeys;
    let i = nodes.length;
    nodes.push(node);
    keys.push(node.lastAccess);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (keys[p]! <= keys[i]!) break;
      swap(nodes, keys, i, p);
      i = p;
    }
  }

  private popLeaf(): RadixNode {
    const nodes = this.heapNodes;
    const keys = this.heapKeys;
    const top = nodes[0]!;
    const topKey = keys[0]!;
    const lastN = nodes.pop()!;
    const lastK = keys.pop()!;
    if (nodes.length > 0) {
      nodes[0] = lastN;
      keys[0] = lastK;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < nodes.length && keys[l]! < keys[m]!) m = l;
        if (r < nodes.length && keys[r]! < keys[m]!) m = r;
        if (m === i) break;
        swap(nodes, keys, i, m);
        i = m;
      }
    }
    this.poppedKey = topKey;
    return top;
  }

  private rebuildHeap(): void {
    const live = this.heapNodes.filter((n, i) => n.live && n.lockRef === 0 && n.children.size === 0 && n.lastAccess === this.heapKeys[i]);
    this.heapNodes = [];
    this.heapKeys = [];
    const seen = new Set<RadixNode>();
    for (const n of live) {
      if (seen.has(n)) continue;
      seen.add(n);
      this.pushLeaf(n);
    }
  }
}

/** Marks `node` and its subtree as evicted (iteratively: a long prompt is a deep path). */
function markDead(node: RadixNode): void {
  const stack = [node];
  while (stack.length > 0) {
    const n = stack.pop()!;
    n.live = false;
    for (const c of n.children.values()) stack.push(c);
  }
}

function swap(nodes: RadixNode[], keys: number[], i: number, j: number): void {
  const n = nodes[i]!;
  nodes[i] = nodes[j]!;
  nodes[j] = n;
  const k = keys[i]!;
  keys[i] = keys[j]!;
  keys[j] = k;
}

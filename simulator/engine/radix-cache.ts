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
 */

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
      } else child.lastAccess = t;
      node = child;
    }
    if (node !== this.root && node.children.size === 0 && node.lockRef === 0) this.pushLeaf(node);
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
      const p = node.parent!;
      if (p !== this.root && p.children.size === 0 && p.lockRef === 0) this.pushLeaf(p);
    }
    return freed;
  }

  /**
   * Check the counts against a full walk; O(nodes).
   * @throws Error when a count or lock is inconsistent.
   */
  invariants(): void {
    let nodes = 0;
    let evictable = 0;
    const walk = (n: RadixNode): number => {
      let childLocks = 0;
      for (const c of n.children.values()) {
        if (c.parent !== n || !c.live) throw new Error(`RadixCache invariant: block ${c.hash} misparented or dead`);
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

function swap(nodes: RadixNode[], keys: number[], i: number, j: number): void {
  const n = nodes[i]!;
  nodes[i] = nodes[j]!;
  nodes[j] = n;
  const k = keys[i]!;
  keys[i] = keys[j]!;
  keys[j] = k;
}

/**
 * The approximate radix tree of SGLang's router (`sgl-router`, cache-aware policy): one prefix
 * tree shared by every worker ("tenant"), each node marked with the tenants believed to hold that
 * prefix and when each last used it. The router inserts a request's prefix under the worker it
 * chose; matching walks the request's prefix and reports, per tenant, how deep it matched.
 *
 * Keys here are prefix block hashes (the trace schema's `hash_ids`), one node per block, so a
 * node's depth is a block count; SGLang keys its tree on the request text. SGLang trims each
 * tenant to `max_tree_size` in a background pass every `eviction_interval`; a core has no
 * background, so this tree trims at insert time and the bound holds after every call. Trimming
 * drops the tenant's least-recently-used leaf first, as SGLang's eviction does.
 *
 * Per tenant, a `Map` of its nodes in least-recently-used order. A path is touched leaf first,
 * then each ancestor, so a node is always more recent than its own descendants: the oldest
 * entry of a tenant is therefore one of its leaves, and eviction is O(1) per node. A node that
 * loses its last tenant has no children left (a child's tenants own its parent too) and is
 * removed from its parent.
 */

/** One tree node: a block hash under its parent. */
interface TreeNode {
  readonly hash: number;
  readonly parent: TreeNode | null;
  readonly children: Map<number, TreeNode>;
  /** Tenants holding this prefix. */
  readonly tenants: Set<string>;
}

/** Per-worker prefix ownership over block hashes, at most `maxBlocksPerTenant` nodes each. */
export class ApproximateTree {
  private readonly root: TreeNode = { hash: -1, parent: null, children: new Map(), tenants: new Set() };
  /** Each tenant's nodes, least recently used first. */
  private readonly lru = new Map<string, Map<TreeNode, true>>();
  /**
   * Per tenant, one iterator over its LRU map, kept while the map lives, from which `evictOldest`
   * takes the oldest node. Every node it has passed is gone (deleted before it got there, or
   * evicted when returned) and nodes are only added at the end, so its next node is the map's
   * first, as a fresh `keys().next()` would give — without walking V8's hash table from the start
   * over the slot of every node deleted since the table was last rebuilt. Advanced only while the
   * map is non-empty, it never finishes.
   */
  private readonly oldest = new Map<string, MapIterator<TreeNode>>();

  /** @throws RangeError when `maxBlocksPerTenant` is not an integer ≥ 1. */
  constructor(readonly maxBlocksPerTenant: number) {
    if (!Number.isSafeInteger(maxBlocksPerTenant) || maxBlocksPerTenant < 1) throw new RangeError(`tree bound must be an integer ≥ 1, got ${maxBlocksPerTenant}`);
  }

  /**
   * Inserts `hashes` as a prefix owned by `tenant` (most recently used), then trims the tenant to
   * its bound. A prefix longer than the bound keeps its first `maxBlocksPerTenant` blocks.
   */
  insert(tenant: string, hashes: readonly number[]): void {
    const n = Math.min(hashes.length, this.maxBlocksPerTenant);
    if (n === 0) return;
    let order = this.lru.get(tenant);
    if (order === undefined) {
      order = new Map();
      this.lru.set(tenant, order);
      this.oldest.set(tenant, order.keys());
    }
    const path: TreeNode[] = [];
    let node = this.root;
    for (let k = 0; k < n; k++) {
      const h = hashes[k]!;
      let child = node.children.get(h);
      if (child === undefined) {
        child = { hash: h, parent: node, children: new Map(), tenants: new Set() };
        node.children.set(h, child);
      }
      child.tenants.add(tenant);
      path.push(child);
      node = child;
    }
    for (let k = path.length - 1; k >= 0; k--) {
      order.delete(path[k]!);
      order.set(path[k]!, true);
    }
    while (order.size > this.maxBlocksPerTenant) this.evictOldest(tenant, order);
  }

  /**
   * For each tenant in `tenants`, how many leading blocks of `hashes` it holds (0 when none).
   * Read-only: SGLang's match does refresh access times, but the router inserts the chosen
   * worker's prefix right after, which refreshes the path that matters.
   */
  matchDepths(hashes: readonly number[], tenants: readonly string[]): number[] {
    const depth = new Map<string, number>();
    let node = this.root;
    for (let k = 0; k < hashes.length; k++) {
      const child = node.children.get(hashes[k]!);
      if (child === undefined) break;
      for (const t of child.tenants) depth.set(t, k + 1);
      node = child;
    }
    return tenants.map((t) => depth.get(t) ?? 0);
  }

  /** Nodes (blocks) `tenant` holds. */
  size(tenant: string): number {
    return this.lru.get(tenant)?.size ?? 0;
  }

  /** Removes every node of `tenant` (a worker that left). */
  removeTenant(tenant: string): void {
    const order = this.lru.get(tenant);
    if (order === undefined) return;
    while (order.size > 0) this.evictOldest(tenant, order);
    this.lru.delete(tenant);
    this.oldest.delete(tenant);
  }

  /**
   * Checks: every tenant within its bound; each tenant's LRU set equals the nodes marked with it;
   * no node without tenants; each node more recent than its descendants of the same tenant.
   * @throws Error describing the first violation.
   */
  invariants(): void {
    const marked = new Map<string, number>();
    const visit = (node: TreeNode): void => {
      for (const child of node.children.values()) {
        if (child.tenants.size === 0) throw new Error(`approximate tree: node ${child.hash} has no tenant`);
        for (const t of child.tenants) {
          marked.set(t, (marked.get(t) ?? 0) + 1);
          if (!this.lru.get(t)?.has(child)) throw new Error(`approximate tree: node ${child.hash} of '${t}' missing from its LRU`);
        }
        visit(child);
      }
    };
    visit(this.root);
    for (const [t, order] of this.lru) {
      if (order.size > this.maxBlocksPerTenant) throw new Error(`approximate tree: '${t}' holds ${order.size} > ${this.maxBlocksPerTenant} blocks`);
      if ((marked.get(t) ?? 0) !== order.size) throw new Error(`approximate tree: '${t}' LRU has ${order.size} nodes, tree marks ${marked.get(t) ?? 0}`);
      const rank = new Map<TreeNode, number>();
      let i = 0;
      for (const node of order.keys()) rank.set(node, i++);
      for (const node of order.keys()) {
        const up = node.parent;
        if (up !== null && up !== this.root && rank.get(up)! < rank.get(node)!) throw new Error(`approximate tree: '${t}' parent older than child`);
      }
    }
  }

  private evictOldest(tenant: string, order: Map<TreeNode, true>): void {
    const node = this.oldest.get(tenant)!.next().value!;
    order.delete(node);
    node.tenants.delete(tenant);
    if (node.tenants.size === 0) node.parent!.children.delete(node.hash);
  }
}

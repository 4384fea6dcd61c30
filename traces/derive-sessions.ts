/**
 * Session (conversation) ids derived from prefix-block hashes, for traces that record
 * `hash_ids` but no session (Mooncake). The rule and the measurements that chose its
 * threshold are in `traces/README.md`.
 *
 * Why it works: a later turn of a conversation re-sends the earlier turns as its prompt
 * prefix, so its prefix blocks (and their prefix hashes) start with the earlier turn's. A
 * block shared by a large part of the whole trace is not a conversation but a shared system
 * prompt (Mooncake conversation trace: block 0 opens 100 % of requests), so such blocks are
 * skipped and the first remaining block keys the conversation.
 */

/** A block is "common" when more than this share of the trace's requests contain it. */
export const COMMON_BLOCK_SHARE = 0.1;

/** The outcome of `deriveSessions`. */
export interface DerivedSessions {
  /** One session id per request, same order as the input: `blk-<hash id>` or `req-<request id>`. */
  sessionIds: string[];
  /** Number of distinct session ids. */
  sessions: number;
  /** The common blocks that were skipped, ascending. */
  commonBlocks: number[];
  /** The `session_rule` metadata value describing what was done. */
  rule: string;
}

/**
 * Derives sessions: drop common blocks (in more than `commonShare` of requests, each request
 * counted once per block); requests whose first remaining block is equal share a session
 * `blk-<that block>`; a request with no remaining block gets its own `req-<request id>`.
 * @param hashIds per request, prefix-block hash ids in prompt order.
 * @param requestIds per request, its id (same length as `hashIds`).
 * @param commonShare threshold in (0, 1]; default `COMMON_BLOCK_SHARE`.
 * @throws Error when the two arrays differ in length or `commonShare` is out of range.
 */
export function deriveSessions(
  hashIds: readonly (readonly number[])[],
  requestIds: readonly string[],
  commonShare: number = COMMON_BLOCK_SHARE,
): DerivedSessions {
  if (hashIds.length !== requestIds.length) {
    throw new Error(`deriveSessions: ${hashIds.length} hash lists but ${requestIds.length} request ids`);
  }
  if (!(commonShare > 0 && commonShare <= 1)) throw new Error(`deriveSessions: commonShare ${commonShare} not in (0, 1]`);
  const requestsWith = new Map<number, number>();
  for (const ids of hashIds) {
    for (const h of new Set(ids)) requestsWith.set(h, (requestsWith.get(h) ?? 0) + 1);
  }
  const limit = commonShare * hashIds.length;
  const common = new Set([...requestsWith].filter(([, c]) => c > limit).map(([h]) => h));
  const sessionIds = hashIds.map((ids, i) => {
    const key = ids.find((h) => !common.has(h));
    return key === undefined ? `req-${requestIds[i]}` : `blk-${key}`;
  });
  const commonBlocks = [...common].sort((a, b) => a - b);
  const shown = commonBlocks.length <= 10 ? commonBlocks.join(',') : `${commonBlocks.slice(0, 10).join(',')},…(${commonBlocks.length})`;
  return {
    sessionIds,
    sessions: new Set(sessionIds).size,
    commonBlocks,
    rule: `derived:first-uncommon-block (common = block in >${commonShare * 100}% of requests; here [${shown}])`,
  };
}

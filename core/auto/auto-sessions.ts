/**
 * Conversations of auto models (seed 000 "Auto 模型", "会话"): which candidate a conversation is
 * on, so that a tool loop stays on the model that planned it (switching mid-loop would throw away
 * the prompt cache and hand the plan to a model that did not make it).
 *
 * A conversation is known by its caller, the session the client declared (if any) and a hash of
 * its opening messages — everything up to and including the first user message — so a sub-agent
 * or side call that shares the main conversation's session is a conversation of its own. The
 * table lives in one process (lost at restart, as the seed says); an entry idle for longer than
 * the idle timeout is forgotten, and at the cap the least recently used entry makes room. Time
 * comes in as `nowMs`; nothing here reads a clock.
 */
import { fnv1a64Hex } from '../affinity/affinity-key.ts';

/** A conversation's state. */
export interface AutoSessionEntry {
  /** Served name of the profile (`auto-balance`). */
  readonly profile: string;
  /** The candidate model (as configured) the conversation is on. */
  readonly model: string;
  /** The conversation has been served by more than one model (its history has other models' thinking). */
  readonly switched: boolean;
  /** Last use, ms on the caller's clock. */
  readonly lastUsedMs: number;
}

/**
 * The key of a conversation: caller id, declared session ('' when none) and the opening
 * messages' hash (`openingMessagesHash`), joined so that no two triples give one key.
 */
export function autoSessionKey(callerId: string, sessionId: string | null, openingHash: string): string {
  return `${autoSessionPrefix(callerId, sessionId)}|${openingHash}`;
}

/** The part of `autoSessionKey` before the opening hash: caller and declared session. */
function autoSessionPrefix(callerId: string, sessionId: string | null): string {
  return `${callerId.length}:${callerId}|${(sessionId ?? '').length}:${sessionId ?? ''}`;
}

/**
 * A hash (16 hex digits, FNV-1a 64) of a conversation's opening: the messages up to and
 * including the first with role `user` (all of them when none has it), with a `system` prompt
 * given apart (the Messages API's `system`) in front. Deterministic for equal JSON values.
 */
export function openingMessagesHash(messages: readonly unknown[], system: unknown = undefined): string {
  let end = messages.length;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i] as { role?: unknown } | null;
    if (m !== null && typeof m === 'object' && m.role === 'user') {
      end = i + 1;
      break;
    }
  }
  return fnv1a64Hex(JSON.stringify([system ?? null, messages.slice(0, end)]));
}

/** The session table (see the file doc). */
export class AutoSessions {
  /** Entries in least-recently-used order (a Map keeps insertion order; a use re-inserts). */
  private readonly entries = new Map<string, AutoSessionEntry>();
  /** The key last recorded per (caller, declared session), for requests that name no conversation of their own. */
  private readonly lastOfSession = new Map<string, string>();

  /**
   * @param idleTimeoutMs an entry unused this long is forgotten (ms > 0).
   * @param maxSessions the table's cap (integer ≥ 1).
   * @throws RangeError for a bad bound.
   */
  constructor(
    readonly idleTimeoutMs: number,
    readonly maxSessions: number,
  ) {
    if (!(idleTimeoutMs > 0)) throw new RangeError(`idleTimeoutMs must be > 0, got ${idleTimeoutMs}`);
    if (!Number.isInteger(maxSessions) || maxSessions < 1) throw new RangeError(`maxSessions must be an integer >= 1, got ${maxSessions}`);
  }

  /** Entries held now (expired ones not yet met included). */
  get size(): number {
    return this.entries.size;
  }

  /** The live entry of `key` at `nowMs`, or null (an expired entry is dropped). */
  get(key: string, nowMs: number): AutoSessionEntry | null {
    const e = this.entries.get(key);
    if (e === undefined) return null;
    if (nowMs - e.lastUsedMs > this.idleTimeoutMs) {
      this.drop(key);
      return null;
    }
    return e;
  }

  /**
   * The live entry of `key` at `nowMs`, or null, changing nothing (an expired entry stays until
   * `get` or `record` meets it). For requests that must leave the session state as it is.
   */
  peek(key: string, nowMs: number): AutoSessionEntry | null {
    const e = this.entries.get(key);
    return e === undefined || nowMs - e.lastUsedMs > this.idleTimeoutMs ? null : e;
  }

  /**
   * The live conversation last recorded for caller `callerId` in declared session `sessionId`
   * at `nowMs` (its key and entry), or null — none, expired, or no session declared. Changes nothing.
   */
  latestInSession(callerId: string, sessionId: string | null, nowMs: number): { key: string; entry: AutoSessionEntry } | null {
    if (sessionId === null) return null;
    const key = this.lastOfSession.get(autoSessionPrefix(callerId, sessionId));
    if (key === undefined) return null;
    const entry = this.peek(key, nowMs);
    return entry === null ? null : { key, entry };
  }

  /**
   * Records that conversation `key` of `profile` is served by `model` at `nowMs`; `switched`
   * becomes true once two models have served it. Returns the entry.
   */
  record(key: string, profile: string, model: string, nowMs: number): AutoSessionEntry {
    const prev = this.get(key, nowMs);
    const switched = prev !== null && prev.profile === profile && (prev.switched || prev.model !== model);
    const entry: AutoSessionEntry = { profile, model, switched, lastUsedMs: nowMs };
    this.entries.delete(key);
    this.entries.set(key, entry);
    this.lastOfSession.set(key.slice(0, key.lastIndexOf('|')), key);
    while (this.entries.size > this.maxSessions) {
      this.drop(this.entries.keys().next().value as string);
    }
    return entry;
  }

  /** Forgets `key`, and the per-session index's pointer at it. */
  private drop(key: string): void {
    this.entries.delete(key);
    const prefix = key.slice(0, key.lastIndexOf('|'));
    if (this.lastOfSession.get(prefix) === key) this.lastOfSession.delete(prefix);
  }

  /**
   * Checks the table: size ≤ cap, entries in last-use order, and the per-session index naming
   * only entries the table holds.
   * @throws Error describing the first violation.
   */
  invariants(): void {
    if (this.entries.size > this.maxSessions) throw new Error(`auto sessions: ${this.entries.size} entries above the cap ${this.maxSessions}`);
    let last = Number.NEGATIVE_INFINITY;
    for (const [k, e] of this.entries) {
      if (e.lastUsedMs < last) throw new Error(`auto sessions: entry ${k} used at ${e.lastUsedMs} after one used at ${last}`);
      last = e.lastUsedMs;
    }
    for (const [prefix, k] of this.lastOfSession) if (!this.entries.has(k)) throw new Error(`auto sessions: session ${prefix} points at ${k}, which the table does not hold`);
  }
}

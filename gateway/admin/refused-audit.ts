/**
 * Audit entries of refused admin calls (no key, an unknown key, a key without the admin role),
 * bounded so that a flood of unauthenticated calls cannot grow the audit log without limit:
 * within each window of `windowMs` (wall clock) at most `itemised` refused calls are written one
 * entry each; the rest are only counted, and one summary entry per window that had any (who
 * `refused-calls`, method and path `*`, status the most frequent one, `after: {suppressed,
 * window_start, window_end, by_remote, by_status}` with the `topRemotes` addresses that sent most
 * of them) is written with the first
 * audited call after that window ends. So refusals cost at most `itemised + 1` entries per window
 * however they are spread over addresses, keys and paths, and memory holds one window's counts
 * (at most `maxRemotes` addresses; the rest are counted under `other`).
 *
 * The defaults (60 itemised per minute) keep every refusal of a mistyped key or a misconfigured
 * client visible one by one, while a scan of thousands a minute costs one summary entry a minute.
 */
import { hashKey } from '../callers.ts';

/** One refused call. */
export interface RefusedCall {
  /** `anonymous`, `key:<first 12 hex of the key's SHA-256>`, or the caller id of a non-admin key. */
  who: string;
  remoteAddr: string;
  method: string;
  path: string;
  status: number;
}

/** What is written to the audit log (the API's `AdminApi.audit`). */
export type AuditWrite = (e: { callerId: string; remoteAddr: string | null; method: string; path: string; status: number; before: unknown; after: unknown }) => Promise<void>;

/** Options of `RefusedAudit`. */
export interface RefusedAuditOptions {
  windowMs: number;
  itemised: number;
  maxRemotes: number;
  topRemotes: number;
}

const DEFAULTS: RefusedAuditOptions = { windowMs: 60_000, itemised: 60, maxRemotes: 1_000, topRemotes: 10 };

/** Longest path kept in an entry (a refused caller chooses the URL), characters. */
const MAX_PATH_CHARS = 256;

/** `who` of a refused call from its `Authorization` header: `anonymous` without a bearer token, else the token's hash prefix. */
export function refusedWho(authorization: string): string {
  const m = /^bearer\s+(\S.*)$/i.exec(authorization.trim());
  return m ? `key:${hashKey(m[1]!.trim()).slice(0, 12)}` : 'anonymous';
}

/** The refused-call auditor of one gateway process. */
export class RefusedAudit {
  private readonly o: RefusedAuditOptions;
  private windowStartMs = Number.NEGATIVE_INFINITY;
  private itemisedInWindow = 0;
  private suppressed = 0;
  private readonly byRemote = new Map<string, number>();
  private readonly byStatus = new Map<number, number>();

  /** @param nowMs the wall clock, Unix ms. */
  constructor(
    private readonly write: AuditWrite,
    private readonly nowMs: () => number,
    options: Partial<RefusedAuditOptions> = {},
  ) {
    this.o = { ...DEFAULTS, ...options };
  }

  /** Audits one refused call: written at once while the window's budget lasts, else counted. */
  record(c: RefusedCall): Promise<void> {
    const pending = this.rollWindow();
    if (this.itemisedInWindow < this.o.itemised) {
      this.itemisedInWindow++;
      const path = c.path.length > MAX_PATH_CHARS ? `${c.path.slice(0, MAX_PATH_CHARS)}…` : c.path;
      return Promise.all([pending, this.write({ callerId: c.who, remoteAddr: c.remoteAddr, method: c.method, path, status: c.status, before: null, after: null })]).then(() => {});
    }
    this.suppressed++;
    const key = this.byRemote.has(c.remoteAddr) || this.byRemote.size < this.o.maxRemotes ? c.remoteAddr : 'other';
    this.byRemote.set(key, (this.byRemote.get(key) ?? 0) + 1);
    this.byStatus.set(c.status, (this.byStatus.get(c.status) ?? 0) + 1);
    return pending;
  }

  /** Writes the summary of a window that has ended, if it suppressed anything (call with every audited call). */
  flushDue(): Promise<void> {
    return this.rollWindow();
  }

  /** Refused calls counted and not itemised in the current window. */
  get suppressedInWindow(): number {
    return this.suppressed;
  }

  private rollWindow(): Promise<void> {
    const now = this.nowMs();
    if (now < this.windowStartMs + this.o.windowMs) return Promise.resolve();
    const summary = this.suppressed > 0 ? this.summary(now) : null;
    this.windowStartMs = now;
    this.itemisedInWindow = 0;
    this.suppressed = 0;
    this.byRemote.clear();
    this.byStatus.clear();
    return summary ? this.write(summary) : Promise.resolve();
  }

  private summary(now: number): Parameters<AuditWrite>[0] {
    const top = [...this.byRemote.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, this.o.topRemotes);
    const statuses = [...this.byStatus.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0]);
    return {
      callerId: 'refused-calls',
      remoteAddr: null,
      method: '*',
      path: '*',
      status: statuses[0]![0],
      before: null,
      after: {
        suppressed: this.suppressed,
        window_start: new Date(this.windowStartMs).toISOString(),
        window_end: new Date(Math.min(now, this.windowStartMs + this.o.windowMs)).toISOString(),
        by_remote: Object.fromEntries(top),
        by_status: Object.fromEntries(statuses),
      },
    };
  }
}

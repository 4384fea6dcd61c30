/**
 * Quota sources of RouteWise's subscription routes (seed 000 "RouteWise", quota sources).
 *
 * A route's `quota_source: {provider, usage_label, unit}` is a selector, not a fetcher: the
 * driver polls the quota fetchers registered for each provider and hands their usage records to
 * a `QuotaSnapshotStore`; a selector resolves to the one record whose provider, usage label and
 * unit are all exactly equal to its own. `usage_label` is the fetcher's own label string, not a
 * name the operator makes up. A selector that matches nothing (no fetcher for the provider, a
 * misspelt label or unit) never resolves, and its route stays unready: the driver reports it
 * (the seed notes that silence here is a trap).
 *
 * The store is data only: it reads no clock (each ingest carries `nowMs`) and performs no I/O.
 */

/** What a route's `quota_source:` names (compared exactly, case included). */
export interface QuotaSourceSelector {
  readonly provider: string;
  readonly usageLabel: string;
  readonly unit: string;
}

/**
 * One usage record as a quota fetcher reports it: `used` of `limit` units (`unit`: the fetcher's
 * own unit string, e.g. `requests`, `tokens`), counted over a window of `windowSec` seconds (null
 * when the fetcher does not say) that next resets at `resetsAtUnixMs` (Unix ms; null when unknown).
 */
export interface QuotaUsageRecord {
  readonly provider: string;
  readonly usageLabel: string;
  readonly unit: string;
  readonly used: number;
  readonly limit: number;
  readonly windowSec: number | null;
  readonly resetsAtUnixMs: number | null;
}

/** One provider's last poll: its records (from the last successful fetch) and the last error. */
export interface ProviderSnapshot {
  readonly provider: string;
  readonly records: readonly QuotaUsageRecord[];
  /** When the records were fetched (the driver's monotonic ms); null before the first success. */
  readonly fetchedAtMs: number | null;
  /** Message of the last failed fetch, cleared by the next success. */
  readonly lastError: string | null;
}

/** Whether `record` is the one `selector` names (all three fields exactly equal). */
export function matchesSelector(selector: QuotaSourceSelector, record: QuotaUsageRecord): boolean {
  return record.provider === selector.provider && record.usageLabel === selector.usageLabel && record.unit === selector.unit;
}

/** `provider/usage_label/unit`, how logs and errors name a selector. */
export function describeSelector(s: QuotaSourceSelector): string {
  return `${s.provider}/${s.usageLabel}/${s.unit}`;
}

/**
 * The latest usage records per provider (seed 000's provider quota snapshot store). One per
 * driver (gateway), shared by every RouteWise planner and configuration generation.
 */
export class QuotaSnapshotStore {
  private readonly byProvider = new Map<string, ProviderSnapshot>();

  /**
   * Replaces `provider`'s records with a successful fetch's at `nowMs`. Records of another
   * provider, or with `used` / `limit` that are not finite numbers ≥ 0 (limit > 0), are dropped.
   * @returns the records kept.
   */
  ingest(provider: string, records: readonly QuotaUsageRecord[], nowMs: number): QuotaUsageRecord[] {
    const kept = records.filter((r) => r.provider === provider && Number.isFinite(r.used) && r.used >= 0 && Number.isFinite(r.limit) && r.limit > 0);
    this.byProvider.set(provider, { provider, records: kept, fetchedAtMs: nowMs, lastError: null });
    return kept;
  }

  /** Records a failed fetch: the previous records stay (stale, with their fetch time), the error is kept. */
  fail(provider: string, message: string): void {
    const prev = this.byProvider.get(provider);
    this.byProvider.set(provider, { provider, records: prev?.records ?? [], fetchedAtMs: prev?.fetchedAtMs ?? null, lastError: message });
  }

  /** The record `selector` resolves to, with its provider's fetch time, or null. */
  resolve(selector: QuotaSourceSelector): { record: QuotaUsageRecord; fetchedAtMs: number } | null {
    const snap = this.byProvider.get(selector.provider);
    if (!snap || snap.fetchedAtMs === null) return null;
    const record = snap.records.find((r) => matchesSelector(selector, r));
    return record ? { record, fetchedAtMs: snap.fetchedAtMs } : null;
  }

  /** The provider's last poll, or undefined when it was never polled. */
  provider(provider: string): ProviderSnapshot | undefined {
    return this.byProvider.get(provider);
  }

  /** Every provider polled so far, in first-poll order. */
  providers(): ProviderSnapshot[] {
    return [...this.byProvider.values()];
  }
}

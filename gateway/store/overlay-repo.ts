/**
 * The overlay operators edit at run time — weight overrides per (model, endpoint), disabled
 * provider labels, the routing records of `routing-records.ts` (runtime models and routes,
 * re-points, router switches, offload policies), RouteWise settings and the gateway's runtime
 * settings (`auto_mode_enabled`) — and the admin audit log, kept in the store (`SqlOverlayRepo`) or, on a
 * gateway without `store:`, in this process only (`MemoryOverlayRepo`, lost at exit).
 *
 * Optimistic concurrency: every record carries a version (an absent record is version 0; each
 * write adds 1; clearing an override keeps its row with a NULL weight, so versions never go
 * back). A write may name the version it read; when the record has moved on since, the write is
 * refused with the current record (`conflict`) instead of overwriting a change it never saw.
 */
import type { Queryer, SqlStore } from './sql-store.ts';
import { MemoryRoutingRecords, SqlRoutingRecords, type RoutingRecord, type RoutingWrite, type RoutingWriteResult } from './routing-records.ts';

/** A weight override; `weight` null once cleared (the record keeps its version). */
export interface WeightOverrideRecord {
  modelId: string;
  endpointId: string;
  weight: number | null;
  version: number;
  updatedBy: string;
  /** ISO 8601. */
  updatedAt: string;
}

/** A provider label's state. */
export interface ProviderRecord {
  provider: string;
  disabled: boolean;
  version: number;
  updatedBy: string;
  /** ISO 8601. */
  updatedAt: string;
}

/**
 * One RouteWise setting: a `router_params` key of one model (by canonical id), or of the
 * fallback layer (`modelId` ''); `value` null once removed (the record keeps its version).
 */
export interface RouteWiseSettingRecord {
  modelId: string;
  key: string;
  value: unknown;
  version: number;
  updatedBy: string;
  /** ISO 8601. */
  updatedAt: string;
}

/**
 * One runtime setting of the gateway (`admin/runtime-settings-admin.ts` lists the keys), laid
 * over its gateway.yaml value; `value` null once removed (gateway.yaml applies again, and the
 * record keeps its version).
 */
export interface RuntimeSettingRecord {
  key: string;
  value: unknown;
  version: number;
  updatedBy: string;
  /** ISO 8601. */
  updatedAt: string;
}

/** The `modelId` of the RouteWise fallback layer's records. */
export const FALLBACK_LAYER = '';

/** Everything in the overlay. */
export interface OverlaySnapshot {
  weights: WeightOverrideRecord[];
  providers: ProviderRecord[];
  /** Runtime models and routes, re-points, strategy switches, offload policies (`routing-records.ts`). */
  routing: RoutingRecord[];
  /** RouteWise settings, removed ones included (value null), by model id then key. */
  routewise: RouteWiseSettingRecord[];
  /** Runtime settings, removed ones included (value null), by key. */
  settings: RuntimeSettingRecord[];
}

/** An overlay with nothing in it. */
export function emptyOverlay(): OverlaySnapshot {
  return { weights: [], providers: [], routing: [], routewise: [], settings: [] };
}

/** A weight override's key. */
export interface WeightKey {
  modelId: string;
  endpointId: string;
}

/** A routing batch's outcome: with the weight overrides it cleared, each before and after. */
export type RoutingBatchResult = (Extract<RoutingWriteResult, { ok: true }> & { weights: Array<{ before: WeightOverrideRecord; after: WeightOverrideRecord }> }) | Extract<RoutingWriteResult, { ok: false }>;

/** One audited admin call. */
export interface AuditEntry {
  id: number;
  /** ISO 8601. */
  at: string;
  /** Caller id; for a refused call `anonymous` or `key:<hash prefix>` (`refused-audit.ts`). */
  callerId: string;
  /** Address the call came from; null for entries that stand for many (a refused-calls summary). */
  remoteAddr: string | null;
  method: string;
  path: string;
  status: number;
  before: unknown;
  after: unknown;
}

/** The outcome of a versioned write: done (with the records before and after), or refused. */
export type WriteResult<T> = { ok: true; before: T | null; after: T } | { ok: false; currentVersion: number };

/** Storage of the overlay and the audit log. */
export interface OverlayRepo {
  load(): Promise<OverlaySnapshot>;
  /**
   * Sets (weight ≥ 0) or clears (null) the override of (model, endpoint).
   * @param expectedVersion the version the writer read, or null for an unconditional write.
   */
  writeWeight(modelId: string, endpointId: string, weight: number | null, expectedVersion: number | null, by: string): Promise<WriteResult<WeightOverrideRecord>>;
  /** Disables or enables a provider label (same version rule). */
  writeProvider(provider: string, disabled: boolean, expectedVersion: number | null, by: string): Promise<WriteResult<ProviderRecord>>;
  /**
   * Writes a batch of routing records in one transaction (`routing-records.ts`), and in the same
   * transaction clears the weight overrides of `clearWeights` that are set (a route that goes
   * away, or a new route on an endpoint id an old override names, must not keep or inherit it).
   * Nothing is cleared when the batch is refused.
   */
  writeRouting(writes: readonly RoutingWrite[], by: string, clearWeights?: readonly WeightKey[]): Promise<RoutingBatchResult>;
  /**
   * Sets (value not null) or removes (null) RouteWise settings of one layer in one transaction,
   * each under the version rule; `expectedVersion` (or null) applies to every key written.
   * Refused as a whole when any key's version differs. Writers of these settings take turns
   * (a table lock on the store), and `validate` sees every setting as it would be after the
   * write (removed ones included) before anything is committed: it throws to refuse, and that
   * error is thrown from here with nothing written — so two writes that are each valid alone
   * cannot commit a combination that is not.
   */
  writeRouteWise(
    modelId: string,
    values: ReadonlyArray<readonly [key: string, value: unknown]>,
    expectedVersion: number | null,
    by: string,
    validate?: (after: RouteWiseSettingRecord[]) => void,
  ): Promise<WriteResult<RouteWiseSettingRecord[]>>;
  /**
   * Sets (value not null) or removes (null) runtime setting `key`, under the version rule.
   * @param expectedVersion the version the writer read, or null for an unconditional write.
   */
  writeSetting(key: string, value: unknown, expectedVersion: number | null, by: string): Promise<WriteResult<RuntimeSettingRecord>>;
  appendAudit(e: Omit<AuditEntry, 'id' | 'at'>): Promise<void>;
  /** Newest first, at most `limit`. */
  listAudit(limit: number): Promise<AuditEntry[]>;
  /** Throws when the backing store cannot answer now. */
  ping(): Promise<void>;
}

/** The overlay in this process only (a gateway without a store). */
export class MemoryOverlayRepo implements OverlayRepo {
  private readonly weights = new Map<string, WeightOverrideRecord>();
  private readonly providers = new Map<string, ProviderRecord>();
  private readonly routewise = new Map<string, RouteWiseSettingRecord>();
  private readonly settings = new Map<string, RuntimeSettingRecord>();
  private readonly audit: AuditEntry[] = [];
  private nextAuditId = 1;
  private readonly routing = new MemoryRoutingRecords();

  /** @param auditLimit entries kept (oldest dropped first). */
  constructor(private readonly auditLimit = 10_000) {}

  async load(): Promise<OverlaySnapshot> {
    const rw = [...this.routewise.values()].sort((a, b) => (a.modelId === b.modelId ? cmp(a.key, b.key) : cmp(a.modelId, b.modelId)));
    return { weights: [...this.weights.values()].map((r) => ({ ...r })), providers: [...this.providers.values()].map((r) => ({ ...r })), routing: this.routing.load(), routewise: rw.map((r) => ({ ...r })), settings: [...this.settings.values()].sort((a, b) => cmp(a.key, b.key)).map((r) => ({ ...r })) };
  }

  async writeSetting(key: string, value: unknown, expectedVersion: number | null, by: string): Promise<WriteResult<RuntimeSettingRecord>> {
    const cur = this.settings.get(key) ?? null;
    const v = cur?.version ?? 0;
    if (expectedVersion !== null && expectedVersion !== v) return { ok: false, currentVersion: v };
    const after: RuntimeSettingRecord = { key, value, version: v + 1, updatedBy: by, updatedAt: new Date().toISOString() };
    this.settings.set(key, after);
    return { ok: true, before: cur && { ...cur }, after: { ...after } };
  }

  async writeRouting(writes: readonly RoutingWrite[], by: string, clearWeights: readonly WeightKey[] = []): Promise<RoutingBatchResult> {
    const r = this.routing.write(writes, by);
    if (!r.ok) return r;
    const weights: Array<{ before: WeightOverrideRecord; after: WeightOverrideRecord }> = [];
    for (const k of clearWeights) {
      const key = JSON.stringify([k.modelId, k.endpointId]);
      const cur = this.weights.get(key);
      if (!cur || cur.weight === null) continue;
      const after: WeightOverrideRecord = { ...cur, weight: null, version: cur.version + 1, updatedBy: by, updatedAt: new Date().toISOString() };
      this.weights.set(key, after);
      weights.push({ before: { ...cur }, after: { ...after } });
    }
    return { ...r, weights };
  }
  async writeRouteWise(modelId: string, values: ReadonlyArray<readonly [string, unknown]>, expectedVersion: number | null, by: string, validate?: (after: RouteWiseSettingRecord[]) => void): Promise<WriteResult<RouteWiseSettingRecord[]>> {
    const cur = values.map(([key]) => this.routewise.get(JSON.stringify([modelId, key])) ?? null);
    for (const c of cur) if (expectedVersion !== null && expectedVersion !== (c?.version ?? 0)) return { ok: false, currentVersion: c?.version ?? 0 };
    const at = new Date().toISOString();
    const after = values.map(([key, value], i): RouteWiseSettingRecord => ({ modelId, key, value, version: (cur[i]?.version ?? 0) + 1, updatedBy: by, updatedAt: at }));
    const written = new Set(after.map((a) => JSON.stringify([modelId, a.key])));
    validate?.([...[...this.routewise].filter(([k]) => !written.has(k)).map(([, r]) => ({ ...r })), ...after.map((a) => ({ ...a }))]);
    for (const a of after) this.routewise.set(JSON.stringify([modelId, a.key]), a);
    return { ok: true, before: cur.filter((c): c is RouteWiseSettingRecord => c !== null).map((c) => ({ ...c })), after: after.map((a) => ({ ...a })) };
  }

  async writeWeight(modelId: string, endpointId: string, weight: number | null, expectedVersion: number | null, by: string): Promise<WriteResult<WeightOverrideRecord>> {
    const key = JSON.stringify([modelId, endpointId]);
    const cur = this.weights.get(key) ?? null;
    const v = cur?.version ?? 0;
    if (expectedVersion !== null && expectedVersion !== v) return { ok: false, currentVersion: v };
    const after: WeightOverrideRecord = { modelId, endpointId, weight, version: v + 1, updatedBy: by, updatedAt: new Date().toISOString() };
    this.weights.set(key, after);
    return { ok: true, before: cur && { ...cur }, after: { ...after } };
  }

  async writeProvider(provider: string, disabled: boolean, expectedVersion: number | null, by: string): Promise<WriteResult<ProviderRecord>> {
    const cur = this.providers.get(provider) ?? null;
    const v = cur?.version ?? 0;
    if (expectedVersion !== null && expectedVersion !== v) return { ok: false, currentVersion: v };
    const after: ProviderRecord = { provider, disabled, version: v + 1, updatedBy: by, updatedAt: new Date().toISOString() };
    this.providers.set(provider, after);
    return { ok: true, before: cur && { ...cur }, after: { ...after } };
  }

  async appendAudit(e: Omit<AuditEntry, 'id' | 'at'>): Promise<void> {
    this.audit.push({ ...e, id: this.nextAuditId++, at: new Date().toISOString() });
    if (this.audit.length > this.auditLimit) this.audit.splice(0, this.audit.length - this.auditLimit);
  }

  async listAudit(limit: number): Promise<AuditEntry[]> {
    return this.audit.slice(-limit).reverse();
  }

  async ping(): Promise<void> {}
}

interface WeightRow {
  model_id: string;
  endpoint_id: string;
  weight: number | null;
  version: number;
  updated_by: string;
  updated_at: Date | string;
}

interface ProviderRow {
  provider: string;
  disabled: boolean;
  version: number;
  updated_by: string;
  updated_at: Date | string;
}

interface SettingRow {
  key: string;
  value: unknown;
  version: number;
  updated_by: string;
  updated_at: Date | string;
}

interface RouteWiseRow {
  model_id: string;
  key: string;
  value: unknown;
  version: number;
  updated_by: string;
  updated_at: Date | string;
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const iso = (t: Date | string): string => (t instanceof Date ? t.toISOString() : new Date(t).toISOString());
const weightRecord = (r: WeightRow): WeightOverrideRecord => ({ modelId: r.model_id, endpointId: r.endpoint_id, weight: r.weight === null ? null : Number(r.weight), version: r.version, updatedBy: r.updated_by, updatedAt: iso(r.updated_at) });
const routeWiseRecord = (r: RouteWiseRow): RouteWiseSettingRecord => ({ modelId: r.model_id, key: r.key, value: r.value ?? null, version: r.version, updatedBy: r.updated_by, updatedAt: iso(r.updated_at) });
const settingRecord = (r: SettingRow): RuntimeSettingRecord => ({ key: r.key, value: r.value ?? null, version: r.version, updatedBy: r.updated_by, updatedAt: iso(r.updated_at) });
const providerRecord = (r: ProviderRow): ProviderRecord => ({ provider: r.provider, disabled: r.disabled, version: r.version, updatedBy: r.updated_by, updatedAt: iso(r.updated_at) });

/** The overlay in the SQL store (PGlite or PostgreSQL; the same statements). */
export class SqlOverlayRepo implements OverlayRepo {
  private readonly routing: SqlRoutingRecords;

  constructor(private readonly store: SqlStore) {
    this.routing = new SqlRoutingRecords(store);
  }

  async load(): Promise<OverlaySnapshot> {
    const w = await this.store.query<WeightRow>('SELECT * FROM weight_overrides ORDER BY model_id, endpoint_id');
    const p = await this.store.query<ProviderRow>('SELECT * FROM disabled_providers ORDER BY provider');
    // COLLATE "C": the same order as the in-memory repo's code-unit comparison.
    const rw = await this.store.query<RouteWiseRow>('SELECT * FROM routewise_settings ORDER BY model_id COLLATE "C", key COLLATE "C"');
    const st = await this.store.query<SettingRow>('SELECT * FROM runtime_settings ORDER BY key COLLATE "C"');
    return { weights: w.rows.map(weightRecord), providers: p.rows.map(providerRecord), routing: await this.routing.load(), routewise: rw.rows.map(routeWiseRecord), settings: st.rows.map(settingRecord) };
  }

  writeSetting(key: string, value: unknown, expectedVersion: number | null, by: string): Promise<WriteResult<RuntimeSettingRecord>> {
    // Inside `transaction`, so PostgreSQL announces the change to the other replicas at commit.
    return this.store.transaction(async (q) => {
      const cur = (await q.query<SettingRow>('SELECT * FROM runtime_settings WHERE key = $1 FOR UPDATE', [key])).rows[0];
      return versionedWrite(
        q,
        cur ? settingRecord(cur) : null,
        expectedVersion,
        'INSERT INTO runtime_settings (key, value, version, updated_by) VALUES ($1, $2::jsonb, 1, $3) ON CONFLICT (key) DO NOTHING RETURNING *',
        'UPDATE runtime_settings SET value = $2::jsonb, version = version + 1, updated_by = $3, updated_at = now() WHERE key = $1 AND version = $4 RETURNING *',
        [key, value === null ? null : JSON.stringify(value), by],
        settingRecord,
      );
    });
  }

  async writeRouting(writes: readonly RoutingWrite[], by: string, clearWeights: readonly WeightKey[] = []): Promise<RoutingBatchResult> {
    const r = await this.routing.write(writes, by, async (q) => {
      const weights: Array<{ before: WeightOverrideRecord; after: WeightOverrideRecord }> = [];
      for (const k of clearWeights) {
        const cur = (await q.query<WeightRow>('SELECT * FROM weight_overrides WHERE model_id = $1 AND endpoint_id = $2 FOR UPDATE', [k.modelId, k.endpointId])).rows[0];
        if (!cur || cur.weight === null) continue;
        const done = (await q.query<WeightRow>('UPDATE weight_overrides SET weight = NULL, version = version + 1, updated_by = $3, updated_at = now() WHERE model_id = $1 AND endpoint_id = $2 RETURNING *', [k.modelId, k.endpointId, by])).rows[0]!;
        weights.push({ before: weightRecord(cur), after: weightRecord(done) });
      }
      return weights;
    });
    if (!r.ok) return r;
    const { also, ...rest } = r;
    return { ...rest, weights: also ?? [] };
  }
  writeRouteWise(modelId: string, values: ReadonlyArray<readonly [string, unknown]>, expectedVersion: number | null, by: string, validate?: (after: RouteWiseSettingRecord[]) => void): Promise<WriteResult<RouteWiseSettingRecord[]>> {
    return this.store.transaction(async (q) => {
      // Readers are not blocked; other writers of these settings wait for this commit.
      await q.query('LOCK TABLE routewise_settings IN EXCLUSIVE MODE');
      const before: RouteWiseSettingRecord[] = [];
      const after: RouteWiseSettingRecord[] = [];
      for (const [key, value] of values) {
        const cur = (await q.query<RouteWiseRow>('SELECT * FROM routewise_settings WHERE model_id = $1 AND key = $2 FOR UPDATE', [modelId, key])).rows[0];
        const r = await versionedWrite(
          q,
          cur ? routeWiseRecord(cur) : null,
          expectedVersion,
          'INSERT INTO routewise_settings (model_id, key, value, version, updated_by) VALUES ($1, $2, $3::jsonb, 1, $4) ON CONFLICT (model_id, key) DO NOTHING RETURNING *',
          'UPDATE routewise_settings SET value = $3::jsonb, version = version + 1, updated_by = $4, updated_at = now() WHERE model_id = $1 AND key = $2 AND version = $5 RETURNING *',
          [modelId, key, value === null ? null : JSON.stringify(value), by],
          routeWiseRecord,
        );
        // A refusal rolls back the keys already written: the layer changes as a whole or not at all.
        if (!r.ok) throw new RefusedWrite(r.currentVersion);
        if (r.before) before.push(r.before);
        after.push(r.after);
      }
      if (validate) validate((await q.query<RouteWiseRow>('SELECT * FROM routewise_settings ORDER BY model_id COLLATE "C", key COLLATE "C"')).rows.map(routeWiseRecord));
      return { ok: true as const, before, after };
    }).catch((e: unknown) => {
      if (e instanceof RefusedWrite) return { ok: false as const, currentVersion: e.currentVersion };
      throw e;
    });
  }

  writeWeight(modelId: string, endpointId: string, weight: number | null, expectedVersion: number | null, by: string): Promise<WriteResult<WeightOverrideRecord>> {
    return this.store.transaction(async (q) => {
      const cur = (await q.query<WeightRow>('SELECT * FROM weight_overrides WHERE model_id = $1 AND endpoint_id = $2 FOR UPDATE', [modelId, endpointId])).rows[0];
      return versionedWrite(
        q,
        cur ? weightRecord(cur) : null,
        expectedVersion,
        'INSERT INTO weight_overrides (model_id, endpoint_id, weight, version, updated_by) VALUES ($1, $2, $3, 1, $4) ON CONFLICT (model_id, endpoint_id) DO NOTHING RETURNING *',
        'UPDATE weight_overrides SET weight = $3, version = version + 1, updated_by = $4, updated_at = now() WHERE model_id = $1 AND endpoint_id = $2 AND version = $5 RETURNING *',
        [modelId, endpointId, weight, by],
        weightRecord,
      );
    });
  }

  writeProvider(provider: string, disabled: boolean, expectedVersion: number | null, by: string): Promise<WriteResult<ProviderRecord>> {
    return this.store.transaction(async (q) => {
      const cur = (await q.query<ProviderRow>('SELECT * FROM disabled_providers WHERE provider = $1 FOR UPDATE', [provider])).rows[0];
      return versionedWrite(
        q,
        cur ? providerRecord(cur) : null,
        expectedVersion,
        'INSERT INTO disabled_providers (provider, disabled, version, updated_by) VALUES ($1, $2, 1, $3) ON CONFLICT (provider) DO NOTHING RETURNING *',
        'UPDATE disabled_providers SET disabled = $2, version = version + 1, updated_by = $3, updated_at = now() WHERE provider = $1 AND version = $4 RETURNING *',
        [provider, disabled, by],
        providerRecord,
      );
    });
  }

  async appendAudit(e: Omit<AuditEntry, 'id' | 'at'>): Promise<void> {
    await this.store.query('INSERT INTO audit_log (caller_id, remote_addr, method, path, status, before, after) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
      e.callerId,
      e.remoteAddr,
      e.method,
      e.path,
      e.status,
      e.before === null || e.before === undefined ? null : JSON.stringify(e.before),
      e.after === null || e.after === undefined ? null : JSON.stringify(e.after),
    ]);
  }

  async listAudit(limit: number): Promise<AuditEntry[]> {
    const r = await this.store.query<{ id: string | number; at: Date | string; caller_id: string; remote_addr: string | null; method: string; path: string; status: number; before: unknown; after: unknown }>(
      'SELECT * FROM audit_log ORDER BY id DESC LIMIT $1',
      [limit],
    );
    return r.rows.map((x) => ({ id: Number(x.id), at: iso(x.at), callerId: x.caller_id, remoteAddr: x.remote_addr ?? null, method: x.method, path: x.path, status: x.status, before: x.before ?? null, after: x.after ?? null }));
  }

  async ping(): Promise<void> {
    await this.store.query('SELECT 1');
  }
}

/** Thrown inside a transaction to roll it back when a versioned write is refused. */
class RefusedWrite extends Error {
  constructor(readonly currentVersion: number) {
    super(`version conflict (record at version ${currentVersion})`);
  }
}

/**
 * The version check and write shared by both record kinds. The row was read FOR UPDATE; an
 * absent row is inserted with ON CONFLICT DO NOTHING, so two writers that both saw version 0
 * cannot both win (the loser gets no row back and is refused).
 * @param params the key and values, in the statements' `$1…$n` order; the update gets the
 *   expected version as its last parameter.
 */
async function versionedWrite<T extends { version: number }, R>(
  q: Queryer,
  cur: T | null,
  expectedVersion: number | null,
  insertSql: string,
  updateSql: string,
  params: unknown[],
  toRecord: (r: R) => T,
): Promise<WriteResult<T>> {
  const v = cur?.version ?? 0;
  if (expectedVersion !== null && expectedVersion !== v) return { ok: false, currentVersion: v };
  const r = cur ? await q.query<R>(updateSql, [...params, v]) : await q.query<R>(insertSql, params);
  const row = r.rows[0];
  if (!row) return { ok: false, currentVersion: v + 1 };
  return { ok: true, before: cur, after: toRecord(row) };
}

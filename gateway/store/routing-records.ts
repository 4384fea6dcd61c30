/**
 * The routing part of the overlay: records that add to or change the models of the YAML
 * registry at run time (`admin/effective-models.ts` lays them over it). One record per
 * (kind, model, key):
 * - `model` (key ''): a runtime model — aliases, published, router, router_params;
 * - `route` (key = route id): a runtime route of a model — a whole `route:` entry;
 * - `repoint` (key = route id): fields that replace those of a YAML route (the route id stays);
 * - `strategy` (key ''): the router a model switches to;
 * - `offload` (key ''): the model's offload policy (route id, wait, engine queue limit, max input).
 *
 * Same version rule as the rest of the overlay: a record that is removed keeps its row with a
 * null value, so its version never goes back. `seq` orders records: it is drawn when a record
 * is created or revived, so runtime routes keep the order in which they were added. A batch of
 * writes (a runtime model and its first route) is one transaction: every write's expectation
 * holds, or nothing is written.
 */
import type { Queryer, SqlStore } from './sql-store.ts';

/** What a record describes. */
export type RoutingRecordKind = 'model' | 'route' | 'repoint' | 'strategy' | 'offload';

/** One routing record; `value` null once removed (the record keeps its version). */
export interface RoutingRecord {
  kind: RoutingRecordKind;
  modelId: string;
  /** Route id for `route` / `repoint`; '' otherwise. */
  key: string;
  /** JSON value (the shape depends on `kind`), or null when removed. */
  value: unknown;
  /** Order of creation (or revival), ascending. */
  seq: number;
  version: number;
  updatedBy: string;
  /** ISO 8601. */
  updatedAt: string;
}

/**
 * One write of a batch. `expect`: the version the writer read (a stale one refuses the batch),
 * `'absent'` (the record must not exist or must be removed: a create), or null (unconditional).
 */
export interface RoutingWrite {
  kind: RoutingRecordKind;
  modelId: string;
  key: string;
  value: unknown;
  expect: number | 'absent' | null;
}

/**
 * The outcome of a batch: every record before and after, or the first write refused with the
 * version it found (`exists` when a create met a live record).
 */
export type RoutingWriteResult =
  | { ok: true; before: Array<RoutingRecord | null>; after: RoutingRecord[] }
  | { ok: false; index: number; currentVersion: number; exists: boolean };

const keyOf = (kind: string, modelId: string, key: string): string => JSON.stringify([kind, modelId, key]);

/**
 * Whether `cur` (the record `w` addresses, or null) meets `w.expect`: null when it does, else the
 * refusal the batch gets, `index` naming `w`.
 */
export function refusal(w: RoutingWrite, cur: RoutingRecord | null, index: number): Extract<RoutingWriteResult, { ok: false }> | null {
  const v = cur?.version ?? 0;
  const live = cur !== null && cur.value !== null;
  if (w.expect === 'absent' && live) return { ok: false, index, currentVersion: v, exists: true };
  if (typeof w.expect === 'number' && w.expect !== v) return { ok: false, index, currentVersion: v, exists: false };
  return null;
}

/** Routing records in this process only (a gateway without a store). */
export class MemoryRoutingRecords {
  private readonly records = new Map<string, RoutingRecord>();
  private seq = 0;

  /** Every record, in `seq` order. */
  load(): RoutingRecord[] {
    return [...this.records.values()].sort((a, b) => a.seq - b.seq).map((r) => ({ ...r }));
  }

  /** Applies the batch when every expectation holds. */
  write(writes: readonly RoutingWrite[], by: string): RoutingWriteResult {
    const cur = writes.map((w) => this.records.get(keyOf(w.kind, w.modelId, w.key)) ?? null);
    for (let i = 0; i < writes.length; i++) {
      const no = refusal(writes[i]!, cur[i]!, i);
      if (no) return no;
    }
    const after = writes.map((w, i) => {
      const c = cur[i]!;
      const revive = c === null || (c.value === null && w.value !== null);
      const r: RoutingRecord = { kind: w.kind, modelId: w.modelId, key: w.key, value: w.value, seq: revive ? ++this.seq : c.seq, version: (c?.version ?? 0) + 1, updatedBy: by, updatedAt: new Date().toISOString() };
      this.records.set(keyOf(w.kind, w.modelId, w.key), r);
      return { ...r };
    });
    return { ok: true, before: cur.map((c) => c && { ...c }), after };
  }
}

interface RecordRow {
  kind: RoutingRecordKind;
  model_id: string;
  key: string;
  value: unknown;
  seq: string | number;
  version: number;
  updated_by: string;
  updated_at: Date | string;
}

const iso = (t: Date | string): string => (t instanceof Date ? t.toISOString() : new Date(t).toISOString());
const toRecord = (r: RecordRow): RoutingRecord => ({ kind: r.kind, modelId: r.model_id, key: r.key, value: r.value ?? null, seq: Number(r.seq), version: r.version, updatedBy: r.updated_by, updatedAt: iso(r.updated_at) });

/** Routing records in the SQL store (`routing_records`, migration 3). */
export class SqlRoutingRecords {
  constructor(private readonly store: SqlStore) {}

  /** Every record, in `seq` order. */
  async load(q: Queryer = this.store): Promise<RoutingRecord[]> {
    const r = await q.query<RecordRow>('SELECT * FROM routing_records ORDER BY seq, kind, model_id, key');
    return r.rows.map(toRecord);
  }

  /**
   * Applies the batch in one transaction. Rows are read FOR UPDATE; a missing row is inserted
   * with ON CONFLICT DO NOTHING, so two writers that both found it missing cannot both win.
   * @param also more statements of the same transaction, run after the batch was written (not
   *   when it is refused); its result is returned with the batch's.
   */
  write<T = undefined>(writes: readonly RoutingWrite[], by: string, also?: (q: Queryer) => Promise<T>): Promise<RoutingWriteResult & { also?: T }> {
    return this.store.transaction(async (q) => {
      const before: Array<RoutingRecord | null> = [];
      const after: RoutingRecord[] = [];
      for (let i = 0; i < writes.length; i++) {
        const w = writes[i]!;
        const row = (await q.query<RecordRow>('SELECT * FROM routing_records WHERE kind = $1 AND model_id = $2 AND key = $3 FOR UPDATE', [w.kind, w.modelId, w.key])).rows[0];
        const cur = row ? toRecord(row) : null;
        const no = refusal(w, cur, i);
        if (no) throw new Refused(no);
        const value = w.value === null ? null : JSON.stringify(w.value);
        const r = cur
          ? await q.query<RecordRow>(
              `UPDATE routing_records SET value = $4::jsonb, version = version + 1, updated_by = $5, updated_at = now(),
                 seq = CASE WHEN value IS NULL AND $4::jsonb IS NOT NULL THEN nextval('routing_record_seq') ELSE seq END
               WHERE kind = $1 AND model_id = $2 AND key = $3 AND version = $6 RETURNING *`,
              [w.kind, w.modelId, w.key, value, by, cur.version],
            )
          : await q.query<RecordRow>(
              `INSERT INTO routing_records (kind, model_id, key, value, seq, version, updated_by) VALUES ($1, $2, $3, $4::jsonb, nextval('routing_record_seq'), 1, $5)
               ON CONFLICT (kind, model_id, key) DO NOTHING RETURNING *`,
              [w.kind, w.modelId, w.key, value, by],
            );
        const done = r.rows[0];
        if (!done) throw new Refused({ ok: false, index: i, currentVersion: (cur?.version ?? 0) + 1, exists: w.expect === 'absent' });
        before.push(cur);
        after.push(toRecord(done));
      }
      const more = also ? await also(q) : undefined;
      return { ok: true as const, before, after, ...(more !== undefined && { also: more }) };
    }).catch((e: unknown) => {
      if (e instanceof Refused) return e.result;
      throw e;
    });
  }
}

/** Rolls the batch's transaction back and carries the refusal out of it. */
class Refused extends Error {
  constructor(readonly result: Extract<RoutingWriteResult, { ok: false }>) {
    super('routing write refused');
  }
}

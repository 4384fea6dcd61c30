/**
 * The `/v1/responses` response store on the control plane's database (`stored_responses`,
 * migration 5): every gateway replica and worker sharing the store sees the responses the others
 * stored, so a follow-up turn (`previous_response_id`) or a `GET /v1/responses/{id}` may land on
 * any of them. Rows older than the TTL read as gone and are deleted, at most once a minute, by
 * the next write.
 */
import type { ResponseStore, StoredResponse } from '../endpoints/responses/response-store.ts';
import type { Queryer } from './sql-store.ts';

/** How long a stored response is kept by default: 30 days (OpenAI's own retention of stored responses). */
export const DEFAULT_SQL_TTL_MS = 30 * 24 * 3_600_000;

/** Least time between two sweeps of expired rows, ms. */
const SWEEP_EVERY_MS = 60_000;

/** Responses in the store's `stored_responses` table. */
export class SqlResponseStore implements ResponseStore {
  private lastSweepMs = Number.NEGATIVE_INFINITY;

  /** `now`: wall-clock ms (the stored age is compared on it). @throws Error when `ttlMs` is not positive. */
  constructor(private readonly q: Queryer, private readonly ttlMs: number = DEFAULT_SQL_TTL_MS, private readonly now: () => number = Date.now) {
    if (!(ttlMs > 0)) throw new Error(`the stored-response TTL must be positive (got ${ttlMs} ms)`);
  }

  async get(id: string): Promise<StoredResponse | null> {
    const { rows } = await this.q.query<{ id: string; endpoint_id: string; response: unknown; input: unknown }>(
      'SELECT id, endpoint_id, response, input FROM stored_responses WHERE id = $1 AND stored_at_ms > $2',
      [id, this.now() - this.ttlMs],
    );
    const r = rows[0];
    if (r === undefined) return null;
    const response = typeof r.response === 'string' ? (JSON.parse(r.response) as Record<string, unknown>) : (r.response as Record<string, unknown>);
    const input = typeof r.input === 'string' ? (JSON.parse(r.input) as unknown[]) : (r.input as unknown[]);
    return { id: r.id, endpointId: r.endpoint_id, response, input };
  }

  async put(r: StoredResponse): Promise<void> {
    const nowMs = this.now();
    await this.q.query(
      `INSERT INTO stored_responses (id, endpoint_id, response, input, stored_at_ms) VALUES ($1, $2, $3::jsonb, $4::jsonb, $5)
       ON CONFLICT (id) DO UPDATE SET endpoint_id = EXCLUDED.endpoint_id, response = EXCLUDED.response, input = EXCLUDED.input, stored_at_ms = EXCLUDED.stored_at_ms`,
      [r.id, r.endpointId, JSON.stringify(r.response), JSON.stringify(r.input), nowMs],
    );
    if (nowMs - this.lastSweepMs >= SWEEP_EVERY_MS) {
      this.lastSweepMs = nowMs;
      await this.q.query('DELETE FROM stored_responses WHERE stored_at_ms <= $1', [nowMs - this.ttlMs]);
    }
  }
}

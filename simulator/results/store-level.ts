/** What a run keeps in the results (`--store`), and which of a run's row tables that needs. */
import type { TableName } from './schema.ts';

/**
 * What a run writes to the results: `full` — requests, attempts, endpoint samples and events
 * (what the dashboard draws); `requests` — requests only; `summary` — only the run and its
 * summary row (the requests pass through an in-memory table to compute it), what a planner or a
 * large sweep needs. Every level writes `experiments`, `runs` and `summary`.
 */
export type StoreLevel = 'summary' | 'requests' | 'full';

/** The `--store` values, in order of what they keep. */
export const STORE_LEVELS: readonly StoreLevel[] = ['summary', 'requests', 'full'];

/** The row tables a level needs from a run (what the replay should hand over at all). */
export function tablesOfLevel(level: StoreLevel): Array<Extract<TableName, 'requests' | 'attempts' | 'endpoint_timeseries' | 'events'>> {
  return level === 'full' ? ['requests', 'attempts', 'endpoint_timeseries', 'events'] : ['requests'];
}


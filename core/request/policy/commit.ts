/**
 * The commit rule: the moment an attempt's output starts going to the client, after which the
 * request never fails over or retries (a later failure is an in-band error). Two points:
 * - `first_token` — the first content or tool-call delta of a stream (seed 000: `router:` models;
 *   seed 003: aliases whose `stream_timeout` or own `timeout` asks for the first chunk);
 * - `response_start` — the upstream's first output, headers included (seed 003: aliases that set
 *   no first-chunk wait).
 * A non-stream response commits when it is complete, whatever the point.
 */

/** Where a stream commits. */
export type CommitPoint = 'first_token' | 'response_start';

/** Events of an attempt that may commit it. */
export type CommitEvent = 'first_output' | 'first_token' | 'finished';

/** Whether `event` of a not yet committed attempt commits it under `point`. Pure. */
export function commitsAt(point: CommitPoint, event: CommitEvent, stream: boolean): boolean {
  if (event === 'finished') return true;
  if (!stream) return false;
  return event === 'first_token' || point === 'response_start';
}

/**
 * The counts every request life keeps balanced, whatever the model kind: no attempt live after
 * `done`; every attempt begun (ids count from 1, a skipped one included) is recorded or live;
 * every ticket (outbound slot or engine-hold place) taken is released or still held by a live
 * attempt, and no live attempt keeps a released one.
 */
import type { AttemptRecord } from '../lifecycle/seam.ts';
import type { LiveAttempt } from './live-attempt.ts';

/** What `checkLedger` reads of a life (`life.ts`). */
export interface LedgerView {
  readonly requestId: string;
  readonly done: boolean;
  readonly live: readonly LiveAttempt[];
  readonly attempts: readonly AttemptRecord[];
  readonly nextAttemptId: number;
  readonly ticketsTaken: number;
  readonly ticketsReleased: number;
}

/**
 * Checks the life's attempt and ticket counts.
 * @throws Error naming the request and the count that disagrees.
 */
export function checkLedger(life: LedgerView): void {
  const id = life.requestId;
  if (life.done && life.live.length > 0) throw new Error(`${id}: ${life.live.length} attempt(s) still live after done`);
  let tickets = 0;
  for (const a of life.live) {
    if (a.ticket === null) continue;
    tickets++;
    if (a.ticket.state === 'released') throw new Error(`${id}: attempt ${a.attemptId} keeps a released ticket`);
  }
  if (life.attempts.length + life.live.length !== life.nextAttemptId - 1) throw new Error(`${id}: attempts recorded + live != attempts started`);
  if (life.ticketsTaken !== life.ticketsReleased + tickets) {
    throw new Error(`${id}: slot tickets taken ${life.ticketsTaken} != released ${life.ticketsReleased} + held ${tickets}`);
  }
}

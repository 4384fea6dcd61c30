/**
 * The attempt ledger every request life keeps, whatever the model kind: attempt ids (one per
 * attempt, from 1, a skipped one included), the record of every ended attempt in start order
 * (the metadata's `attempts`), and the count of outbound-slot / hold-place tickets taken and
 * released, so the life's invariants can check that every attempt begun is ended or live and
 * every ticket taken is released or held.
 */
import type { AttemptRecord } from '../lifecycle/seam.ts';

/** The records of a life with none yet: shared, never written (a life's first record replaces it). */
const NO_RECORDS: readonly AttemptRecord[] = Object.freeze([]);

/** One request's ledger. Owned by its life; never shared. */
export class AttemptLedger {
  /**
   * Every ended attempt, in start order. Starts as a shared empty array and becomes the
   * request's own at the first record, sized to it (most lives record one attempt).
   */
  private recorded: readonly AttemptRecord[] = NO_RECORDS;
  /** The id the next attempt gets. */
  nextId = 1;
  /** Tickets (outbound slot or engine-hold place) taken, and released, by this request's attempts. */
  ticketsTaken = 0;
  ticketsReleased = 0;

  /** Every ended attempt, in start order (read-only view). */
  get records(): readonly AttemptRecord[] {
    return this.recorded;
  }

  /** Appends the record of an ended attempt. */
  record(r: AttemptRecord): void {
    if (this.recorded === NO_RECORDS) this.recorded = [r];
    else (this.recorded as AttemptRecord[]).push(r);
  }

  /** The records as the request's own array (for the routing metadata, which outlives the life). */
  list(): AttemptRecord[] {
    return this.recorded === NO_RECORDS ? [] : (this.recorded as AttemptRecord[]);
  }

  /** Takes the next attempt id. */
  take(): number {
    return this.nextId++;
  }

  /**
   * Checks the counts against what the life still holds: `live` attempts started and not ended,
   * `heldTickets` tickets still held by them.
   * @throws Error naming `requestId` and the count that disagrees.
   */
  check(requestId: string, live: number, heldTickets: number): void {
    if (this.recorded.length + live !== this.nextId - 1) throw new Error(`${requestId}: attempts recorded + live != attempts started`);
    if (this.ticketsTaken !== this.ticketsReleased + heldTickets) {
      throw new Error(`${requestId}: slot tickets taken ${this.ticketsTaken} != released ${this.ticketsReleased} + held ${heldTickets}`);
    }
  }
}

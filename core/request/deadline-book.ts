/**
 * The deadlines one request life has armed. Every wait of a life — overall, queue give-up,
 * headers, a stream's first token, non-stream total (a stream's total is the overall deadline),
 * stream idle, engine wait, hedge checkpoint, retry backoff — is a
 * `wait_until` action the life emits and a `deadline` event the driver reports back; this book
 * maps the event's id back to what was armed, and forgets what the life no longer waits for (a
 * forgotten deadline's event is ignored).
 *
 * Packed in one small-integer array indexed by deadline id: `attemptId * 16 + kind code`
 * (deadlines of the whole life have attempt 0), 0 once fired or disarmed. A life arms a handful,
 * so scans are short, and nothing is allocated per deadline.
 *
 * A request life is its own book (`Life` extends `DeadlineBook`): one object per request instead
 * of two, since every life arms deadlines.
 */
import type { LifecycleAction } from '../lifecycle/seam.ts';

/** What a deadline bounds. */
export type DeadlineKind = 'overall' | 'queue' | 'headers' | 'total' | 'idle' | 'engine_wait' | 'hedge' | 'backoff' | 'first_token';

const KIND_OF: readonly DeadlineKind[] = ['overall', 'overall', 'queue', 'headers', 'total', 'idle', 'engine_wait', 'hedge', 'backoff', 'first_token'];

/**
 * The code of `kind` in a packed deadline (its index in `KIND_OF`, 1–9). A switch rather than a
 * lookup table: one call site sees every kind, and a keyed property load over that many names
 * takes V8's slow generic path, where a switch compares interned strings by identity.
 */
function kindCode(kind: DeadlineKind): number {
  switch (kind) {
    case 'overall':
      return 1;
    case 'queue':
      return 2;
    case 'headers':
      return 3;
    case 'total':
      return 4;
    case 'idle':
      return 5;
    case 'engine_wait':
      return 6;
    case 'hedge':
      return 7;
    case 'backoff':
      return 8;
    case 'first_token':
      return 9;
  }
}

/** The `wait_until` action `arm` returns. */
export type WaitUntil = Extract<LifecycleAction, { kind: 'wait_until' }>;

/** The kind of a packed deadline (as `take` returns it). */
export function deadlineKind(packed: number): DeadlineKind {
  return KIND_OF[packed & 15]!;
}

/** The attempt id of a packed deadline (0: the life's own). */
export function deadlineAttempt(packed: number): number {
  return packed >> 4;
}

/** Armed deadlines of one life, by id (ids count up from 1 per life). */
export class DeadlineBook {
  private readonly packed: number[] = [0, 0, 0, 0, 0, 0, 0, 0];
  private nextDeadlineId = 1;

  /** Arms a deadline of `kind` for `attemptId` (0: the life's own) at `atMs`; returns its `wait_until`. */
  arm(kind: DeadlineKind, attemptId: number, atMs: number): WaitUntil {
    const deadlineId = this.nextDeadlineId++;
    this.packed[deadlineId] = attemptId * 16 + kindCode(kind);
    return { kind: 'wait_until', deadlineId, atMs };
  }

  /** Forgets `attemptId`'s armed deadlines of `kind`. */
  disarm(attemptId: number, kind: DeadlineKind): void {
    const d = this.packed;
    const p = attemptId * 16 + kindCode(kind);
    for (let i = 1; i < this.nextDeadlineId; i++) if (d[i] === p) d[i] = 0;
  }

  /** Forgets every armed deadline of `attemptId`. */
  disarmAttempt(attemptId: number): void {
    const d = this.packed;
    for (let i = 1; i < this.nextDeadlineId; i++) if (d[i]! >> 4 === attemptId && d[i] !== 0) d[i] = 0;
  }

  /** Whether deadline `deadlineId` is still armed. */
  armed(deadlineId: number): boolean {
    return (this.packed[deadlineId] ?? 0) !== 0;
  }

  /**
   * Takes a fired deadline: its packed value (`deadlineKind`, `deadlineAttempt`), forgetting it;
   * 0 when it is unknown, already fired or disarmed.
   */
  take(deadlineId: number): number {
    const p = this.packed[deadlineId] ?? 0;
    if (p !== 0) this.packed[deadlineId] = 0;
    return p;
  }

  /** Forgets every deadline (the life ended). */
  disarmAll(): void {
    this.packed.fill(0);
  }
}

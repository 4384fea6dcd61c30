import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { EventQueue } from '../../simulator/event-queue.ts';

describe('EventQueue', () => {
  it('pops in (time, insertion) order for any schedule', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 300 }), (times) => {
        const q = new EventQueue<number>();
        times.forEach((t, i) => q.push(t, i));
        const out: Array<[number, number]> = [];
        for (let e = q.pop(); e; e = q.pop()) out.push([e.atMs, e.data]);
        const expected = times.map((t, i) => [t, i] as [number, number]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
        expect(out).toEqual(expected);
      }),
    );
  });

  it('interleaved pushes and pops never return an event earlier than one already popped', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.record({ push: fc.double({ min: 0, max: 1000, noNaN: true }) }), fc.constant({ pop: true }))),
        (ops) => {
          const q = new EventQueue<null>();
          let now = 0;
          for (const op of ops) {
            if ('push' in op) q.push(now + op.push, null);
            else {
              const e = q.pop();
              if (e) {
                expect(e.atMs).toBeGreaterThanOrEqual(now);
                now = e.atMs;
              }
            }
          }
        },
      ),
    );
  });

  it('rejects non-finite times', () => {
    expect(() => new EventQueue().push(Number.NaN, 1)).toThrow(/finite/);
  });
});

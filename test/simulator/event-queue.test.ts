import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { EventQueue, Popped } from '../../simulator/event-queue.ts';

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

  it('heap, lanes, timers and arrivals pop in one (time, schedule) order, as if every event were on one heap', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('push' as const), dt: fc.integer({ min: 0, max: 20 }) }),
      fc.record({ kind: fc.constant('lane' as const), lane: fc.integer({ min: 0, max: 1 }), dt: fc.integer({ min: 0, max: 20 }) }),
      fc.record({ kind: fc.constant('arm' as const), timer: fc.integer({ min: 0, max: 2 }), dt: fc.integer({ min: 0, max: 20 }) }),
      fc.record({ kind: fc.constant('disarm' as const), timer: fc.integer({ min: 0, max: 2 }) }),
      fc.constant({ kind: 'pop' as const }),
    );
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 60 }), { maxLength: 20 }), fc.array(op, { maxLength: 200 }), (arrivalTimes, ops) => {
        const arrivals = [...arrivalTimes].sort((a, b) => a - b);
        const q = new EventQueue<string>(2, 3);
        // Reference: every pending event in one list; a timer keeps at most one entry.
        type Ref = { at: number; seq: number; what: string };
        let ref: Ref[] = [];
        let seq = 0;
        q.setArrivals(arrivals);
        arrivals.forEach((t, i) => ref.push({ at: t, seq: seq++, what: `arrival ${i}` }));
        let now = 0;
        let n = 0;
        const popBoth = () => {
          ref.sort((a, b) => a.at - b.at || a.seq - b.seq);
          const want = ref.shift();
          const src = q.next();
          if (!want) return expect(src).toBe(Popped.None);
          const got = src === Popped.Timer ? `timer ${q.timer}` : src === Popped.Arrival ? `arrival ${q.arrival}` : q.data;
          expect([q.atMs, got]).toEqual([want.at, want.what]);
          now = q.atMs;
        };
        for (const o of ops) {
          if (o.kind === 'push') {
            const what = `event ${n++}`;
            q.push(now + o.dt, what);
            ref.push({ at: now + o.dt, seq: seq++, what });
          } else if (o.kind === 'lane') {
            const what = `event ${n++}`;
            q.pushLane(o.lane, now + o.dt, what);
            ref.push({ at: now + o.dt, seq: seq++, what });
          } else if (o.kind === 'arm') {
            q.arm(o.timer, now + o.dt);
            ref = ref.filter((r) => r.what !== `timer ${o.timer}`);
            ref.push({ at: now + o.dt, seq: seq++, what: `timer ${o.timer}` });
          } else if (o.kind === 'disarm') {
            q.disarm(o.timer);
            ref = ref.filter((r) => r.what !== `timer ${o.timer}`);
          } else popBoth();
          expect(q.size).toBe(ref.length);
        }
        while (ref.length > 0) popBoth();
        expect(q.next()).toBe(Popped.None);
      }),
    );
  });
});

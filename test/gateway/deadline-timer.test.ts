import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeadlineTimer } from '../../gateway/server/deadline-timer.ts';

// Fake timers: the order and the times deadlines are reported at, not how fast.
describe('DeadlineTimer', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const setup = () => {
    const fired: Array<[number, number]> = [];
    const t: DeadlineTimer = new DeadlineTimer(
      () => Date.now(),
      (id) => fired.push([id, Date.now()]),
    );
    return { t, fired, t0: Date.now() };
  };

  it('reports each deadline at its time, earliest first, whatever the arming order', () => {
    const { t, fired, t0 } = setup();
    t.add(1, t0 + 600_000);
    t.add(2, t0 + 30_000);
    t.add(3, t0 + 60_000);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(29_999);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(600_000);
    expect(fired).toEqual([
      [2, t0 + 30_000],
      [3, t0 + 60_000],
      [1, t0 + 600_000],
    ]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('reports deadlines due at the same time together, in arming order', () => {
    const { t, fired, t0 } = setup();
    t.add(5, t0 + 100);
    t.add(4, t0 + 100);
    t.add(6, t0 + 50);
    vi.advanceTimersByTime(100);
    expect(fired.map(([id]) => id)).toEqual([6, 5, 4]);
    expect(fired[1]![1]).toBe(t0 + 100);
  });

  it('schedules a deadline armed while reporting on its own, even when already due', () => {
    const fired: number[] = [];
    const t0 = Date.now();
    const t: DeadlineTimer = new DeadlineTimer(
      () => Date.now(),
      (id) => {
        fired.push(id);
        if (id === 1) t.add(9, t0); // due already: next callback, not this one
      },
    );
    t.add(1, t0 + 10);
    t.add(2, t0 + 10);
    vi.advanceTimersByTime(10);
    expect(fired).toEqual([1, 2]);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual([1, 2, 9]);
  });

  it('clear drops every pending deadline and its timer', () => {
    const { t, fired, t0 } = setup();
    t.add(1, t0 + 10);
    t.add(2, t0 + 20);
    t.clear();
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(100);
    expect(fired).toEqual([]);
  });
});

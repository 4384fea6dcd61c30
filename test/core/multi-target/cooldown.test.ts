// Opt-in cooldown of targets (seed 003): without it a failing target stays in rotation; with it
// the target leaves rotation and hash rings until the cooldown ends; trigger_statuses are
// independent of fallback_on_statuses; all cooled ⇒ 503 or try_anyway.
import { describe, expect, it } from 'vitest';
import type { Outcome } from '../../../core/index.ts';
import { seeded } from '../harness.ts';
import { drive, ep, group, makeMtCore, mreq, ok, reset, s503 } from './mt-harness.ts';

const cd = (extra: Record<string, unknown> = {}) => ({ enabled: true, duration_sec: 10, consecutive_failures: 1, ...extra });
const failA = (o: Outcome) => (id: string): Outcome => (id === ep('a') ? o : ok);

describe('cooldown in multi-target routing', () => {
  it('without a cooldown block a failing target stays in rotation: every request fails over past it', () => {
    const core = makeMtCore(['a', 'b'], [group('g', ['a', 'b'])]);
    for (let t = 0; t < 5; t++) expect(drive(core, mreq(), t * 20_000, seeded(t), failA(reset)).dispatched).toEqual([ep('a'), ep('b')]);
    expect(core.multiTargetStatus(0)[0]!.targets[0]!.status).toBe('healthy');
  });

  it('an enabled cooldown takes the target out of rotation until it ends, reported with its reason', () => {
    const core = makeMtCore([{ id: 'a', cooldown: cd() }, 'b'], [group('g', ['a', 'b'])]);
    expect(drive(core, mreq(), 0, seeded(1), failA(reset)).dispatched).toEqual([ep('a'), ep('b')]);
    expect(core.multiTargetStatus(1)[0]!.targets[0]).toMatchObject({ model: 'a', status: 'cooldown', statusReason: 'transport_error', cooldownUntilMs: 10_000 });
    expect(drive(core, mreq(), 5_000, seeded(1), failA(reset)).dispatched).toEqual([ep('b')]);
    expect(drive(core, mreq(), 10_000, seeded(1), () => ok).dispatched).toEqual([ep('a')]);
    expect(core.multiTargetStatus(10_000)[0]!.targets[0]).toMatchObject({ status: 'healthy', statusReason: null });
    expect(core.cooldowns.drainStarted()).toHaveLength(1);
  });

  it('consecutive_failures must be reached first', () => {
    const core = makeMtCore([{ id: 'a', cooldown: cd({ consecutive_failures: 3 }) }, 'b'], [group('g', ['a', 'b'])]);
    for (let i = 0; i < 3; i++) expect(drive(core, mreq(), i, seeded(1), failA(s503)).dispatched[0]).toBe(ep('a'));
    expect(drive(core, mreq(), 3, seeded(1), failA(s503)).dispatched).toEqual([ep('b')]);
  });

  it('trigger_statuses are independent of fallback_on_statuses', () => {
    const s422: Outcome = { kind: 'http_status', status: 422, errorClass: 'client_error', retryAfterMs: null };
    const core = makeMtCore([{ id: 'a', cooldown: cd({ trigger_statuses: [503] }) }, 'b'], [group('g', ['a', 'b'], { fallback_on_statuses: [422] })]);
    expect(drive(core, mreq(), 0, seeded(1), failA(s422)).done.metadata.servedBy).toBe('b'); // moved, not cooled
    expect(drive(core, mreq(), 1, seeded(1), () => ok).dispatched).toEqual([ep('a')]);
    const other = makeMtCore([{ id: 'a', cooldown: cd({ trigger_statuses: [500] }) }, 'b'], [group('g', ['a', 'b'])]);
    drive(other, mreq(), 0, seeded(1), failA(s503));
    expect(drive(other, mreq(), 1, seeded(1), () => ok).dispatched).toEqual([ep('a')]); // 503 not a trigger here
  });

  it('every target cooling down ⇒ 503 all_candidates_unavailable; try_anyway tries one anyway', () => {
    const directs = [{ id: 'a', cooldown: cd() }, { id: 'b', cooldown: cd() }];
    const fail = makeMtCore(directs, [group('g', ['a', 'b'], { retries: 0 })]);
    drive(fail, mreq(), 0, seeded(1), () => reset);
    const r = drive(fail, mreq(), 1, seeded(1), () => ok);
    expect(r.error).toMatchObject({ status: 503, code: 'all_candidates_unavailable' });
    expect(r.error!.message).toContain('a (cooldown: transport_error)');
    const anyway = makeMtCore(directs, [group('g', ['a', 'b'], { retries: 0, when_all_unavailable: 'try_anyway' })]);
    drive(anyway, mreq(), 0, seeded(1), () => reset);
    const t = drive(anyway, mreq(), 1, seeded(1), () => ok);
    expect(t.done.metadata).toMatchObject({ status: 'ok', servedBy: 'a', reason: 'try_anyway' });
  });

  it('a cooled-down target leaves the hash ring: only its keys move, to their ring successor; they return when it ends', () => {
    const names = ['a', 'b', 'c', 'd'];
    const core = makeMtCore(names.map((id) => ({ id, cooldown: cd() })), [group('g', names, { strategy: 'consistent_hash' })]);
    const keys = Array.from({ length: 400 }, (_, i) => `user-${i}`);
    const route = (now: number, failing: string | null) =>
      keys.map((k) => drive(core, mreq({ callerId: k }), now, seeded(1), (id) => (id === failing ? reset : ok)).done.metadata.servedBy);
    const before = route(0, null);
    const failover = route(1, ep('b')); // b fails ⇒ its keys fail over within the request; b cools down
    const during = route(2, null);
    for (let i = 0; i < keys.length; i++) {
      if (before[i] === 'b') {
        expect(during[i]).not.toBe('b');
        expect(during[i]).toBe(failover[i]); // the same ring successor as the in-request failover
      } else expect(during[i]).toBe(before[i]);
    }
    expect(before.filter((x) => x === 'b').length).toBeGreaterThan(50);
    expect(route(20_000, null)).toEqual(before);
  });
});

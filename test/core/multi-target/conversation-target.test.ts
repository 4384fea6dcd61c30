// A conversation's own target (RouteRequest.preferEndpointId, seed 003: a follow-up turn goes
// back to the target that holds its context): tried first, outside the strategy's order and
// before every tier; when it cannot serve, the targets on its provider key come next, and then the
// usual walk.
import { describe, expect, it } from 'vitest';
import { seeded } from '../harness.ts';
import { drive, ep, group, makeMtCore, mreq, ok, s503 } from './mt-harness.ts';

const tiers = () => makeMtCore(['a', 'b', 'c'], [group('g', ['a', 'b', { model: 'c', priority: -1 }], { strategy: 'failover' })]);

describe('the conversation target of an alias', () => {
  it('is dispatched first, even from a lower tier, and the reason says so', () => {
    const r = drive(tiers(), mreq({ preferEndpointId: ep('c') }), 0, seeded(1), () => ok);
    expect(r.dispatched).toEqual([ep('c')]);
    expect(r.done.metadata).toMatchObject({ status: 'ok', servedBy: 'c', reason: 'conversation' });
  });

  it('a failure there falls back to the strategy order, without trying it again', () => {
    const r = drive(tiers(), mreq({ preferEndpointId: ep('b') }), 0, seeded(1), (id) => (id === ep('b') ? s503 : ok));
    expect(r.dispatched[0]).toBe(ep('b'));
    expect(r.dispatched).not.toContain(ep('c'));
    expect(r.done.metadata).toMatchObject({ status: 'ok', servedBy: 'a' });
  });

  it('an unknown endpoint id changes nothing', () => {
    const plain = drive(tiers(), mreq(), 0, seeded(1), () => ok);
    const r = drive(tiers(), mreq({ preferEndpointId: 'gone:gone' }), 0, seeded(1), () => ok);
    expect(r.dispatched).toEqual(plain.dispatched);
  });

  it('an admin pin wins over it', () => {
    const r = drive(tiers(), mreq({ pin: 'a', preferEndpointId: ep('c') }), 0, seeded(1), () => ok);
    expect(r.dispatched).toEqual([ep('a')]);
  });

  describe('when it cannot serve, a target on the same provider key comes next', () => {
    // b and d share provider and key; a and c are on other keys. Failover order: a, b, c, d.
    const keyed = () =>
      makeMtCore(
        [
          { id: 'a', provider: 'p', apiKey: 'k-a' },
          { id: 'b', provider: 'p', apiKey: 'k-shared' },
          { id: 'c', provider: 'p', apiKey: 'k-c' },
          { id: 'd', provider: 'p', apiKey: 'k-shared' },
        ],
        [group('g', ['a', 'b', 'c', { model: 'd', priority: -1 }], { strategy: 'failover' })],
      );

    it('after a failure on the conversation target, its provider-key sibling (even from a lower tier) before the strategy order', () => {
      const r = drive(keyed(), mreq({ preferEndpointId: ep('b') }), 0, seeded(1), (id) => (id === ep('b') ? s503 : ok));
      expect(r.dispatched).toEqual([ep('b'), ep('d')]);
      expect(r.done.metadata).toMatchObject({ status: 'ok', servedBy: 'd', reason: 'conversation' });
    });

    it('when the sibling fails too, the strategy order over the rest', () => {
      const r = drive(keyed(), mreq({ preferEndpointId: ep('b') }), 0, seeded(1), (id) => (id === ep('b') || id === ep('d') ? s503 : ok));
      expect(r.dispatched).toEqual([ep('b'), ep('d'), ep('a')]);
      expect(r.done.metadata).toMatchObject({ status: 'ok', servedBy: 'a' });
    });

    it('the same key under another provider is another provider key', () => {
      const core = makeMtCore(
        [
          { id: 'a', provider: 'p', apiKey: 'k-a' },
          { id: 'b', provider: 'p', apiKey: 'k' },
          { id: 'c', provider: 'q', apiKey: 'k' },
        ],
        [group('g', ['a', 'b', 'c'], { strategy: 'failover' })],
      );
      const r = drive(core, mreq({ preferEndpointId: ep('b') }), 0, seeded(1), (id) => (id === ep('b') ? s503 : ok));
      expect(r.dispatched).toEqual([ep('b'), ep('a')]);
    });

    it('targets without a key share none', () => {
      const r = drive(tiers(), mreq({ preferEndpointId: ep('b') }), 0, seeded(1), (id) => (id === ep('b') ? s503 : ok));
      expect(r.dispatched).toEqual([ep('b'), ep('a')]);
    });
  });
});

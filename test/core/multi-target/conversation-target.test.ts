// A conversation's own target (RouteRequest.preferEndpointId, seed 003: a follow-up turn goes
// back to the target that holds its context): tried first, outside the strategy's order and
// before every tier; the usual walk follows a failure there or when it is not admitted.
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
});

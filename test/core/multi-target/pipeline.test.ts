// The candidate pipeline of multi-target requests (seed 003): routing tags with the `default`
// tag, CIDR filters (403), modality filter, priority tiers and crossing tiers in one request.
import { describe, expect, it } from 'vitest';
import { seeded } from '../harness.ts';
import { drive, ep, group, makeMtCore, mreq, ok, s503 } from './mt-harness.ts';

const served = (core: ReturnType<typeof makeMtCore>, over = {}, outcome = (_id: string) => ok) => drive(core, mreq(over), 0, seeded(1), outcome);

describe('routing tags', () => {
  const tiered = () =>
    makeMtCore(['p', 's', 'x'], [group('g', [{ model: 'p', tags: ['premium'] }, { model: 's', tags: ['Default'] }, { model: 'x', tags: ['team-x'] }])]);

  it('untagged requests use the default-tagged targets', () => {
    const r = served(tiered(), {}, () => s503);
    expect(r.dispatched.every((id) => id === ep('s'))).toBe(true);
  });
  it('a tagged request uses the targets carrying any of its tags, case-insensitively', () => {
    expect(served(tiered(), { routingTags: ['PREMIUM'] }).done.metadata.servedBy).toBe('p');
    const both = served(tiered(), { routingTags: ['nothing', 'team-x', 'premium'] }, () => s503);
    expect(new Set(both.dispatched)).toEqual(new Set([ep('p'), ep('x')]));
  });
  it('unmatched tags fall back to the default targets', () => {
    expect(served(tiered(), { routingTags: ['enterprise'] }).done.metadata.servedBy).toBe('s');
  });
  it('without default targets: untagged requests use all targets; unmatched tags are rejected with 400', () => {
    const core = makeMtCore(['p', 's'], [group('g', [{ model: 'p', tags: ['premium'] }, 's'])]);
    expect(served(core, {}, () => s503).dispatched).toEqual([ep('p'), ep('s'), ep('s')]);
    const r = served(core, { routingTags: ['enterprise'] });
    expect(r.error).toMatchObject({ status: 400, code: 'routing_tags_unmatched' });
    expect(r.error!.message).toContain("model 'g'");
    expect(r.dispatched).toEqual([]);
  });
});

describe('CIDR filters', () => {
  const core = () =>
    makeMtCore(['inside', 'open', 'backup'], [group('g', [{ model: 'inside', allowed_cidrs: ['10.0.0.0/8', '2001:db8::/32'] }, { model: 'open', priority: -1, allowed_cidrs: ['192.168.0.0/16'] }, { model: 'backup', priority: -2 }], { max_fallbacks: 0 })]);

  it('admits callers inside a block (IPv4, IPv6, IPv4-mapped)', () => {
    for (const ip of ['10.1.2.3', '2001:db8::7', '::ffff:10.9.9.9']) expect(served(core(), { clientIp: ip }).done.metadata.servedBy).toBe('inside');
  });
  it('a filtered higher tier lets a lower tier serve, without spending the fallback budget', () => {
    const r = served(core(), { clientIp: '192.168.3.3' });
    expect(r.done.metadata.servedBy).toBe('open');
    expect(r.done.metadata.attempts).toHaveLength(1);
    expect(r.done.metadata.fallbacks).toBe(0);
    expect(served(core(), { clientIp: '8.8.8.8' }).done.metadata.servedBy).toBe('backup');
  });
  it('every eligible target excluding the caller ⇒ 403 forbidden_by_cidr; no client IP counts as outside', () => {
    const only = makeMtCore(['a', 'b'], [group('g', [{ model: 'a', allowed_cidrs: ['10.0.0.0/8'] }, { model: 'b', allowed_cidrs: ['10.0.0.0/8'] }])]);
    for (const over of [{ clientIp: '11.0.0.1' }, {}, { clientIp: 'garbage' }]) {
      const r = served(only, over);
      expect(r.error).toMatchObject({ status: 403, code: 'forbidden_by_cidr' });
      expect(r.dispatched).toEqual([]);
    }
  });
  it('tags run before CIDR: a tag-selected target that excludes the caller ⇒ 403', () => {
    const c = makeMtCore(['a', 'b'], [group('g', [{ model: 'a', tags: ['t'], allowed_cidrs: ['10.0.0.0/8'] }, 'b'])]);
    expect(served(c, { routingTags: ['t'], clientIp: '1.1.1.1' }).error?.status).toBe(403);
  });
});

describe('modalities', () => {
  it('targets that cannot take the input are not candidates; none left ⇒ 400 naming the modality (a property of the request, not a transient state)', () => {
    const core = makeMtCore(['t', { id: 'v', modalities: ['text', 'image'] }], [group('g', ['t', 'v'])]);
    expect(served(core, { modalities: ['image'] }).done.metadata.servedBy).toBe('v');
    const r = served(core, { modalities: ['audio'] });
    expect(r.error).toMatchObject({ status: 400, code: 'modality_not_supported' });
    expect(r.error!.message).toContain('audio');
  });
});

describe('priority tiers', () => {
  const pooled = () =>
    makeMtCore(['a1', 'a2', 'b1', 'b2'], [group('g', ['a1', 'a2', { model: 'b1', priority: -1 }, { model: 'b2', priority: -1 }], { strategy: 'round_robin' })]);

  it('a lower tier gets no traffic while a higher-tier target is available', () => {
    const core = pooled();
    const rng = seeded(3);
    const seen = new Set<string>();
    for (let i = 0; i < 50; i++) seen.add(drive(core, mreq(), i, rng, () => ok).done.metadata.servedBy!);
    expect(seen).toEqual(new Set(['a1', 'a2']));
  });

  it('the walk crosses into the next tier within the same request', () => {
    const core = pooled();
    const r = drive(core, mreq(), 0, seeded(1), (id) => (id.startsWith('a') ? s503 : ok));
    const tried = r.done.metadata.attempts.map((a) => a.target);
    expect(r.done.metadata.status).toBe('ok');
    expect(new Set(tried.slice(0, 2))).toEqual(new Set(['a1', 'a2']));
    expect(['b1', 'b2']).toContain(r.done.metadata.servedBy);
    expect(r.done.metadata.fallbacks).toBe(2);
  });

  it('higher priority numbers are tried first, whatever the declaration order', () => {
    const core = makeMtCore(['lo', 'hi', 'mid'], [group('g', [{ model: 'lo', priority: -5 }, { model: 'hi', priority: 3 }, 'mid'])]);
    expect(drive(core, mreq(), 0, seeded(1), () => s503).dispatched).toEqual([ep('hi'), ep('mid'), ep('lo'), ep('lo')]);
  });
});

// The pure building blocks of multi-target routing: the ring hash, CIDR blocks, per-target rate
// limits, endpoint statistics, failure classes and backoff, and the cooldown registry.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { murmur3 } from '../../../core/hashing/hash.ts';
import { cidrContains, parseCidr, parseIp } from '../../../core/multi-target/cidr.ts';
import { TargetRateLimit } from '../../../core/multi-target/target-rate-limit.ts';
import { EndpointStats } from '../../../core/stats/endpoint-stats.ts';
import { classifyFailure } from '../../../core/request/policy/retry-policy.ts';
import { backoffMs } from '../../../core/request/policy/backoff.ts';
import { CooldownRegistry } from '../../../core/health/cooldown.ts';
import { parseRoutingTagsHeader } from '../../../core/multi-target/candidates.ts';
import { seeded } from '../harness.ts';
import { reset, s400, s408, s429, s503 } from './mt-harness.ts';

/** Reference MurmurHash3 x86_32 over bytes, written from the published algorithm. */
function murmurBytes(bytes: Uint8Array, seed = 0): number {
  let h = seed >>> 0;
  const blocks = bytes.length >> 2;
  for (let i = 0; i < blocks; i++) {
    let k = bytes[4 * i]! | (bytes[4 * i + 1]! << 8) | (bytes[4 * i + 2]! << 16) | (bytes[4 * i + 3]! << 24);
    k = Math.imul(k, 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, 0x1b873593);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  let k = 0;
  const tail = blocks * 4;
  switch (bytes.length & 3) {
    case 3:
      k ^= bytes[tail + 2]! << 16;
    // falls through
    case 2:
      k ^= bytes[tail + 1]! << 8;
    // falls through
    case 1:
      k ^= bytes[tail]!;
      k = Math.imul(k, 0xcc9e2d51);
      k = (k << 15) | (k >>> 17);
      k = Math.imul(k, 0x1b873593);
      h ^= k;
  }
  h ^= bytes.length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

describe('murmur3 (ring hash)', () => {
  it('matches published vectors', () => {
    expect(murmur3('')).toBe(0);
    expect(murmur3('', 1)).toBe(0x514e28b7);
    expect(murmur3('hello')).toBe(0x248bfa47);
    expect(murmur3('The quick brown fox jumps over the lazy dog')).toBe(0x2e4ff723);
  });
  it('equals the byte-wise reference over the UTF-8 encoding of any string', () => {
    const enc = new TextEncoder();
    fc.assert(fc.property(fc.string({ unit: 'grapheme' }), fc.nat(), (s, seed) => murmur3(s, seed) === murmurBytes(enc.encode(s), seed)), { numRuns: 300 });
    fc.assert(fc.property(fc.string({ unit: 'binary' }), (s) => murmur3(s) === murmurBytes(enc.encode(s))), { numRuns: 300 });
  });
});

describe('CIDR blocks', () => {
  it('IPv4, IPv6 and IPv4-mapped IPv6 addresses', () => {
    const b = parseCidr('10.0.0.0/8');
    expect(cidrContains(b, parseIp('10.200.3.4')!)).toBe(true);
    expect(cidrContains(b, parseIp('::ffff:10.1.2.3')!)).toBe(true);
    expect(cidrContains(b, parseIp('11.0.0.1')!)).toBe(false);
    const v6 = parseCidr('2001:db8::/32');
    expect(cidrContains(v6, parseIp('2001:db8:abcd::1')!)).toBe(true);
    expect(cidrContains(v6, parseIp('[2001:db9::1]')!)).toBe(false);
    expect(cidrContains(parseCidr('192.168.1.7'), parseIp('192.168.1.7')!)).toBe(true);
    expect(cidrContains(parseCidr('192.168.1.7'), parseIp('192.168.1.8')!)).toBe(false);
    expect(cidrContains(parseCidr('0.0.0.0/0'), parseIp('8.8.8.8')!)).toBe(true);
    expect(cidrContains(parseCidr('0.0.0.0/0'), parseIp('2001:db8::1')!)).toBe(false);
    expect(cidrContains(parseCidr('::/0'), parseIp('2001:db8::1')!)).toBe(true);
    expect(parseCidr('10.1.2.3/8').network).toBe(parseCidr('10.0.0.0/8').network);
    expect(parseIp('fe80::1%eth0')).toBe(parseIp('fe80::1'));
  });
  it('rejects what is not a block or an address', () => {
    for (const bad of ['10.0.0.0/33', '10.0.0/8', '256.0.0.1', '1::2::3', 'x', '2001:db8::/129', '10.0.0.0/']) {
      expect(() => parseCidr(bad)).toThrow(/is not a CIDR block/);
    }
    expect(parseIp('nope')).toBeNull();
    expect(parseIp('1:2:3:4:5:6:7')).toBeNull();
  });
  it('a /n block contains exactly the addresses sharing the first n bits (IPv4)', () => {
    fc.assert(
      fc.property(fc.ipV4(), fc.ipV4(), fc.integer({ min: 0, max: 32 }), (net, ip, n) => {
        const toInt = (s: string) => s.split('.').reduce((a, x) => a * 256 + Number(x), 0);
        const same = n === 0 || Math.floor(toInt(net) / 2 ** (32 - n)) === Math.floor(toInt(ip) / 2 ** (32 - n));
        return cidrContains(parseCidr(`${net}/${n}`), parseIp(ip)!) === same;
      }),
    );
  });
});

describe('per-target rate limit (token bucket)', () => {
  it('admits a burst, refuses the next, refills at the rate', () => {
    const rl = new TargetRateLimit(60, 2); // one token per second
    expect(rl.tryTake(0)).toBe(true);
    expect(rl.tryTake(0)).toBe(true);
    expect(rl.tryTake(0)).toBe(false);
    expect(rl.retryAfterMs(0)).toBe(1000);
    expect(rl.available(999)).toBe(false);
    expect(rl.tryTake(1000)).toBe(true);
    expect(rl.tryTake(100_000)).toBe(true);
    expect(rl.tryTake(100_000)).toBe(true);
    expect(rl.tryTake(100_000)).toBe(false); // capped at burst
    rl.invariants();
  });
  it('over any window of T ms admits at most burst + rate·T requests', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 600 }), fc.integer({ min: 1, max: 10 }), fc.array(fc.integer({ min: 0, max: 2_000 }), { minLength: 1, maxLength: 200 }), (rpm, burst, gaps) => {
        const rl = new TargetRateLimit(rpm, burst);
        let t = 0;
        let admitted = 0;
        for (const g of gaps) {
          t += g;
          if (rl.tryTake(t)) admitted++;
          rl.invariants();
        }
        return admitted <= burst + (rpm / 60_000) * t + 1e-9;
      }),
    );
  });
  it('rejects bad settings', () => {
    expect(() => new TargetRateLimit(0)).toThrow(/requests_per_minute/);
    expect(() => new TargetRateLimit(10, 0)).toThrow(/burst/);
  });
});

describe('endpoint stats', () => {
  it('EWMA of samples; in-flight counts; end without begin is a bug', () => {
    const s = new EndpointStats(0.5);
    expect(s.latencyMs('x')).toBeNull();
    s.sample('x', 100);
    s.sample('x', 200);
    expect(s.latencyMs('x')).toBe(150);
    s.begin('x');
    s.begin('x');
    expect(s.inFlight('x')).toBe(2);
    s.end('x');
    s.end('x');
    expect(() => s.end('x')).toThrow(/nothing in flight/);
    expect(s.snapshot()).toEqual([{ endpointId: 'x', inFlight: 0, latencyMs: 150, samples: 2 }]);
    s.invariants();
    expect(() => new EndpointStats(0)).toThrow(RangeError);
  });
});

describe('retry policy', () => {
  const rules = { retryOn429: false, fallbackOnStatuses: new Set([408]) };
  it('classifies outcomes', () => {
    expect(classifyFailure(s503, rules)).toBe('retryable');
    expect(classifyFailure(reset, rules)).toBe('retryable');
    expect(classifyFailure({ kind: 'first_token_timeout' }, rules)).toBe('retryable');
    expect(classifyFailure(s429, rules)).toBe('final');
    expect(classifyFailure(s429, { ...rules, retryOn429: true })).toBe('retryable');
    expect(classifyFailure(s408, rules)).toBe('retryable');
    expect(classifyFailure(s400, rules)).toBe('final');
    expect(classifyFailure({ kind: 'http_status', status: 401, errorClass: 'auth_rejected', retryAfterMs: null }, rules)).toBe('final');
    expect(classifyFailure({ kind: 'client_gone' }, rules)).toBe('terminal');
    expect(() => classifyFailure({ kind: 'ok' }, rules)).toThrow();
  });
  it('backoff grows exponentially with equal jitter, is capped, and honours Retry-After in full', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.integer(), (retry, seed) => {
        const d = backoffMs(retry, 200, 5_000, null, seeded(seed));
        const ceiling = Math.min(5_000, 200 * 2 ** (retry - 1));
        return d >= ceiling / 2 && d <= ceiling;
      }),
    );
    expect(backoffMs(1, 200, 5_000, 3_000, seeded(1))).toBe(3_000);
    expect(backoffMs(1, 200, 5_000, 60_000, seeded(1))).toBe(60_000);
    expect(backoffMs(3, 200, 5_000, null, seeded(1), 'none')).toBe(800);
    const full = backoffMs(3, 200, 5_000, null, seeded(1), 'full');
    expect(full).toBeGreaterThanOrEqual(0);
    expect(full).toBeLessThanOrEqual(800);
  });
});

describe('cooldown registry', () => {
  const policy = { durationMs: 10_000, triggerStatuses: new Set([503]), consecutiveFailures: 2 };
  it('starts after N triggering failures in a row, with the reason; success resets the count but not a cooldown', () => {
    const c = new CooldownRegistry();
    c.configure('e', policy);
    c.record('e', reset, 0);
    c.record('e', { kind: 'ok' }, 1);
    c.record('e', reset, 2);
    expect(c.active('e', 2)).toBe(false);
    c.record('e', reset, 3);
    expect(c.status('e', 3)).toEqual({ endpointId: 'e', state: 'cooldown', reason: 'transport_error', untilMs: 10_003, consecutiveFailures: 0 });
    c.record('e', { kind: 'ok' }, 4);
    expect(c.active('e', 5)).toBe(true);
    expect(c.active('e', 10_003)).toBe(false);
    expect(c.drainStarted()).toEqual([{ endpointId: 'e', atMs: 3, untilMs: 10_003, reason: 'transport_error' }]);
    c.invariants();
  });
  it('only listed statuses trigger; timeouts always do; unconfigured endpoints are never cooled', () => {
    const c = new CooldownRegistry();
    c.configure('e', { ...policy, consecutiveFailures: 1 });
    c.record('e', s429, 0);
    c.record('e', s400, 0);
    expect(c.active('e', 0)).toBe(false);
    c.record('e', s503, 0);
    expect(c.status('e', 0).reason).toBe('http_503');
    c.record('x', reset, 0);
    expect(c.status('x', 0).state).toBe('not_configured');
    const t = new CooldownRegistry();
    t.configure('e', { ...policy, consecutiveFailures: 1 });
    t.record('e', { kind: 'first_token_timeout' }, 0);
    expect(t.status('e', 1).reason).toBe('timeout');
  });
});

describe('routing tags header', () => {
  it('splits on commas, trims, lower-cases, drops empties', () => {
    expect(parseRoutingTagsHeader(' Premium, team-a ,,')).toEqual(['premium', 'team-a']);
    expect(parseRoutingTagsHeader(null)).toEqual([]);
  });
});

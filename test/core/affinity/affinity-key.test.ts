// Affinity key derivation (seed 000, session affinity): API key hash, grant, IP bucket with IPv6
// folded to its /64, else the shared anonymous key.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ANONYMOUS_AFFINITY_KEY, deriveAffinityKey, fnv1a64Hex, ipBucket } from '../../../core/index.ts';

/** Reference FNV-1a 64 with BigInt over TextEncoder bytes. */
function fnvRef(s: string): string {
  let h = 0xcbf29ce484222325n;
  for (const b of new TextEncoder().encode(s)) {
    h ^= BigInt(b);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h.toString(16).padStart(16, '0');
}

describe('fnv1a64Hex', () => {
  it('matches the published test vectors', () => {
    expect(fnv1a64Hex('')).toBe('cbf29ce484222325');
    expect(fnv1a64Hex('a')).toBe('af63dc4c8601ec8c');
    expect(fnv1a64Hex('foobar')).toBe('85944171f73967e8');
  });
  it('matches a BigInt reference on any string (UTF-8 bytes, lone surrogates as U+FFFD)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        expect(fnv1a64Hex(s)).toBe(fnvRef(s));
      }),
      { numRuns: 500 },
    );
    expect(fnv1a64Hex('\ud800x')).toBe(fnvRef('\ud800x'));
  });
});

describe('ipBucket', () => {
  it('IPv4 stays as is (normalised)', () => {
    expect(ipBucket('203.0.113.7')).toBe('203.0.113.7');
    expect(ipBucket(' 10.0.0.01 ')).toBe('10.0.0.1');
  });
  it('IPv6 folds to its /64: privacy addresses of one host share a bucket', () => {
    expect(ipBucket('2001:db8:85a3:1234:5678:8a2e:370:7334')).toBe('2001:db8:85a3:1234::/64');
    expect(ipBucket('2001:0DB8:85A3:1234:aaaa:bbbb:cccc:dddd')).toBe('2001:db8:85a3:1234::/64');
    expect(ipBucket('2001:db8:85a3:1235::1')).toBe('2001:db8:85a3:1235::/64');
    expect(ipBucket('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(ipBucket('[2001:db8::1%eth0]')).toBe('2001:db8:0:0::/64');
    expect(ipBucket('::1')).toBe('0:0:0:0::/64');
    expect(ipBucket('::')).toBe('0:0:0:0::/64');
    expect(ipBucket('fe80::1:2:3:4')).toBe('fe80:0:0:0::/64');
    expect(ipBucket('1:2:3:4:5:6:1.2.3.4')).toBe('1:2:3:4::/64');
  });
  it('IPv4-mapped IPv6 counts as IPv4', () => {
    expect(ipBucket('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(ipBucket('::ffff:c000:0201')).toBe('192.0.2.1');
  });
  it('any written form of an address (compressed or not) gives its first four groups', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 }), fc.nat(7), fc.nat(7), (g, from, len) => {
        fc.pre(!(g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff));
        const want = `${g.slice(0, 4).map((x) => x.toString(16)).join(':')}::/64`;
        const full = g.map((x) => x.toString(16).padStart(4, '0')).join(':');
        expect(ipBucket(full)).toBe(want);
        // Compress a run of groups [from, from+len) when they are all zero.
        const zeroed = g.map((x, i) => (i >= from && i < from + len + 1 ? 0 : x));
        fc.pre(!(zeroed[0] === 0 && zeroed[1] === 0 && zeroed[2] === 0 && zeroed[3] === 0 && zeroed[4] === 0 && zeroed[5] === 0xffff));
        const end = Math.min(8, from + len + 1);
        const text = `${zeroed.slice(0, from).map((x) => x.toString(16)).join(':')}::${zeroed.slice(end).map((x) => x.toString(16)).join(':')}`;
        expect(ipBucket(text)).toBe(`${zeroed.slice(0, 4).map((x) => x.toString(16)).join(':')}::/64`);
      }),
      { numRuns: 300 },
    );
  });
  it('rejects what is not an address, naming the value and the fix', () => {
    for (const bad of ['example.com', '1.2.3', '256.1.1.1', '1:2:3', '1::2::3', '12345::1', '1.2.3.4, 5.6.7.8', '']) {
      expect(() => ipBucket(bad)).toThrow(/clientIp .* is not an IPv4 or IPv6 address; pass the socket's remote address/);
    }
  });
});

describe('deriveAffinityKey', () => {
  it('first match wins: API key hash, then grant, then IP bucket, else anonymous', () => {
    expect(deriveAffinityKey({ apiKey: 'sk-abc', grantId: 'g1', clientIp: '1.2.3.4' })).toBe(`key:${fnv1a64Hex('sk-abc')}`);
    expect(deriveAffinityKey({ apiKey: '', grantId: 'g1', clientIp: '1.2.3.4' })).toBe('grant:g1');
    expect(deriveAffinityKey({ grantId: null, clientIp: '2001:db8:1:2:3:4:5:6' })).toBe('ip:2001:db8:1:2::/64');
    expect(deriveAffinityKey({})).toBe(ANONYMOUS_AFFINITY_KEY);
    expect(ANONYMOUS_AFFINITY_KEY).toBe('anonymous');
  });
  it('the raw API key never appears in the derived key', () => {
    expect(deriveAffinityKey({ apiKey: 'sk-secret-123' })).not.toContain('secret');
  });
});

/**
 * The caller key that session affinity and prompt-size hints are keyed by (seed 000, "会话亲和",
 * the affinity-key rule). The gateway derives it once per request and passes it as
 * `RouteRequest.callerId`; the simulator uses its own caller ids. First match wins:
 *
 * 1. an API key ⇒ `key:<FNV-1a 64 of the key, 16 hex digits>`;
 * 2. an inference grant ⇒ `grant:<grant id>` (grant callers often share one NAT address, so an
 *    IP key would crowd all their jobs onto one endpoint);
 * 3. a client address ⇒ `ip:<bucket>`: IPv4 as is, IPv6 folded to its /64 so rotating privacy
 *    addresses of one host stay on one endpoint (IPv4-mapped IPv6 counts as IPv4);
 * 4. nothing (health probes, warm-up, internal traffic) ⇒ the one shared `anonymous` key.
 *
 * Hash: core/ may not import node:crypto, and the key only needs to bucket callers, so it is
 * FNV-1a 64 (Fowler–Noll–Vo, IETF draft-eastlake-fnv) over the key's UTF-8 bytes — stable
 * across processes and platforms. It is not a cryptographic digest: fine for in-memory tables
 * and logs of high-entropy API keys, not a way to protect short secrets.
 */

/** The key shared by callers without identity. */
export const ANONYMOUS_AFFINITY_KEY = 'anonymous';

/** What the gateway knows about a caller; empty strings count as absent. */
export interface CallerIdentity {
  /** The caller's API key (raw; it is hashed here and never stored). */
  readonly apiKey?: string | null;
  /** Inference grant id, when the request came with a grant instead of a key. */
  readonly grantId?: string | null;
  /** Client address as text: IPv4 dotted quad or IPv6 (brackets and `%zone` allowed). */
  readonly clientIp?: string | null;
}

/**
 * FNV-1a 64 over the UTF-8 bytes of `s`, as 16 lowercase hex digits. Exact 64-bit arithmetic in
 * four 16-bit limbs (no BigInt, so it stays cheap per request). Pure.
 * Test vectors: "" ⇒ cbf29ce484222325, "a" ⇒ af63dc4c8601ec8c.
 */
export function fnv1a64Hex(s: string): string {
  let h0 = 0x2325;
  let h1 = 0x8422;
  let h2 = 0x9ce4;
  let h3 = 0xcbf2;
  const step = (byte: number) => {
    h0 ^= byte;
    // × 0x100000001b3 = × 0x1b3 + (× 1 << 40); 1 << 40 is limb 2 shifted by 8 bits.
    let t0 = h0 * 0x1b3;
    let t1 = h1 * 0x1b3;
    let t2 = h2 * 0x1b3 + (h0 << 8);
    let t3 = h3 * 0x1b3 + (h1 << 8);
    t1 += t0 >>> 16;
    t2 += t1 >>> 16;
    t3 += t2 >>> 16;
    h0 = t0 & 0xffff;
    h1 = t1 & 0xffff;
    h2 = t2 & 0xffff;
    h3 = t3 & 0xffff;
  };
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdfff) {
      const d = c <= 0xdbff && i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
      } else c = 0xfffd; // lone surrogate, as TextEncoder does
    }
    if (c < 0x80) step(c);
    else if (c < 0x800) {
      step(0xc0 | (c >> 6));
      step(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      step(0xe0 | (c >> 12));
      step(0x80 | ((c >> 6) & 0x3f));
      step(0x80 | (c & 0x3f));
    } else {
      step(0xf0 | (c >> 18));
      step(0x80 | ((c >> 12) & 0x3f));
      step(0x80 | ((c >> 6) & 0x3f));
      step(0x80 | (c & 0x3f));
    }
  }
  const hex = (x: number) => x.toString(16).padStart(4, '0');
  return hex(h3) + hex(h2) + hex(h1) + hex(h0);
}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
const HEX_GROUP = /^[0-9a-f]{1,4}$/;

function parseIpv4(s: string): number[] | null {
  const m = IPV4.exec(s);
  if (!m) return null;
  const parts = [m[1], m[2], m[3], m[4]].map(Number);
  return parts.every((p) => p <= 255) ? parts : null;
}

/** The 8 groups of an IPv6 address (text already lower-cased, no brackets/zone), or null. */
function parseIpv6(s: string): number[] | null {
  let text = s;
  const tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  if (lastColon >= 0 && text.indexOf('.', lastColon) > lastColon) {
    // An embedded IPv4 tail (`::ffff:1.2.3.4`) stands for the last two groups.
    const v4 = parseIpv4(text.slice(lastColon + 1));
    if (!v4) return null;
    tail.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
    text = text.slice(0, lastColon + 1);
    if (!text.endsWith('::')) text = text.slice(0, -1);
  }
  const want = 8 - tail.length;
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const split = (h: string) => (h === '' ? [] : h.split(':'));
  const head = split(halves[0]!);
  const rest = halves.length === 2 ? split(halves[1]!) : [];
  if ([...head, ...rest].some((g) => !HEX_GROUP.test(g))) return null;
  const present = head.length + rest.length;
  if (halves.length === 1 ? present !== want : present >= want) return null;
  const zeros = halves.length === 2 ? want - present : 0;
  return [...head.map((g) => parseInt(g, 16)), ...Array<number>(zeros).fill(0), ...rest.map((g) => parseInt(g, 16)), ...tail];
}

/**
 * The address bucket of `ip`: an IPv4 address as its dotted quad (leading zeros dropped); an
 * IPv6 address as its /64, `g0:g1:g2:g3::/64` in lowercase hex without leading zeros; an
 * IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) as its IPv4 address. Brackets and a `%zone` are
 * ignored. Pure.
 * @throws RangeError naming the value when it is neither IPv4 nor IPv6 (the fix: pass the
 *   socket's remote address, not a header that may hold a name or a list).
 */
export function ipBucket(ip: string): string {
  let s = ip.trim().toLowerCase();
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1);
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  const v4 = parseIpv4(s);
  if (v4) return v4.join('.');
  const g = s.includes(':') ? parseIpv6(s) : null;
  if (!g) throw new RangeError(`clientIp '${ip}' is not an IPv4 or IPv6 address; pass the socket's remote address`);
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    return `${g[6]! >> 8}.${g[6]! & 0xff}.${g[7]! >> 8}.${g[7]! & 0xff}`;
  }
  return `${g[0]!.toString(16)}:${g[1]!.toString(16)}:${g[2]!.toString(16)}:${g[3]!.toString(16)}::/64`;
}

/**
 * The affinity key of a caller (rules in the module comment): `key:<16 hex>`, `grant:<id>`,
 * `ip:<bucket>` or `anonymous`. Pure.
 * @throws RangeError when the first present field is a client address that is not an IP (see `ipBucket`).
 */
export function deriveAffinityKey(id: CallerIdentity): string {
  if (id.apiKey) return `key:${fnv1a64Hex(id.apiKey)}`;
  if (id.grantId) return `grant:${id.grantId}`;
  if (id.clientIp) return `ip:${ipBucket(id.clientIp)}`;
  return ANONYMOUS_AFFINITY_KEY;
}

/**
 * IP allow-lists for multi-target targets (`allowed_cidrs`, seed 003 "CIDR filters"). IPv4 and
 * IPv6; an IPv4 address and an IPv4-mapped IPv6 address (`::ffff:10.0.0.1`) are the same
 * address, so `10.0.0.0/8` admits both. Addresses are held as 128-bit BigInts (IPv4 mapped into
 * `::ffff:0:0/96`). Parsed once at config load; matching is a shift and a compare.
 */

/** A parsed CIDR block: the network address and prefix length, both in the 128-bit space. */
export interface CidrBlock {
  /** The block as written, for messages. */
  readonly text: string;
  readonly network: bigint;
  /** Prefix length in bits, 0..128 (an IPv4 `/n` is stored as `/96+n`). */
  readonly prefixBits: number;
}

const V4_MAPPED = 0xffffn << 32n;

function parseV4(s: string): bigint | null {
  const parts = s.split('.');
  if (parts.length !== 4) return null;
  let v = 0n;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return null;
    const n = Number(p);
    if (n > 255) return null;
    v = (v << 8n) | BigInt(n);
  }
  return v;
}

function parseV6(s: string): bigint | null {
  let text = s;
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  // An embedded IPv4 tail (`::ffff:1.2.3.4`) becomes two hextets.
  const lastColon = text.lastIndexOf(':');
  if (lastColon >= 0 && text.indexOf('.', lastColon) > 0) {
    const v4 = parseV4(text.slice(lastColon + 1));
    if (v4 === null) return null;
    text = `${text.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const head = halves[0] === '' ? [] : halves[0]!.split(':');
  const tail = halves.length === 2 ? (halves[1] === '' ? [] : halves[1]!.split(':')) : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail];
  let v = 0n;
  for (const g of groups) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
    v = (v << 16n) | BigInt(parseInt(g, 16));
  }
  return v;
}

/**
 * Parses an IPv4 or IPv6 address (an IPv6 zone id `%eth0` is ignored) into the 128-bit space.
 * Returns null when `s` is not an address.
 */
export function parseIp(s: string): bigint | null {
  const t = s.trim();
  if (t.includes(':')) return parseV6(t.startsWith('[') && t.endsWith(']') ? t.slice(1, -1) : t);
  const v4 = parseV4(t);
  return v4 === null ? null : V4_MAPPED | v4;
}

/**
 * Parses `a.b.c.d/n` or `x::y/n`; an address without `/n` is a single host (/32 or /128).
 * Host bits below the prefix are ignored (`10.1.2.3/8` is `10.0.0.0/8`).
 * @throws Error naming the value when it is not a valid CIDR block.
 */
export function parseCidr(text: string): CidrBlock {
  const t = text.trim();
  const slash = t.indexOf('/');
  const addrText = slash >= 0 ? t.slice(0, slash) : t;
  const addr = parseIp(addrText);
  const v4 = !addrText.includes(':');
  const max = v4 ? 32 : 128;
  const bitsText = slash >= 0 ? t.slice(slash + 1) : String(max);
  const bits = /^\d{1,3}$/.test(bitsText) ? Number(bitsText) : NaN;
  if (addr === null || !(bits >= 0 && bits <= max)) {
    throw new Error(`'${text}' is not a CIDR block; write e.g. 10.0.0.0/8 or 2001:db8::/32`);
  }
  const prefixBits = v4 ? 96 + bits : bits;
  const shift = BigInt(128 - prefixBits);
  return { text: t, network: (addr >> shift) << shift, prefixBits };
}

/** Whether the address `ip` (from `parseIp`) lies in `block`. */
export function cidrContains(block: CidrBlock, ip: bigint): boolean {
  const shift = BigInt(128 - block.prefixBits);
  return ip >> shift === block.network >> shift;
}

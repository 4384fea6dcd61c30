/**
 * A small, stable, non-cryptographic string hash for the consistent-hash ring: MurmurHash3
 * x86_32 (Austin Appleby, public domain) over the UTF-8 bytes of the string. Stable across
 * platforms and runs, so a key lands on the same ring position in the simulator and the gateway.
 * Not for anything adversarial: a caller who controls the key can choose its target anyway.
 */

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

/**
 * MurmurHash3 x86_32 of `s` encoded as UTF-8 (lone surrogates encode as U+FFFD, as TextEncoder
 * does). Returns an unsigned 32-bit integer. Reference vectors: `''` seed 0 ⇒ 0,
 * `'hello'` seed 0 ⇒ 0x248bfa47.
 */
export function murmur3(s: string, seed = 0): number {
  let h = seed >>> 0;
  let k = 0; // pending bytes of the current 4-byte block, little-endian
  let n = 0; // bytes in `k`
  let len = 0;
  const mixBlock = () => {
    k = Math.imul(k, C1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, C2);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
    k = 0;
    n = 0;
  };
  const byte = (b: number) => {
    k |= b << (8 * n);
    n++;
    len++;
    if (n === 4) mixBlock();
  };
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
      }
    }
    if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd; // lone surrogate
    if (c < 0x80) byte(c);
    else if (c < 0x800) {
      byte(0xc0 | (c >> 6));
      byte(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      byte(0xe0 | (c >> 12));
      byte(0x80 | ((c >> 6) & 0x3f));
      byte(0x80 | (c & 0x3f));
    } else {
      byte(0xf0 | (c >> 18));
      byte(0x80 | ((c >> 12) & 0x3f));
      byte(0x80 | ((c >> 6) & 0x3f));
      byte(0x80 | (c & 0x3f));
    }
  }
  if (n > 0) {
    k = Math.imul(k, C1);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, C2);
    h ^= k;
  }
  h ^= len;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

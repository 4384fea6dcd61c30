/**
 * Prefix block hashes of a prompt, in the trace schema's `hash_ids` form (`block_unit: bytes`).
 * The serialized prompt's UTF-8 bytes are cut into `PREFIX_BLOCK_BYTES` blocks (≈512 tokens at
 * 4 bytes/token, the Mooncake trace's block size); block i's id is a hash of (id of block i-1,
 * bytes of block i), so equal ids at equal positions mean equal whole prefixes — what prefix
 * (KV) caching can share. The last, partial block is hashed too. Ids are 31-bit non-negative
 * integers (the schema's Int32), the first 4 bytes of a SHA-256, so collisions are ~1 in 2^31
 * per pair of distinct prefixes — ample for replay statistics, not for security.
 */
import { hash } from 'node:crypto';

/** Block size in bytes of `prefixBlockHashes` (2,048 B ≈ 512 tokens at 4 bytes/token). */
export const PREFIX_BLOCK_BYTES = 2048;

/**
 * The chained block hash ids of `prompt` (a serialized prompt, e.g. the JSON of `messages`).
 * @returns one id in [0, 2^31) per started block; `[]` for an empty prompt.
 */
export function prefixBlockHashes(prompt: string, blockBytes: number = PREFIX_BLOCK_BYTES): number[] {
  const bytes = Buffer.from(prompt, 'utf8');
  const out: number[] = [];
  // One scratch buffer holds (previous id's 4 bytes, block); a one-shot `crypto.hash` per block
  // saves the `createHash` object: 0.78× the time for a short chat prompt, the same once full
  // 2 KiB blocks dominate (bench/request-log.bench.ts).
  const scratch = Buffer.allocUnsafe(4 + Math.min(blockBytes, bytes.length));
  scratch.writeUInt32BE(0, 0);
  for (let off = 0; off < bytes.length; off += blockBytes) {
    const end = Math.min(off + blockBytes, bytes.length);
    bytes.copy(scratch, 4, off, end);
    const h = hash('sha256', scratch.subarray(0, 4 + end - off), 'buffer') as unknown as Buffer;
    h.copy(scratch, 0, 0, 4);
    out.push(h.readUInt32BE(0) & 0x7fffffff);
  }
  return out;
}

/**
 * The serialized prompt of an OpenAI request body: the JSON of `messages` (chat), `prompt`
 * (completions) or `input` (embeddings); '' when absent. JSON.stringify keeps key order, so the
 * same conversation prefix serializes to the same leading bytes turn after turn.
 */
export function serializedPrompt(body: Readonly<Record<string, unknown>>): string {
  const p = body.messages ?? body.prompt ?? body.input;
  if (p === undefined || p === null) return '';
  if (Array.isArray(p) && body.messages !== undefined) {
    // A chat prefix must stay a byte prefix as turns are added: drop the closing bracket.
    const s = JSON.stringify(p);
    return s.slice(0, -1);
  }
  return typeof p === 'string' ? p : JSON.stringify(p);
}

/**
 * Field names for error messages: the keys a zod object schema allows at a path (to list them
 * after an unknown key) and the allowed name nearest to a misspelt one (to suggest it).
 * Levenshtein distance as in Levenshtein (1966), "Binary codes capable of correcting deletions,
 * insertions, and reversals", computed row by row with an early cut-off.
 */
import type { z } from 'zod';

/**
 * Keys an object schema accepts at `path` (best effort through arrays, defaults, optionals). At a
 * union of objects (`state: {backend: local | redis, …}`) the keys of every branch, in order.
 */
export function allowedKeys(root: z.ZodType, path: readonly (string | number)[]): string[] | null {
  const d = defAt(root, path);
  if (d?.type === 'object' && d.shape) return Object.keys(d.shape);
  if (d?.type === 'union' && d.options) {
    const keys = new Set<string>();
    for (const o of d.options) for (const k of Object.keys(unwrap(o).def?.shape ?? {})) keys.add(k);
    return keys.size > 0 ? [...keys] : null;
  }
  return null;
}

/**
 * Where a dotted path leaves a schema: the segment index, the segment, the fields allowed there
 * (empty below a single value), and whether the path goes on below a single value (a string,
 * number, boolean or enum field, which has no fields of its own).
 */
export interface UnknownSegment {
  index: number;
  segment: string;
  allowed: string[];
  belowValue: boolean;
}

/** Zod definition types of single values: a path cannot go on below one. */
const VALUE_TYPES = new Set(['string', 'number', 'boolean', 'enum', 'literal', 'bigint', 'null', 'date']);

/**
 * Checks a dotted path (as sweep axes and plan `set:` name experiment fields) against a schema:
 * object fields must exist; list entries (by index or by an entry's name) and record keys pass;
 * a single-value field ends the path; below a union nothing more is checked (the cell's own
 * validation covers it).
 * @returns the first segment no object of the schema has (or the first below a single value),
 *   with the fields it allows, or null.
 */
export function unknownPathSegment(root: z.ZodType, path: string): UnknownSegment | null {
  const segs = path.split('.');
  const at: (string | number)[] = [];
  for (let i = 0; i < segs.length; i++) {
    const d = defAt(root, at);
    const seg = segs[i]!;
    if (d?.type === 'object' && d.shape) {
      if (!Object.hasOwn(d.shape, seg)) return { index: i, segment: seg, allowed: Object.keys(d.shape), belowValue: false };
      at.push(seg);
    } else if (d?.type === 'array' || d?.type === 'record') {
      at.push(0); // every entry of a list, every value of a record, has the one schema
    } else if (d?.type !== undefined && VALUE_TYPES.has(d.type)) {
      return { index: i, segment: seg, allowed: [], belowValue: true };
    } else {
      return null;
    }
  }
  return null;
}

/**
 * The valid dotted path nearest to `path`, for a did-you-mean: first by mending the segment
 * where `path` leaves the schema (`client.timout_ms` → `client.timeout_ms`); failing that, by
 * its last segment against the last segment of every path through the schema's objects
 * (`engine.max_num_seq` → `replicas.max_num_seqs`; at most one edit per three characters of the
 * segment, three at most), the nearest full path breaking a tie.
 * Paths through lists and records are not listed (their entries are named by the file).
 * @returns the suggestion, or null when nothing is near (or `path` is valid).
 */
export function closestPath(root: z.ZodType, path: string): string | null {
  const miss = unknownPathSegment(root, path);
  if (miss === null) return null;
  const segs = path.split('.');
  const near = miss.belowValue ? null : closestName(miss.segment, miss.allowed);
  // A mended segment that is not the last keeps the rest only if the whole path is then valid.
  if (near !== null) {
    const mended = [...segs.slice(0, miss.index), near, ...segs.slice(miss.index + 1)].join('.');
    if (unknownPathSegment(root, mended) === null) return mended;
  }
  // A short leaf is near too many names by chance: at most one edit per three characters.
  const leaf = segs[segs.length - 1]!;
  const limit = Math.min(3, Math.floor(leaf.length / 3)) + 1;
  let best: string | null = null;
  let bestLeafD = limit;
  let bestD = Infinity;
  for (const p of objectPaths(root)) {
    const leafD = editDistance(leaf, p.slice(p.lastIndexOf('.') + 1), limit);
    if (leafD >= limit || leafD > bestLeafD) continue;
    const d = editDistance(path, p, Infinity);
    if (leafD < bestLeafD || d < bestD) {
      bestLeafD = leafD;
      bestD = d;
      best = p;
    }
  }
  return best;
}

/** Every dotted path through the object fields of `root` (not into lists or records), depth ≤ 6. */
function objectPaths(root: z.ZodType): string[] {
  const out: string[] = [];
  const walk = (d: SchemaDef | undefined, prefix: string, depth: number): void => {
    if (depth > 6 || d?.type !== 'object' || !d.shape) return;
    for (const [k, v] of Object.entries(d.shape)) {
      const p = prefix ? `${prefix}.${k}` : k;
      out.push(p);
      walk(unwrap(v).def, p, depth + 1);
    }
  };
  walk(unwrap(root).def, '', 0);
  return out;
}

interface SchemaDef {
  type?: string;
  innerType?: unknown;
  in?: unknown;
  out?: unknown;
  element?: unknown;
  shape?: Record<string, unknown>;
  valueType?: unknown;
  options?: unknown[];
}

/** A schema without its default / optional / nullable / pipe wrappers. */
function unwrap(x: unknown): { def?: SchemaDef } {
  let cur = x as { def?: SchemaDef };
  for (let guard = 0; guard < 10 && cur?.def; guard++) {
    const t = cur.def.type;
    if (t === 'default' || t === 'optional' || t === 'nullable' || t === 'prefault' || t === 'readonly' || t === 'catch') cur = cur.def.innerType as typeof cur;
    else if (t === 'pipe') {
      // A pipe from a loose record into a strict object (pre-checks, then the real shape, as
      // RouteWise's router_params) has its fields on the out side.
      const into = unwrap(cur.def.in).def?.type === 'record' && unwrap(cur.def.out).def?.type === 'object';
      cur = (into ? cur.def.out : cur.def.in) as typeof cur;
    }
    else break;
  }
  return cur;
}

/** The (unwrapped) schema definition at `path`; a list or record segment stands for any entry. */
function defAt(root: z.ZodType, path: readonly (string | number)[]): SchemaDef | undefined {
  let s: unknown = root;
  for (const seg of path) {
    const d = unwrap(s).def;
    if (!d) return undefined;
    if (d.type === 'array') s = d.element;
    else if (d.type === 'object' && typeof seg === 'string') s = d.shape?.[seg];
    else if (d.type === 'record') s = d.valueType;
    else if (d.type === 'union' && typeof seg === 'string') s = d.options?.map((o) => unwrap(o).def?.shape?.[seg]).find((f) => f !== undefined);
    else return undefined;
  }
  return unwrap(s).def;
}

/** The name in `names` nearest to `name` (Levenshtein distance ≤ 3), or null. */
export function closestName(name: string, names: readonly string[]): string | null {
  let best: string | null = null;
  let bestD = 4;
  for (const n of names) {
    const d = editDistance(name, n, bestD);
    if (d < bestD) {
      bestD = d;
      best = n;
    }
  }
  return best;
}

/** Levenshtein distance of `a` and `b`, or `limit` once it reaches it. */
function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) >= limit) return limit;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const v = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      cur.push(v);
      rowMin = Math.min(rowMin, v);
    }
    if (rowMin >= limit) return limit;
    prev = cur;
  }
  return Math.min(prev[b.length]!, limit);
}

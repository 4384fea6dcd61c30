/**
 * Field names for error messages: the keys a zod object schema allows at a path (to list them
 * after an unknown key) and the allowed name nearest to a misspelt one (to suggest it).
 * Levenshtein distance as in Levenshtein (1966), "Binary codes capable of correcting deletions,
 * insertions, and reversals", computed row by row with an early cut-off.
 */
import type { z } from 'zod';

/** Keys an object schema accepts at `path` (best effort through arrays, defaults, optionals). */
export function allowedKeys(root: z.ZodType, path: readonly (string | number)[]): string[] | null {
  const d = defAt(root, path);
  return d?.type === 'object' && d.shape ? Object.keys(d.shape) : null;
}

/** Where a dotted path leaves a schema: the segment index, the segment, and the fields allowed there. */
export interface UnknownSegment {
  index: number;
  segment: string;
  allowed: string[];
}

/**
 * Checks a dotted path (as sweep axes and plan `set:` name experiment fields) against a schema:
 * object fields must exist; list entries (by index or by an entry's name) and record keys pass;
 * below a union or a scalar nothing more is checked (the cell's own validation covers it).
 * @returns the first segment no object of the schema has, with the fields it allows, or null.
 */
export function unknownPathSegment(root: z.ZodType, path: string): UnknownSegment | null {
  const segs = path.split('.');
  const at: (string | number)[] = [];
  for (let i = 0; i < segs.length; i++) {
    const d = defAt(root, at);
    const seg = segs[i]!;
    if (d?.type === 'object' && d.shape) {
      if (!Object.hasOwn(d.shape, seg)) return { index: i, segment: seg, allowed: Object.keys(d.shape) };
      at.push(seg);
    } else if (d?.type === 'array' || d?.type === 'record') {
      at.push(0); // every entry of a list, every value of a record, has the one schema
    } else {
      return null;
    }
  }
  return null;
}

interface SchemaDef {
  type?: string;
  innerType?: unknown;
  in?: unknown;
  element?: unknown;
  shape?: Record<string, unknown>;
  valueType?: unknown;
}

/** A schema without its default / optional / nullable / pipe wrappers. */
function unwrap(x: unknown): { def?: SchemaDef } {
  let cur = x as { def?: SchemaDef };
  for (let guard = 0; guard < 10 && cur?.def; guard++) {
    const t = cur.def.type;
    if (t === 'default' || t === 'optional' || t === 'nullable' || t === 'prefault' || t === 'readonly' || t === 'catch') cur = cur.def.innerType as typeof cur;
    else if (t === 'pipe') cur = cur.def.in as typeof cur;
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

/**
 * Small readers of untrusted JSON values shared by the translators: request and response
 * bodies arrive as parsed JSON of unknown shape, so every field is checked before use.
 */

/** Whether `v` is a plain JSON object (not null, not an array). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** A token count: a finite non-negative number floored to an integer, else 0. */
export function count(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 0;
}

/** Whether `v` is a string of at least one character. */
export function nonEmpty(v: unknown): v is string {
  return typeof v === 'string' && v.length > 0;
}

/** `v` when it is a string, else ''. */
export function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** The names deduplicated and sorted (the order `RequestTranslation.dropped` promises). */
export function sortedUnique(names: Iterable<string>): string[] {
  return [...new Set(names)].sort();
}

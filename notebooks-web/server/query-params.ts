/**
 * Validation of the API's query parameters and path segments. Everything the client sends is
 * checked here and then bound as a SQL parameter or looked up in a fixed table; nothing from a
 * request is ever spliced into SQL or into a file path. Every failure is a 400 naming the
 * parameter and what is allowed.
 */
import { badRequest } from './http-errors.ts';

/** Longest path segment or string parameter accepted, characters. */
const MAX_TEXT = 256;

/**
 * A request's query string, checked against the parameters its route allows.
 * @throws ApiError 400 for a parameter the route does not take or one given twice.
 */
export class QueryParams {
  private readonly values = new Map<string, string>();

  constructor(search: URLSearchParams, allowed: readonly string[]) {
    for (const [name, value] of search) {
      if (!allowed.includes(name)) {
        const list = allowed.length === 0 ? 'none' : allowed.join(', ');
        throw badRequest(`unknown parameter '${clip(name)}' (allowed: ${list})`);
      }
      if (this.values.has(name)) throw badRequest(`parameter '${name}' given more than once`);
      this.values.set(name, value);
    }
  }

  /** The raw value, or undefined when absent (an empty value counts as absent). */
  raw(name: string): string | undefined {
    const v = this.values.get(name);
    return v === undefined || v === '' ? undefined : v;
  }

  /**
   * A finite number in [min, max], or `fallback` when absent.
   * @throws ApiError 400 when present but not a finite number in range.
   */
  number(name: string, opts: { min: number; max: number; fallback: number }): number;
  number(name: string, opts: { min: number; max: number }): number | undefined;
  number(name: string, opts: { min: number; max: number; fallback?: number }): number | undefined {
    const raw = this.raw(name);
    if (raw === undefined) return opts.fallback;
    const v = Number(raw);
    // Number('') and Number(' ') are 0: demand something that looks like a number.
    if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(raw) || !Number.isFinite(v) || v < opts.min || v > opts.max) {
      throw badRequest(`parameter '${name}' must be a number in [${opts.min}, ${opts.max}], got '${clip(raw)}'`);
    }
    return v;
  }

  /**
   * An integer in [min, max], or `fallback` when absent.
   * @throws ApiError 400 when present but not such an integer.
   */
  integer(name: string, opts: { min: number; max: number; fallback: number }): number {
    const raw = this.raw(name);
    if (raw === undefined) return opts.fallback;
    if (!/^\d+$/.test(raw) || Number(raw) < opts.min || Number(raw) > opts.max) {
      throw badRequest(`parameter '${name}' must be an integer in [${opts.min}, ${opts.max}], got '${clip(raw)}'`);
    }
    return Number(raw);
  }

  /**
   * One of `choices`, or `fallback` when absent.
   * @throws ApiError 400 for any other value.
   */
  choice<T extends string>(name: string, choices: readonly T[], fallback: T): T;
  choice<T extends string>(name: string, choices: readonly T[]): T | undefined;
  choice<T extends string>(name: string, choices: readonly T[], fallback?: T): T | undefined {
    const raw = this.raw(name);
    if (raw === undefined) return fallback;
    if (!(choices as readonly string[]).includes(raw)) {
      throw badRequest(`parameter '${name}' must be one of ${choices.join(', ')}, got '${clip(raw)}'`);
    }
    return raw as T;
  }

  /**
   * A free-text value (bound as a SQL parameter, never interpolated), at most 256 characters.
   * @throws ApiError 400 when longer or containing control characters.
   */
  text(name: string): string | undefined {
    const raw = this.raw(name);
    if (raw === undefined) return undefined;
    checkText(`parameter '${name}'`, raw);
    return raw;
  }
}

/**
 * Checks one decoded path segment: non-empty, at most 256 characters, no `/`, `\`, control
 * characters, and not `.` or `..` — the segment names a row, never a file, but traversal-shaped
 * input is rejected outright rather than looked up. With `slashes` (run ids such as
 * `fixed/outage/s42`, sent percent-encoded as one segment) `/` may separate parts, each of which
 * must pass the same checks.
 * @throws ApiError 400 naming `what`.
 */
export function checkSegment(what: string, segment: string, opts: { slashes?: boolean } = {}): string {
  const parts = opts.slashes ? segment.split('/') : [segment];
  if (parts.some((p) => p === '' || p === '.' || p === '..' || /[/\\]/.test(p))) {
    throw badRequest(`malformed ${what} '${clip(segment)}'`);
  }
  checkText(what, segment);
  return segment;
}

function checkText(what: string, value: string): void {
  if (value.length > MAX_TEXT) throw badRequest(`${what} is longer than ${MAX_TEXT} characters`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value)) throw badRequest(`${what} contains control characters`);
}

/**
 * Splits a raw URL path into decoded segments without normalising `.` / `..` (a normalising
 * parser would silently turn `/api/experiments/../x` into another route).
 * @throws ApiError 400 for bad percent-encoding.
 */
export function pathSegments(pathname: string): string[] {
  const parts = pathname.split('/').slice(1);
  if (parts.length > 0 && parts[parts.length - 1] === '') parts.pop(); // trailing slash
  return parts.map((p) => {
    try {
      return decodeURIComponent(p);
    } catch {
      throw badRequest(`malformed percent-encoding in path segment '${clip(p)}'`);
    }
  });
}

function clip(s: string): string {
  return s.length > 60 ? `${s.slice(0, 60)}…` : s;
}

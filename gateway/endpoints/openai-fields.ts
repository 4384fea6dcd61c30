/**
 * Checks of the OpenAI request fields several endpoint families share (sampling knobs), with
 * OpenAI's wording and `param`: a field of the wrong type, or outside the range OpenAI documents
 * for it, is a 400 here and never reaches an upstream. Absent and `null` fields pass.
 */
import { BYTES_PER_TOKEN, utf8ByteLength } from '../../core/index.ts';
import type { BodyProblem } from '../request-body.ts';

/** `{ code: 'invalid_request', message, param }`. */
export function invalid(param: string, message: string): BodyProblem {
  return { code: 'invalid_request', message, param };
}

/** What JSON type a value is, in OpenAI's words (`a string`, `an array`, …). */
export function jsonTypeOf(v: unknown): string {
  if (Array.isArray(v)) return 'an array';
  if (v === null) return 'null';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'number') return Number.isInteger(v) ? 'an integer' : 'a decimal';
  if (typeof v === 'boolean') return 'a boolean';
  return `a ${typeof v}`;
}

/**
 * A number field: of type number (an integer when `integer`), within [min, max] where given.
 * @returns the problem, or null when absent, null or valid.
 */
export function checkNumber(body: Record<string, unknown>, field: string, opts: { integer?: boolean; min?: number; max?: number } = {}): BodyProblem | null {
  const v = body[field];
  if (v === undefined || v === null) return null;
  const want = opts.integer ? 'an integer' : 'a decimal';
  if (typeof v !== 'number' || !Number.isFinite(v) || (opts.integer && !Number.isInteger(v))) {
    return invalid(field, `Invalid type for '${field}': expected ${want}, but got ${jsonTypeOf(v)} instead.`);
  }
  if (opts.min !== undefined && v < opts.min) return invalid(field, `Invalid '${field}': ${opts.integer ? 'integer' : 'decimal'} below minimum value. Expected a value >= ${opts.min}, but got ${v} instead.`);
  if (opts.max !== undefined && v > opts.max) return invalid(field, `Invalid '${field}': ${opts.integer ? 'integer' : 'decimal'} above maximum value. Expected a value <= ${opts.max}, but got ${v} instead.`);
  return null;
}

/** A boolean field. @returns the problem, or null when absent, null or a boolean. */
export function checkBoolean(body: Record<string, unknown>, field: string): BodyProblem | null {
  const v = body[field];
  if (v === undefined || v === null || typeof v === 'boolean') return null;
  return invalid(field, `Invalid type for '${field}': expected a boolean, but got ${jsonTypeOf(v)} instead.`);
}

/** `stop`: a string or an array of strings. @returns the problem, or null. */
export function checkStop(body: Record<string, unknown>): BodyProblem | null {
  const v = body.stop;
  if (v === undefined || v === null || typeof v === 'string') return null;
  if (Array.isArray(v) && v.every((s) => typeof s === 'string')) return null;
  return invalid('stop', `Invalid type for 'stop': expected a string or an array of strings, but got ${jsonTypeOf(v)} instead.`);
}

/**
 * The sampling knobs of chat and text completions, with OpenAI's documented ranges:
 * `temperature` 0–2, `top_p` 0–1, `presence_penalty` / `frequency_penalty` −2–2, `n` ≥ 1,
 * `seed` an integer, `logprobs` (chat) a boolean, `stop` a string or strings.
 * @returns the first problem, or null.
 */
export function checkSampling(body: Record<string, unknown>): BodyProblem | null {
  return (
    checkNumber(body, 'temperature', { min: 0, max: 2 }) ??
    checkNumber(body, 'top_p', { min: 0, max: 1 }) ??
    checkNumber(body, 'presence_penalty', { min: -2, max: 2 }) ??
    checkNumber(body, 'frequency_penalty', { min: -2, max: 2 }) ??
    checkNumber(body, 'n', { integer: true, min: 1 }) ??
    checkNumber(body, 'seed', { integer: true }) ??
    checkStop(body)
  );
}

/** Tokens of a `prompt` / `input`: strings by UTF-8 bytes, token-id arrays one per id, nested arrays summed. */
export function promptTokens(v: unknown): number {
  if (typeof v === 'string') return Math.ceil(utf8ByteLength(v) / BYTES_PER_TOKEN);
  if (typeof v === 'number') return 1;
  if (Array.isArray(v)) {
    let n = 0;
    for (const x of v) n += promptTokens(x);
    return n;
  }
  return Math.ceil(utf8ByteLength(JSON.stringify(v) ?? '') / BYTES_PER_TOKEN);
}

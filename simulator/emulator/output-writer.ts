/**
 * The seam between the emulator's one generation path and the wire dialects it speaks: the
 * shared path decides when each output token goes out, whether the request stops, stalls or
 * fails; an `OutputWriter` (one per response, from `openai-shapes.ts` or `anthropic-shapes.ts`)
 * says what the bytes look like.
 */

/** Why the output ended, in neutral words; each dialect names it its own way. */
export type StopKind = 'stop' | 'length' | 'tool';

/** Token counts of one response: `input` prompt tokens, `cached` of them hit the prefix cache. */
export interface TokenCounts {
  input: number;
  output: number;
  cached: number;
}

/** A response that went wrong after the request was accepted, in both forms the dialect has. */
export interface Failure {
  /** The in-band stream event (headers already sent). */
  event: string;
  /** Status and body of a plain response (nothing sent yet). */
  status: number;
  body: string;
}

/** Writes one generation response in one dialect. */
export interface OutputWriter {
  /** Stream bytes due before output piece 0 ('' when the dialect has none); the cache hit is known by then. */
  preamble(counts: TokenCounts): string;
  /** Stream bytes carrying output piece `i` (text, or a piece of the tool call's arguments). */
  piece(i: number, text: string): string;
  /** Stream bytes that close a complete stream. */
  tail(stop: StopKind, counts: TokenCounts): string;
  /** The body of a whole (non-stream) response; `text` is every piece joined. */
  whole(text: string, stop: StopKind, counts: TokenCounts): string;
  /** The emulated mid-stream error fault. */
  midstreamError(): Failure;
  /** The engine refused the prompt: it cannot fit in the KV cache. */
  contextTooLong(message: string): Failure;
}

/** Error bodies a dialect answers with before any generation starts. */
export interface ErrorShapes {
  /** 401: the key is missing or wrong. */
  unauthorized(): string;
  /** 400 with `message`. */
  badRequest(message: string): string;
  /** The `error` fault with `status`. */
  fault(status: number): string;
  /** The 429 of the rate-limit fault. */
  rateLimited(): string;
}

/**
 * The `openai_compat` adapter: one attempt of one request against an OpenAI-style upstream
 * (vLLM, SGLang, Ollama, hosted OpenAI-compatible APIs), over the origin's undici pool.
 *
 * It turns what the socket does into the core's vocabulary and nothing more: response headers
 * (first output), relayed SSE frames (via `SseRelay`), a whole non-stream body, or a failure as
 * an `Outcome` — an HTTP error status classified with the core's `classifyStatus`, a transport
 * failure (`reset` / `refused` / `timeout`, from undici's and Node's error codes), or a
 * protocol violation (unparseable stream or body, a stream that ends without `[DONE]` or a
 * finish reason), which counts as a reset. Deciding what an outcome means is the core's job.
 *
 * The client's own headers are never forwarded: upstreams get the route's key, if any, and the
 * request id.
 */
import type { Dispatcher, Pool } from 'undici';
import { classifyStatus, parseRetryAfterMs, type Outcome, type Usage } from '../../core/index.ts';
import { SseRelay, toUsage, type RelayEvent } from '../sse-relay.ts';

/** Where and what one attempt sends. */
export interface AttemptSpec {
  readonly pool: Pool;
  /** Full request path on the origin, e.g. `/v1/chat/completions`. */
  readonly path: string;
  readonly body: string;
  /** Route key for `Authorization: Bearer`, or null. */
  readonly apiKey: string | null;
  readonly requestId: string;
  readonly stream: boolean;
  readonly endpoint: 'chat' | 'completion' | 'embedding';
  /** Client asked for stream usage. */
  readonly includeUsage: boolean;
  /** Model name the client sees. */
  readonly publicModel: string;
  /** Error bodies are cut at this many bytes. */
  readonly maxErrorBodyBytes: number;
}

/** Callbacks of a streaming attempt. */
export interface AttemptHooks {
  /** The upstream answered 2xx (its headers are the attempt's first output). */
  headers(): void;
  /**
   * Frames and, last, `done` — never `upstream_error` / `malformed` (those end the attempt as a
   * failure). Returns a promise when the client is congested; reading resumes when it settles.
   */
  events(events: RelayEvent[]): void | Promise<void>;
}

/** How an attempt ended, as far as the adapter is concerned. */
export type AttemptEnd =
  /** A stream delivered its `done` through `hooks.events`. */
  | { kind: 'streamed' }
  /** A whole 2xx body (non-stream), model name rewritten, with its usage. */
  | { kind: 'body'; text: string; usage: Usage | null }
  /** The attempt failed; `errorBody` is the upstream's error body for HTTP statuses. */
  | { kind: 'failed'; outcome: Outcome; errorBody: string | null }
  /** The driver aborted it (cancel, deadline, client gone); report nothing. */
  | { kind: 'aborted' };

/**
 * Runs one attempt until it ends. Never throws: every failure is an `AttemptEnd`.
 * @param signal aborts the upstream request (the connection is dropped, so the upstream sees it).
 */
export async function runAttempt(spec: AttemptSpec, signal: AbortSignal, hooks: AttemptHooks): Promise<AttemptEnd> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: spec.stream ? 'text/event-stream' : 'application/json',
    'x-request-id': spec.requestId,
  };
  if (spec.apiKey) headers.authorization = `Bearer ${spec.apiKey}`;
  let res: Dispatcher.ResponseData;
  try {
    res = await spec.pool.request({ method: 'POST', path: spec.path, headers, body: spec.body, signal });
  } catch (e) {
    return signal.aborted ? { kind: 'aborted' } : { kind: 'failed', outcome: transportOutcome(e), errorBody: null };
  }
  try {
    if (res.statusCode >= 400) return await httpFailure(res, spec.maxErrorBodyBytes);
    if (res.statusCode < 200 || res.statusCode >= 300) {
      res.body.destroy();
      return { kind: 'failed', outcome: { kind: 'transport', cause: 'reset' }, errorBody: null };
    }
    hooks.headers();
    if (!spec.stream) return await wholeBody(res, spec.publicModel);
    const type = String(res.headers['content-type'] ?? '');
    if (!type.includes('text/event-stream')) {
      res.body.destroy();
      return { kind: 'failed', outcome: { kind: 'transport', cause: 'reset' }, errorBody: null };
    }
    return await relayStream(res, spec, hooks);
  } catch (e) {
    if (!res.body.destroyed) res.body.destroy();
    return signal.aborted ? { kind: 'aborted' } : { kind: 'failed', outcome: transportOutcome(e), errorBody: null };
  }
}

async function relayStream(res: Dispatcher.ResponseData, spec: AttemptSpec, hooks: AttemptHooks): Promise<AttemptEnd> {
  const relay = new SseRelay({ endpoint: spec.endpoint === 'completion' ? 'completion' : 'chat', includeUsage: spec.includeUsage, model: spec.publicModel });
  let out: RelayEvent[] = [];
  let streamed = false;
  const deliver = async (): Promise<AttemptEnd | null> => {
    if (out.length === 0) return null;
    const batch = out;
    out = [];
    const last = batch[batch.length - 1]!;
    let failure: AttemptEnd | null = null;
    if (last.kind === 'upstream_error') {
      batch.pop();
      failure = { kind: 'failed', outcome: { kind: 'http_status', status: last.status, errorClass: classifyStatus(last.status, last.code), retryAfterMs: null }, errorBody: null };
    } else if (last.kind === 'malformed') {
      batch.pop();
      failure = { kind: 'failed', outcome: { kind: 'transport', cause: 'reset' }, errorBody: null };
    } else if (last.kind === 'done') streamed = true;
    if (batch.length > 0) {
      const wait = hooks.events(batch);
      if (wait) await wait;
    }
    return failure;
  };
  for await (const chunk of res.body) {
    if (relay.finished || streamed) continue; // after [DONE]: drain quietly so the connection can be reused
    relay.push(chunk as Uint8Array, out);
    const failure = await deliver();
    if (failure) {
      res.body.destroy();
      return failure;
    }
    if (!streamed && relay.finishSeen && relay.usage !== null) {
      // A finish reason and then the usage chunk (always asked for upstream): the answer is
      // whole, so the client is not kept waiting for a [DONE] a lenient server may never send.
      // The loop keeps draining (connection reuse) until the body ends or body_timeout_ms.
      out.push({ kind: 'done', usage: relay.usage });
      await deliver();
    }
  }
  relay.end(out);
  const failure = await deliver();
  if (failure) return failure;
  if (streamed) return { kind: 'streamed' };
  // The body ended without [DONE]. A finish reason means the answer is whole (lenient servers).
  if (relay.finishSeen) {
    out.push({ kind: 'done', usage: relay.usage });
    await deliver();
    return { kind: 'streamed' };
  }
  return { kind: 'failed', outcome: { kind: 'transport', cause: 'reset' }, errorBody: null };
}

async function wholeBody(res: Dispatcher.ResponseData, publicModel: string): Promise<AttemptEnd> {
  const text = await res.body.text();
  let obj: unknown;
  try {
    obj = JSON.parse(text);
  } catch {
    return { kind: 'failed', outcome: { kind: 'transport', cause: 'reset' }, errorBody: null };
  }
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return { kind: 'failed', outcome: { kind: 'transport', cause: 'reset' }, errorBody: null };
  const o = obj as Record<string, unknown>;
  const usage = o.usage !== null && typeof o.usage === 'object' ? toUsage(o.usage as Record<string, unknown>) : null;
  if (typeof o.model === 'string' && o.model !== publicModel) {
    o.model = publicModel;
    return { kind: 'body', text: JSON.stringify(o), usage };
  }
  return { kind: 'body', text, usage };
}

/** An upstream error status: its (size-bounded) body, error code and Retry-After. */
async function httpFailure(res: Dispatcher.ResponseData, maxBytes: number): Promise<AttemptEnd> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    const b = chunk as Buffer;
    parts.push(b);
    size += b.length;
    if (size >= maxBytes) {
      res.body.destroy();
      break;
    }
  }
  const errorBody = Buffer.concat(parts).subarray(0, maxBytes).toString('utf8');
  let code: string | null = null;
  try {
    const err = (JSON.parse(errorBody) as { error?: { code?: unknown; type?: unknown } }).error;
    code = typeof err?.code === 'string' ? err.code : typeof err?.type === 'string' ? err.type : null;
  } catch {
    code = null;
  }
  const status = res.statusCode > 599 ? 599 : res.statusCode;
  return {
    kind: 'failed',
    outcome: { kind: 'http_status', status, errorClass: classifyStatus(status, code), retryAfterMs: retryAfterFromHeaders(res.headers) },
    errorBody,
  };
}

/**
 * Retry-After of an upstream error response in ms, or null: `retry-after-ms`, then
 * `Retry-After` as delta seconds or an HTTP date (the core's parser; the wall clock is read here,
 * in the driver, for the date form).
 */
export function retryAfterFromHeaders(headers: Record<string, string | string[] | undefined>): number | null {
  const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  return parseRetryAfterMs({ 'retry-after': one(headers['retry-after']), 'retry-after-ms': one(headers['retry-after-ms']) }, Date.now());
}

/** A transport error as an outcome (undici `UND_ERR_*` and Node socket codes). */
export function transportOutcome(e: unknown): Outcome {
  const err = e as { code?: string; cause?: { code?: string } } | null;
  const code = err?.code ?? err?.cause?.code ?? '';
  switch (code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
    case 'ETIMEDOUT':
      return { kind: 'transport', cause: 'timeout' };
    case 'ECONNREFUSED':
      return { kind: 'transport', cause: 'refused' };
    default:
      return { kind: 'transport', cause: 'reset' };
  }
}

/**
 * The `openai_compat` adapter: one attempt of one request against an OpenAI-style upstream
 * (vLLM, SGLang, Ollama, hosted OpenAI-compatible APIs), over the origin's undici pool.
 *
 * It turns what the socket does into the core's vocabulary and nothing more: response headers
 * (first output), relayed SSE frames (via `SseRelay`), a whole non-stream body, or a failure as
 * an `Outcome` — an HTTP error status (or an in-band stream error, with its message and
 * Retry-After) classified with the core's `classifyUpstreamError`, a transport
 * failure (`reset` / `refused` / `timeout`, from undici's and Node's error codes), or a
 * protocol violation (unparseable stream or body, a stream that ends without `[DONE]` or a
 * finish reason), which counts as a reset. Deciding what an outcome means is the core's job.
 *
 * The client's own headers are never forwarded: upstreams get the route's key, if any, the
 * request id and, when tracing is on, the trace-context headers of the attempt's span.
 *
 * Rerank, images, audio and videos (`openai-families.ts`) go through the same handler: a
 * spooled multipart body is streamed from its file for each attempt, a video job's status or
 * content is a GET, and a whole answer that is not JSON (audio, video, a plain-text transcript)
 * is relayed as bytes with its content type.
 */
import { publicModelOf } from '../auto/auto-request.ts';
import type { Dispatcher, Pool } from 'undici';
import { classifyUpstreamError, parseRetryAfterMs, type Outcome, type Usage } from '../../core/index.ts';
import type { ClientWire } from '../endpoints/client-wire.ts';
import { upstreamBody, type ClientRequest, type Endpoint } from '../request-body.ts';
import { TOKEN_COUNT_HEADER } from '../endpoints/messages/count-tokens.ts';
import { SseRelay, toUsage, type RelayEvent } from '../sse-relay.ts';
import { ChatStreamToMessages } from '../translate/chat-stream-to-messages.ts';
import { messagesRequestToChat } from '../translate/messages-to-chat.ts';
import { chatCompletionToMessage } from '../translate/message-bodies.ts';
import { ChatStreamToResponses } from '../translate/chat-stream-to-responses.ts';
import { chatCompletionToResponse, type ResponseFrame } from '../translate/chat-to-responses.ts';
import { inputForEndpoint, NativeResponsesStream, rewriteResponse, usageFromResponses } from '../translate/native-responses.ts';
import { responsesRequestToChat } from '../translate/responses-to-chat.ts';
import { newResponseId } from '../endpoints/responses/response-ids.ts';
import { droppedParamsHeader } from './dropped-params.ts';
import { answersWithBytes, attemptUpload, familyBody, isJsonType, TranscriptPassthrough, transcriptEvents, videoFetchPath, type StreamedBody } from './openai-families.ts';
import type { AttemptEnd, AttemptHandle, AttemptHooks, UpstreamAdapter, UpstreamTarget } from './adapter.ts';

export type { AttemptEnd, AttemptHandle, AttemptHooks } from './adapter.ts';

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
  readonly endpoint: OpenAIEndpoint;
  /** Client asked for stream usage. */
  readonly includeUsage: boolean;
  /** Model name the client sees. */
  readonly publicModel: string;
  /** Error bodies are cut at this many bytes. */
  readonly maxErrorBodyBytes: number;
  /** Frames relayed stream events for the client (the request's family wire); default OpenAI's. */
  readonly wire?: ClientWire;
  /** `AttemptHandle.commitHeaders` of the attempt (e.g. the fields a translation dropped). */
  readonly commitHeaders?: ReadonlyArray<readonly [string, string]>;
  /** Trace-context headers sent as they are (`AttemptContext.traceHeaders`), or null / absent. */
  readonly traceHeaders?: Readonly<Record<string, string>> | null;
  /** `GET` (a video job's status or content; no body), else `POST`. */
  readonly method?: 'GET' | 'POST';
  /** A multipart body sent instead of `body` (a spooled upload), or null / absent. */
  readonly upload?: StreamedBody | null;
  /** The client's request, when it is of a family `openai-families.ts` reads (rerank, images, audio, videos). */
  readonly familyReq?: ClientRequest | null;
  /** The route's endpoint id (what a video id names). */
  readonly endpointId?: string;
  /** A `/v1/responses` attempt: how its answer is read (absent for every other family). */
  readonly responses?: ResponsesAttempt;
}

/** How a `/v1/responses` attempt reads its answer. */
export interface ResponsesAttempt {
  /** The upstream has the Responses API (else it was sent a chat completion request). */
  readonly native: boolean;
  /** The response's id, time, client-facing model and the client's request (echoed fields). */
  readonly frame: ResponseFrame;
  /** Told the final response object (`AttemptContext.onResponse`), or absent. */
  readonly onResponse?: (response: Record<string, unknown>) => void;
  /** The endpoint the attempt goes to (a native answer's reasoning items are tagged with it). */
  readonly endpointId: string;
}

/**
 * Upstream path (after the route's base_url, which ends in `/v1`) of each endpoint family served:
 * Anthropic's `messages` is translated into a chat completion (`../translate/`), and
 * `count_tokens` asks the engine's tokenizer at the server root (`POST /tokenize`, vLLM and
 * SGLang), which only a route that lists `count_tokens` in its `endpoints:` is asked for; the
 * other families go to OpenAI's own paths (`video` also serves `GET /videos/{id}[/content]`).
 * `responses` goes to the upstream's own `/responses` when the route lists it in its
 * `endpoints:` (the upstream has the Responses API), else it is translated into a chat
 * completion (`../translate/responses-to-chat.ts`).
 */
export const UPSTREAM_PATH = {
  chat: '/chat/completions',
  completion: '/completions',
  embedding: '/embeddings',
  messages: '/chat/completions',
  count_tokens: '/tokenize',
  rerank: '/rerank',
  image_generation: '/images/generations',
  image_edit: '/images/edits',
  transcription: '/audio/transcriptions',
  translation: '/audio/translations',
  speech: '/audio/speech',
  video: '/videos',
  responses: '/responses',
} as const satisfies Readonly<Record<Endpoint, string>>;

/** An endpoint family this adapter serves. */
export type OpenAIEndpoint = keyof typeof UPSTREAM_PATH;

/**
 * What a route of this kind serves when it lists no `endpoints:`: all but the tokenizer (not
 * every OpenAI-style server has one). A server without, say, images answers those with its own
 * 404; a route that lists its `endpoints:` makes a multi-target alias answer such a request with
 * the capability error instead (seed 003).
 */
const DEFAULT_ENDPOINTS: readonly OpenAIEndpoint[] = ['chat', 'completion', 'embedding', 'messages', 'rerank', 'image_generation', 'image_edit', 'transcription', 'translation', 'speech', 'video', 'responses'];

/** The families `openai-families.ts` reads the answers of. */
const OTHER_FAMILIES: ReadonlySet<string> = new Set(['rerank', 'image_generation', 'image_edit', 'transcription', 'translation', 'speech', 'video']);

/** The engine's tokenizer path for a route's base path: `/tokenize` at the server root (`/v1` dropped). */
export function tokenizePath(basePath: string): string {
  return `${basePath.replace(/\/v1$/, '')}/tokenize`;
}

/**
 * The upstream body of one attempt, the commit headers it brings (the fields a translation
 * dropped, the source of a token count), or the refusal of a field that cannot be carried.
 */
function upstreamRequest(req: ClientRequest, upstreamModel: string, nativeEndpointId: string | null): { body: string; commitHeaders: ReadonlyArray<readonly [string, string]> | undefined } | AttemptEnd {
  if (req.upload || req.videoFetch) return { body: '', commitHeaders: undefined };
  if (req.endpoint === 'responses') return responsesRequest(req, upstreamModel, nativeEndpointId);
  if (req.endpoint !== 'messages' && req.endpoint !== 'count_tokens') return { body: upstreamBody(req, upstreamModel), commitHeaders: undefined };
  const t = messagesRequestToChat(req.body, upstreamModel);
  if (!t.ok) {
    // Anthropic's envelope has no `param`: the message names the field.
    const errorBody = JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: `${t.param}: ${t.message}`, param: t.param } });
    return { kind: 'failed', outcome: { kind: 'http_status', status: 400, errorClass: 'client_error', retryAfterMs: null }, errorBody };
  }
  const dropped = droppedParamsHeader(t.dropped);
  if (req.endpoint === 'count_tokens') {
    const c = t.body;
    const body: Record<string, unknown> = { model: upstreamModel, messages: c.messages, add_generation_prompt: true };
    if (c.tools !== undefined) body.tools = c.tools;
    return { body: JSON.stringify(body), commitHeaders: [[TOKEN_COUNT_HEADER, 'tokenizer']] };
  }
  return { body: JSON.stringify(t.body), commitHeaders: dropped ? [dropped] : undefined };
}

/**
 * The upstream body of a `/v1/responses` attempt. Its `input` is the whole conversation already
 * (`endpoints/responses/conversation.ts`), so a native upstream (`nativeEndpointId`) is sent it
 * without `previous_response_id`, with `store: false` (the gateway keeps the state) and with
 * only its own reasoning items (`inputForEndpoint`); any other is sent the chat translation, or
 * the attempt fails with a 400 naming the field it cannot carry.
 */
function responsesRequest(req: ClientRequest, upstreamModel: string, nativeEndpointId: string | null): { body: string; commitHeaders: ReadonlyArray<readonly [string, string]> | undefined } | AttemptEnd {
  if (nativeEndpointId !== null) {
    const body: Record<string, unknown> = { ...req.body, model: upstreamModel, store: false };
    delete body.previous_response_id;
    let dropped: ReturnType<typeof droppedParamsHeader> = null;
    if (Array.isArray(body.input)) {
      const own = inputForEndpoint(body.input, nativeEndpointId);
      body.input = own.input;
      dropped = droppedParamsHeader(own.dropped);
    }
    return { body: JSON.stringify(body), commitHeaders: dropped ? [dropped] : undefined };
  }
  const t = responsesRequestToChat(req.body, upstreamModel);
  if (!t.ok) {
    const errorBody = JSON.stringify({ error: { message: t.message, type: 'invalid_request_error', param: t.param, code: 'unsupported_on_route' } });
    return { kind: 'failed', outcome: { kind: 'http_status', status: 400, errorClass: 'client_error', retryAfterMs: null }, errorBody };
  }
  const dropped = droppedParamsHeader(t.dropped);
  return { body: JSON.stringify(t.body), commitHeaders: dropped ? [dropped] : undefined };
}

/** Whether `target` has the Responses API itself (its route lists `responses` in `endpoints:`). */
function hasNativeResponses(target: UpstreamTarget): boolean {
  return target.declaredEndpoints?.includes('responses') === true;
}

/**
 * The `openai_compat` adapter: the client's OpenAI body with the route's model name (and stream
 * usage always asked for), POSTed to `base_url` + the endpoint's OpenAI path, `Authorization:
 * Bearer` with the route's key; the response read as `startAttempt` describes.
 */
export const openaiCompatAdapter: UpstreamAdapter = {
  kind: 'openai_compat',
  endpoints: Object.keys(UPSTREAM_PATH),
  defaultEndpoints: DEFAULT_ENDPOINTS,
  startAttempt(target, req, ctx, hooks, end) {
    // The exchange dispatches only the families a route serves, a subset of `endpoints` above.
    const endpoint = req.endpoint as OpenAIEndpoint;
    const native = endpoint === 'responses' && hasNativeResponses(target);
    const up = upstreamRequest(req, target.upstreamModel, native ? target.endpointId : null);
    if ('kind' in up) {
      queueMicrotask(() => end(up));
      return { abort() {} };
    }
    return startAttempt(
      {
        pool: target.pool,
        path: endpoint === 'count_tokens' ? tokenizePath(target.basePath) : target.basePath + (req.videoFetch ? videoFetchPath(req.videoFetch) : endpoint === 'responses' && !native ? UPSTREAM_PATH.chat : UPSTREAM_PATH[endpoint]),
        method: req.videoFetch ? 'GET' : 'POST',
        upload: attemptUpload(req, target.upstreamModel),
        familyReq: OTHER_FAMILIES.has(endpoint) ? req : null,
        endpointId: target.endpointId,
        body: up.body,
        commitHeaders: up.commitHeaders,
        apiKey: ctx.apiKey ?? target.apiKey,
        requestId: ctx.requestId,
        stream: req.stream,
        endpoint,
        includeUsage: req.includeUsage,
        publicModel: publicModelOf(req),
        maxErrorBodyBytes: ctx.maxErrorBodyBytes,
        wire: req.wire,
        traceHeaders: ctx.traceHeaders ?? null,
        responses: endpoint === 'responses' ? { native, frame: responseFrame(req, target.endpointId), onResponse: ctx.onResponse, endpointId: target.endpointId } : undefined,
      },
      hooks,
      end,
    );
  },
};

/** The frame of a fresh response for `req` served by `endpointId`: a new id naming it (none for an auto model), the time now. */
function responseFrame(req: ClientRequest, endpointId: string): ResponseFrame {
  return { id: newResponseId(req.auto === undefined ? endpointId : null), createdAtSec: Math.floor(Date.now() / 1000), model: publicModelOf(req), request: req.body };
}

/** Thrown into undici by `AttemptHandle.abort` (never reported: the attempt already ended). */
class AttemptAborted extends Error {
  override readonly name = 'AttemptAborted';
}

/**
 * Starts one attempt on the pool with undici's dispatch API: no response stream object and no
 * AbortController per attempt, which a promise-and-stream request costs (with it the gateway
 * thread spent 256–282 µs per echo request, 162–197 µs without; `bench/gateway-overhead.ts` gives
 * the resulting max req/s). `end` is called exactly once, never synchronously from this call, and never
 * throws out of undici's callbacks: every failure is an `AttemptEnd`.
 */
export function startAttempt(spec: AttemptSpec, hooks: AttemptHooks, end: (e: AttemptEnd) => void): AttemptHandle {
  const upload = spec.upload ?? null;
  const get = spec.method === 'GET';
  const headers: Record<string, string> = {
    'content-type': upload ? upload.contentType : 'application/json',
    accept: spec.stream ? 'text/event-stream' : spec.familyReq ? '*/*' : 'application/json',
    'x-request-id': spec.requestId,
  };
  if (upload) headers['content-length'] = String(upload.lengthBytes);
  if (get) delete headers['content-type'];
  if (spec.apiKey) headers.authorization = `Bearer ${spec.apiKey}`;
  if (spec.traceHeaders) Object.assign(headers, spec.traceHeaders);
  const handler = new AttemptHandler(spec, hooks, end);
  try {
    spec.pool.dispatch({ method: get ? 'GET' : 'POST', path: spec.path, headers, body: get ? null : (upload?.body ?? spec.body) }, handler);
  } catch (e) {
    handler.onResponseError(null, e as Error);
  }
  handler.started();
  return handler;
}

/**
 * Runs one attempt until it ends, as a promise (the RouteWise prober's form). Never rejects.
 * @param signal aborts the upstream request; the attempt then ends as `aborted`.
 */
export function runAttempt(spec: AttemptSpec, signal: AbortSignal, hooks: AttemptHooks): Promise<AttemptEnd> {
  return new Promise((resolve) => {
    const handle = startAttempt(spec, hooks, resolve);
    if (signal.aborted) handle.abort();
    else signal.addEventListener('abort', () => handle.abort(), { once: true });
  });
}

const RESET: AttemptEnd = { kind: 'failed', outcome: { kind: 'transport', cause: 'reset' }, errorBody: null };

/** What the response body is being read as. */
const enum Mode {
  /** Before the response headers. */
  Waiting,
  /** A 2xx non-stream body, kept whole. */
  Body,
  /** A 2xx event stream, relayed. */
  Stream,
  /** An error status: its body, up to the size bound. */
  ErrorBody,
  /** Ended (or ending): later bytes are drained and ignored. */
  Over,
}

/** undici dispatch handler of one attempt; see `runAttempt` for what it reports. */
class AttemptHandler implements Dispatcher.DispatchHandler, AttemptHandle {
  readonly commitHeaders: ReadonlyArray<readonly [string, string]> | undefined;
  private controller: Dispatcher.DispatchController | null = null;
  private mode = Mode.Waiting;
  /** Abort asked before undici handed over its controller. */
  private abortAsked = false;
  private status = 0;
  private responseHeaders: Record<string, string | string[] | undefined> | null = null;
  private parts: Buffer[] = [];
  private size = 0;
  private relay: SseRelay | null = null;
  /** The Responses stream reader of a `/v1/responses` attempt (it holds the final response). */
  private responsesStream: ChatStreamToResponses | NativeResponsesStream | null = null;
  private out: RelayEvent[] = [];
  /** The client is congested: a delivery waits for it (reading is paused while the body is still coming). */
  private waiting = false;
  /** `done` went to the driver. */
  private streamed = false;
  /** The stream's body ended (undici's `onResponseEnd`). */
  private bodyEnded = false;
  /** Inside `startAttempt`: an end is deferred, so it never reaches the driver before it returns. */
  private starting = true;
  private deferred: AttemptEnd | null = null;

  constructor(
    private readonly spec: AttemptSpec,
    private readonly hooks: AttemptHooks,
    private readonly onEnd: (e: AttemptEnd) => void,
  ) {
    this.commitHeaders = spec.commitHeaders;
  }

  /** The attempt's end was reported (or is about to be, see `started`). */
  private get ended(): boolean {
    return this.mode === Mode.Over;
  }

  /** `startAttempt` returned: an end that came during it is reported now (on a microtask). */
  started(): void {
    this.starting = false;
    const e = this.deferred;
    if (e) {
      this.deferred = null;
      queueMicrotask(() => this.onEnd(e));
    }
  }

  abort(): void {
    if (this.ended) return;
    this.finish({ kind: 'aborted' });
    if (this.controller) this.controller.abort(new AttemptAborted('attempt aborted'));
    else this.abortAsked = true;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.abortAsked) controller.abort(new AttemptAborted('attempt aborted'));
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    if (statusCode < 200 || this.ended) return; // 1xx: the final status follows
    this.status = statusCode;
    if (statusCode >= 400) {
      this.mode = Mode.ErrorBody;
      this.responseHeaders = headers;
      return;
    }
    if (statusCode >= 300) return this.fail(controller, RESET);
    this.responseHeaders = headers; // an in-band error may come with a Retry-After here
    this.hooks.headers();
    if (this.ended) return; // the driver gave up on this attempt inside the hook
    if (!this.spec.stream) {
      this.mode = Mode.Body;
      return;
    }
    if (!String(headers['content-type'] ?? '').includes('text/event-stream')) {
      // A transcription upstream that does not stream: its whole answer becomes the events.
      if (this.spec.endpoint === 'transcription' && isJsonType(String(headers['content-type'] ?? ''))) {
        this.mode = Mode.Body;
        return;
      }
      return this.fail(controller, RESET);
    }
    this.mode = Mode.Stream;
    const spec = this.spec;
    const r = spec.responses;
    if (r) this.responsesStream = r.native ? new NativeResponsesStream(r.frame.id, spec.publicModel, r.frame.request, r.endpointId) : new ChatStreamToResponses(r.frame);
    this.relay = new SseRelay({
      endpoint: spec.endpoint === 'completion' ? 'completion' : 'chat',
      includeUsage: spec.includeUsage,
      model: spec.publicModel,
      wire: spec.wire,
      translator: this.responsesStream ?? (spec.endpoint === 'messages' ? new ChatStreamToMessages(spec.publicModel) : spec.endpoint === 'transcription' ? new TranscriptPassthrough() : undefined),
    });
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    switch (this.mode) {
      case Mode.Body:
        this.parts.push(chunk);
        return;
      case Mode.Stream:
        // After [DONE] the rest is drained quietly, so the connection can be reused.
        if (this.streamed || this.relay!.finished) return;
        this.relay!.push(chunk, this.out);
        if (!this.waiting) this.deliver(controller);
        return;
      case Mode.ErrorBody:
        this.parts.push(chunk);
        this.size += chunk.length;
        if (this.size >= this.spec.maxErrorBodyBytes) this.fail(controller, this.httpFailure());
        return;
      default:
        return;
    }
  }

  onResponseEnd(controller: Dispatcher.DispatchController): void {
    switch (this.mode) {
      case Mode.Body: {
        const req = this.spec.familyReq;
        if (req && this.spec.stream) {
          const events = transcriptEvents(Buffer.concat(this.parts).toString('utf8'), this.spec.wire);
          if (events === null) return this.finish(RESET);
          this.streamed = true;
          void this.hooks.events(events);
          return this.finish({ kind: 'streamed' });
        }
        if (req) {
          const contentType = String(this.responseHeaders?.['content-type'] ?? '');
          const data = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts);
          if (answersWithBytes(req) || !isJsonType(contentType)) return this.finish({ kind: 'body', text: '', usage: null, bytes: { data, contentType: contentType || 'application/octet-stream' } });
          return this.finish(familyBody(data.toString('utf8'), req, this.spec.publicModel, this.spec.endpointId ?? '') ?? RESET);
        }
        return this.finish(wholeBody(this.parts.length === 1 ? this.parts[0]!.toString('utf8') : Buffer.concat(this.parts).toString('utf8'), this.spec.publicModel, this.spec.endpoint, this.spec.responses));
      }
      case Mode.ErrorBody:
        return this.finish(this.httpFailure());
      case Mode.Stream:
        this.bodyEnded = true;
        if (!this.waiting) this.endStream(controller);
        return;
      case Mode.Waiting:
        // A response that ended before its headers were handled (a 3xx already failed).
        return this.finish(RESET);
      default:
        return;
    }
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    if (this.ended) return;
    // After `done`, a cut while draining the rest changes nothing for the client.
    this.finish(this.streamed ? { kind: 'streamed' } : { kind: 'failed', outcome: transportOutcome(error), errorBody: null });
  }

  /** Ends the attempt with `e` and drops the connection (the rest of the body is unwanted). */
  private fail(controller: Dispatcher.DispatchController, e: AttemptEnd): void {
    if (this.ended) return;
    this.finish(e);
    controller.abort(new AttemptAborted('attempt ended early'));
  }

  private finish(e: AttemptEnd): void {
    if (this.ended) return;
    this.mode = Mode.Over;
    this.parts = [];
    if (this.starting) this.deferred = e;
    else this.onEnd(e);
  }

  /**
   * Hands the relayed events to the driver. An upstream error or a malformed event ends the
   * attempt after the events before it; a congested client pauses reading until it drains.
   */
  private deliver(controller: Dispatcher.DispatchController): void {
    const relay = this.relay!;
    if (!this.streamed && relay.finishSeen && relay.usage !== null && !relay.finished) {
      // A finish reason and then the usage chunk (always asked for upstream): the answer is
      // whole, so the client is not kept waiting for a [DONE] a lenient server may never send.
      relay.complete(this.out);
    }
    if (this.out.length === 0) return;
    const batch = this.out;
    this.out = [];
    const last = batch[batch.length - 1]!;
    let failure: AttemptEnd | null = null;
    if (last.kind === 'upstream_error') {
      batch.pop();
      const retryAfterMs = last.retryAfterMs ?? retryAfterFromHeaders(this.responseHeaders ?? {});
      const errorClass = classifyUpstreamError({ status: last.status, code: last.code, type: last.type, message: last.message, retryAfterMs });
      // The body the driver may pass on: the upstream's own message, in OpenAI's error shape.
      const errorBody = JSON.stringify({ error: { message: last.message, type: last.type ?? 'upstream_error', code: last.code } });
      failure = { kind: 'failed', outcome: { kind: 'http_status', status: last.status, errorClass, retryAfterMs }, errorBody };
    } else if (last.kind === 'malformed') {
      batch.pop();
      failure = RESET;
    } else if (last.kind === 'done') {
      this.streamed = true;
      const final = this.responsesStream?.response ?? null;
      if (final !== null) this.spec.responses?.onResponse?.(final);
    }
    const wait = batch.length > 0 ? this.hooks.events(batch) : undefined;
    if (failure) return this.fail(controller, failure);
    if (!wait || this.ended) return;
    this.waiting = true;
    // Reading pauses only while the body is still coming. After its end the connection may
    // already serve another request, whose reading a pause or resume here would touch.
    const paused = !this.bodyEnded;
    if (paused) controller.pause();
    const go = (): void => {
      this.waiting = false;
      if (this.ended) return;
      if (paused) controller.resume();
      this.deliver(controller);
      if (this.bodyEnded && !this.waiting) this.endStream(controller);
    };
    wait.then(go, go);
  }

  /** The stream's body ended: what it means, with any last events. */
  private endStream(controller: Dispatcher.DispatchController): void {
    if (this.ended) return;
    if (this.streamed) return this.finish({ kind: 'streamed' });
    const relay = this.relay!;
    relay.end(this.out);
    this.deliver(controller);
    if (this.ended || this.waiting) return;
    if (this.streamed) return this.finish({ kind: 'streamed' });
    // The body ended without [DONE]. A finish reason means the answer is whole (lenient servers).
    if (relay.finishSeen) {
      relay.complete(this.out);
      this.deliver(controller);
      if (this.ended) return;
      return this.finish({ kind: 'streamed' });
    }
    this.finish(RESET);
  }

  /** The error status as an outcome: the (size-bounded) body, its error code, Retry-After. */
  private httpFailure(): AttemptEnd {
    const errorBody = Buffer.concat(this.parts).subarray(0, this.spec.maxErrorBodyBytes).toString('utf8');
    const failure = errorBodyFailure(this.status, errorBody, retryAfterFromHeaders(this.responseHeaders ?? {}));
    // A 404 on a video job's status or content means the job is unknown there (expired,
    // deleted): the caller's answer, not a route configuration error.
    if (this.status === 404 && this.spec.familyReq?.videoFetch && failure.kind === 'failed' && failure.outcome.kind === 'http_status') {
      return { ...failure, outcome: { ...failure.outcome, errorClass: 'client_error' } };
    }
    return failure;
  }
}

/**
 * An upstream error answer (HTTP status ≥ 400, or an in-band error given the status its type
 * stands for) as a failed attempt: the body's error code, type and message read from any of the
 * shapes upstreams use — OpenAI/vLLM `{"error":{…}}`, SGLang/FastAPI `{"message":…}` or
 * `{"detail":…}`, Anthropic `{"type":"error","error":{…}}`, plain text — and classified by the
 * core's outcome table; the raw body is kept for the client wire. Statuses above 599 read as 599.
 */
export function errorBodyFailure(status: number, errorBody: string, retryAfterMs: number | null): AttemptEnd {
  let code: string | null = null;
  let type: string | null = null;
  let message: string | null = null;
  try {
    const body = JSON.parse(errorBody) as { error?: unknown; message?: unknown; type?: unknown };
    const err = (typeof body.error === 'object' && body.error !== null ? body.error : body) as { code?: unknown; type?: unknown; message?: unknown; detail?: unknown };
    code = typeof err.code === 'string' ? err.code : null;
    type = typeof err.type === 'string' ? err.type : null;
    message = typeof err.message === 'string' ? err.message : typeof err.detail === 'string' ? err.detail : typeof body.error === 'string' ? body.error : null;
  } catch {
    message = errorBody; // plain text
  }
  const s = status > 599 ? 599 : status;
  return {
    kind: 'failed',
    outcome: { kind: 'http_status', status: s, errorClass: classifyUpstreamError({ status: s, code: code ?? type, type, message, retryAfterMs }), retryAfterMs },
    errorBody,
  };
}

/**
 * A whole 2xx body: the model name rewritten to the public one, and its usage; for `messages`
 * the chat completion as an Anthropic Message, for `responses` a Responses object (a native one
 * with the gateway's id, else the chat completion translated) told to `responses.onResponse`, for `count_tokens` the tokenizer's count as
 * `{"input_tokens"}`.
 */
function wholeBody(text: string, publicModel: string, endpoint: OpenAIEndpoint, responses: ResponsesAttempt | undefined): AttemptEnd {
  let obj: unknown;
  try {
    obj = JSON.parse(text);
  } catch {
    return RESET;
  }
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return RESET;
  const o = obj as Record<string, unknown>;
  if (endpoint === 'count_tokens') {
    if (typeof o.count !== 'number') return RESET;
    return { kind: 'body', text: JSON.stringify({ input_tokens: o.count }), usage: null };
  }
  if (responses) {
    const response = responses.native ? rewriteResponse(o, responses.frame.id, publicModel, responses.frame.request, responses.endpointId) : chatCompletionToResponse(o, responses.frame);
    responses.onResponse?.(response);
    return { kind: 'body', text: JSON.stringify(response), usage: responses.native ? usageFromResponses(o.usage) : toUsage(isRecordValue(o.usage) ? o.usage : {}) };
  }
  const usage = o.usage !== null && typeof o.usage === 'object' ? toUsage(o.usage as Record<string, unknown>) : null;
  if (endpoint === 'messages') return { kind: 'body', text: JSON.stringify(chatCompletionToMessage(o, publicModel)), usage };
  if (typeof o.model === 'string' && o.model !== publicModel) {
    o.model = publicModel;
    return { kind: 'body', text: JSON.stringify(o), usage };
  }
  return { kind: 'body', text, usage };
}

function isRecordValue(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
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

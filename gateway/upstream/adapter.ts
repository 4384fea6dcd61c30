/**
 * The upstream adapter seam: everything that depends on an upstream's wire protocol — the
 * request it is sent (path, body, auth headers), reading its response and stream into the core's
 * events (first output, frames with their first-token flag, a whole body, usage) and mapping its
 * failures onto the core's `Outcome`s — sits behind `UpstreamAdapter`. The exchange
 * (`server/exchange.ts`) only starts attempts, arms timers and relays what comes back; which
 * adapter serves a route is its `kind` in models.yaml (`upstream/adapters.ts` lists them).
 *
 * Two wire formats meet here: the upstream's (what the adapter sends and parses) and the
 * client's, which is the request's endpoint family's (`req.endpoint`, with its client wire
 * `req.wire`, `endpoints/client-wire.ts`). An adapter whose upstream speaks the family's format
 * relays; one that does not translates, in both directions:
 * - request: it builds the upstream body from `req.body` (the family's format, checked by the
 *   family) and its headers from the route's key and the family's forwarded client headers
 *   (`AttemptContext.clientHeaders`) — e.g. an Anthropic Messages body into an OpenAI chat body;
 *   a field it cannot carry is refused by the family's check or dropped and named in
 *   `AttemptHandle.commitHeaders`;
 * - stream: it parses the upstream's SSE into the core's events and writes each relayed event in
 *   the family's format, framed with `req.wire.streamEvent(name, data)`; the upstream's own end
 *   marker (`[DONE]`, `message_stop`) becomes `done`, and the exchange writes the family's
 *   terminator (`req.wire.streamEnd`) once the core agrees the attempt finished;
 * - whole body: `AttemptEnd.body` is in the family's format;
 * - failures: an error status or in-band error becomes an `Outcome` (the core's classification
 *   table decides what it means) plus the raw upstream error body; the exchange renders the
 *   client's error with the family's wire (`errorBody`, `streamError` after commit,
 *   `passThroughBody` for the caller's own mistakes). An adapter never writes an error to the
 *   client itself.
 * Which families an adapter can serve, translating or not, is its `endpoints` list.
 */
import type { Pool } from 'undici';
import type { Outcome, Usage } from '../../core/index.ts';
import type { ClientRequest, Endpoint } from '../request-body.ts';
import type { RelayEvent } from '../sse-relay.ts';

/** Callbacks of a streaming attempt. */
export interface AttemptHooks {
  /** The upstream answered 2xx (its headers are the attempt's first output). */
  headers(): void;
  /**
   * Frames and, last, `done` — never `upstream_error` / `malformed` (those end the attempt as a
   * failure). A frame's `text` is client bytes in the family's format, framed with
   * `req.wire.streamEvent`; `token` marks the first one that carries model output (the core's
   * commit point: frames before it are held, so a failure before it can fail over invisibly).
   * `done` carries the attempt's usage. Returns a promise when the client is congested; the
   * adapter stops reading upstream until it settles.
   */
  events(events: RelayEvent[]): void | Promise<void>;
}

/** How an attempt ended, as far as the adapter is concerned. */
export type AttemptEnd =
  /** A stream delivered its `done` through `hooks.events`. */
  | { kind: 'streamed' }
  /** A whole 2xx body (non-stream) in the family's format (translated if need be), model name rewritten, with its usage. */
  | {
      kind: 'body';
      text: string;
      usage: Usage | null;
      /**
       * A body that is not JSON text (speech audio, a video's content, a transcript as plain
       * text or subtitles): its bytes, sent as they are with `contentType`; `text` is then ''.
       */
      bytes?: { readonly data: Buffer; readonly contentType: string };
    }
  /**
   * The attempt failed. `errorBody` is the upstream's raw error body (an HTTP error status, or
   * the adapter's rendering of an in-band stream error; null for transport failures): its
   * `error.message` goes in an in-band error after commit, and `ClientWire.passThroughBody`
   * re-writes it for a request-scoped 4xx.
   */
  | { kind: 'failed'; outcome: Outcome; errorBody: string | null }
  /** The driver aborted it (cancel, deadline, client gone); report nothing. */
  | { kind: 'aborted' };

/** A running attempt. */
export interface AttemptHandle {
  /**
   * Headers the client's response carries if this attempt is committed (lower-case names; an
   * adapter that translates names the fields it dropped, e.g. `x-switchyard-dropped-params`), or
   * absent. Read once, at commit.
   */
  readonly commitHeaders?: ReadonlyArray<readonly [string, string]>;
  /**
   * Drops the upstream request (its connection is closed, so the upstream sees it) and ends the
   * attempt as `aborted` now, unless it already ended. Idempotent.
   */
  abort(): void;
}

/** One route as the adapter sees it: where it is and how it is called. */
export interface UpstreamTarget {
  readonly endpointId: string;
  /** undici pool of the route's origin. */
  readonly pool: Pool;
  /** Path prefix of the base_url (e.g. `/v1`), without a trailing slash. */
  readonly basePath: string;
  /** The route's key (sent as the adapter's auth header), or null. */
  readonly apiKey: string | null;
  /** `model` sent upstream: the route's provider_model_id, else the model id. */
  readonly upstreamModel: string;
  /**
   * The route's own `endpoints:` list, or null / absent when it lists none (it serves its kind's
   * defaults). An adapter reads from it which families the upstream has natively: an
   * `openai_compat` route that lists `responses` has the Responses API, one that does not gets
   * `/v1/responses` translated onto chat completions.
   */
  readonly declaredEndpoints?: readonly Endpoint[] | null;
}

/** What one attempt needs besides the target and the client's request. */
export interface AttemptContext {
  readonly requestId: string;
  /** Error bodies read from the upstream are cut at this many bytes. */
  readonly maxErrorBodyBytes: number;
  /**
   * The client headers the request's family forwards (`EndpointFamily.forwardHeaders`, lower-case
   * names), or null: the adapter decides which reach its upstream, translated or dropped.
   */
  readonly clientHeaders: Readonly<Record<string, string>> | null;
  /**
   * W3C trace-context headers (`traceparent`, and `tracestate` when the client sent one) naming
   * this attempt's span as the upstream's parent; null or absent when tracing is off. Adapters
   * send them as they are.
   */
  readonly traceHeaders?: Readonly<Record<string, string>> | null;
  /**
   * The upstream key of this attempt when the route has a key pool (the core chose it for the
   * caller's tier; seed 000): adapters send it instead of `UpstreamTarget.apiKey`. Absent or
   * null ⇒ the target's own key. Never logged.
   */
  readonly apiKey?: string | null;
  /**
   * Told the attempt's final response object in the family's format, once it is whole (a body,
   * or a stream's last event), for families whose responses the gateway keeps (`/v1/responses`
   * with `store`); absent otherwise. Must not throw.
   */
  readonly onResponse?: (response: Record<string, unknown>) => void;
}

/** One upstream protocol (a route `kind`). */
export interface UpstreamAdapter {
  /** The route `kind` in models.yaml that selects this adapter. */
  readonly kind: string;
  /**
   * The endpoint families this protocol can serve, natively or by translation; a route of this
   * kind serves these (unless its `endpoints:` names fewer).
   */
  readonly endpoints: readonly Endpoint[];
  /**
   * The families a route of this kind serves when its `endpoints:` lists none, when that is
   * fewer than `endpoints` (a family only some upstreams of the kind offer, such as an engine's
   * tokenizer); absent: all of `endpoints`.
   */
  readonly defaultEndpoints?: readonly Endpoint[];
  /**
   * Starts one attempt of `req` (the client's request in its family's format, `req.endpoint`
   * one of `endpoints`) on `target`. Streaming attempts report through `hooks`; `end` is called
   * exactly once, never synchronously from this call; failures are `AttemptEnd`s, never throws.
   */
  startAttempt(target: UpstreamTarget, req: ClientRequest, ctx: AttemptContext, hooks: AttemptHooks, end: (e: AttemptEnd) => void): AttemptHandle;
}

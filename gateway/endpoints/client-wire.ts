/**
 * How one endpoint family talks to its clients beyond a success body: the shape of an error
 * body, and the framing of a streamed response — each relayed event, the in-band error event
 * that ends a committed stream on failure (an upstream failure after commit, a drain cut, a
 * gateway fault), and the terminator of a stream that succeeded. OpenAI's wire
 * (`openai-wire.ts`) is the default; a family with another (Anthropic's Messages API:
 * `{"type":"error","error":{…}}` bodies, `event: message_start` … `event: message_stop`, an
 * in-band `event: error`) names its own in `EndpointFamily.wire`.
 *
 * Every error a client gets has a stable `code` from the gateway's catalogue (`errors.ts`), the
 * HTTP status it stands for, a message safe to show (no upstream host, key or endpoint id), the
 * request field at fault (`param`) when there is one, and a Retry-After in seconds when the
 * client should come back later; the wire decides how these are written. The HTTP status line and
 * the `Retry-After` header are the gateway's, the same for every family.
 *
 * The methods are called on the request's own path (`server/uws.ts`, `server/exchange.ts`) and
 * by the adapter's stream relay for every event, so they must be cheap and must not throw.
 */

/** One family's client-facing error bodies and stream framing. */
export interface ClientWire {
  /**
   * The JSON body of an error response (not streamed, or before a stream was committed).
   * @param code the gateway's stable error code (`errors.ts`).
   * @param message what the client is told.
   * @param param the request field at fault, or null.
   * @param status the HTTP status the error stands for (it sets the error's type).
   * @param retryAfterSec seconds until a retry may succeed (also sent as `Retry-After`), or null.
   */
  errorBody(code: string, message: string, param: string | null, status: number, retryAfterSec: number | null): string;
  /**
   * An upstream's error body for a mistake of the caller's (a request-scoped 4xx), re-written in
   * this wire's error shape with the upstream's message and type, or null when it is not an error
   * body this wire can read (the gateway then answers with `errorBody`). `upstreamBody` is the
   * upstream's raw body, in the upstream's wire format (size-bounded; null when there was none).
   */
  passThroughBody(upstreamBody: string | null): string | null;
  /**
   * The bytes of one relayed stream event: its SSE event name (null: none) and its data (JSON
   * text, possibly with newlines, each line becoming a `data:` line). Called by the adapter's
   * relay for each event it hands to the exchange (`upstream/adapter.ts`).
   */
  streamEvent(name: string | null, data: string): string;
  /**
   * The in-band error event that ends a committed stream (nothing follows it, not even
   * `streamEnd`). Arguments as for `errorBody`; `retryAfterSec` can only travel in-band here.
   */
  streamError(code: string, message: string, status: number, retryAfterSec: number | null): string;
  /** Written after the last relayed event of a stream that succeeded ('' when the grammar has no terminator). */
  readonly streamEnd: string;
}

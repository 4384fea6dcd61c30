/**
 * One API family the gateway serves (chat completions, text completions, embeddings, …): its
 * path, whether it streams, its own request checks, its prompt-size estimate, and its client
 * wire — how the gateway's errors and a streamed response look to its clients
 * (`client-wire.ts`; OpenAI's unless the family names another). The shared parse
 * (`request-body.ts`: JSON, `model`, `stream`, `max_tokens`) runs first, then the family's.
 * The families are registered in `endpoints/families.ts`.
 *
 * A success body and the events of a stream are the adapter's to write in the family's format
 * (`upstream/adapter.ts`): it translates when its upstream speaks another, and frames each event
 * with the family's `wire.streamEvent`.
 */
import type { Modality } from '../../core/index.ts';
import type { BodyProblem, ClientRequest, Endpoint } from '../request-body.ts';
import type { ClientWire } from './client-wire.ts';

/** What the routing core is told of a prompt. */
export interface PromptSize {
  /** Estimated prompt tokens. */
  readonly inputTokens: number;
  /** Input modalities beyond text. */
  readonly modalities: Modality[];
}

/** An inference API family. */
export interface EndpointFamily {
  /**
   * The family's id (lower-case letters, digits, `_`): what a route's `endpoints:` and an
   * adapter's `endpoints` list, what the core compares, and the request log's `api` column.
   */
  readonly endpoint: Endpoint;
  /** The public path, e.g. `/v1/chat/completions`. */
  readonly path: string;
  /** Whether `stream: true` is honoured (embeddings never stream). */
  readonly streams: boolean;
  /** The family's field checks, after the shared ones. @returns the first problem (400), or null. */
  check(body: Record<string, unknown>): BodyProblem | null;
  /** The prompt's size; called only on a body `check` accepted. */
  prompt(body: Record<string, unknown>): PromptSize;
  /**
   * Error bodies and stream framing of this family's responses, every one of them: the refusals
   * before routing (401, 400, 404, 413, 503), the core's errors, and in-band stream errors.
   * Absent: OpenAI's (`openai-wire.ts`).
   */
  readonly wire?: ClientWire;
  /**
   * A request header that carries the caller's key as-is (lower case; Anthropic's clients send
   * `x-api-key`), read when `Authorization` is absent and then treated as `Bearer <key>` (auth,
   * session affinity). Absent: `Authorization: Bearer` only.
   */
  readonly apiKeyHeader?: string;
  /**
   * Client request headers (lower-case names) this family hands to the adapter of every attempt
   * (`AttemptContext.clientHeaders`; Anthropic's `anthropic-version`, `anthropic-beta`): the
   * adapter decides what reaches its upstream. No other client header is ever forwarded.
   */
  readonly forwardHeaders?: readonly string[];
  /**
   * Ask the routing core for a single route (`RouteRequest.singleRoute`: a `router:` model picks
   * one and does not fall back; seed 000 for /v1/messages). Absent: the usual fallback.
   */
  readonly singleRoute?: boolean;
  /**
   * The family's own 200 answer when no route of the model can serve it (the core's
   * `endpoint_not_served`), e.g. count_tokens' estimate; absent: that 400 goes to the client.
   */
  answerWhenUnserved?(req: ClientRequest): { body: string; headers: ReadonlyArray<readonly [string, string]> };
  /**
   * Whether a `multipart/form-data` body is accepted (spooled to a temporary file,
   * `multipart-spool.ts`; its text fields are what `check` and `prompt` see). Absent: JSON only.
   */
  readonly multipart?: boolean;
  /**
   * On a multi-target alias every target must serve this family (seed 003, "支持的端点"): a
   * target whose route does not ends the request, non-retryable, with `status` when its kind
   * could serve the family (a missing capability) and `notProviderStatus` when it cannot (its
   * provider is not one for the family). Absent: such targets are skipped.
   */
  readonly targetMustServe?: { readonly status: 400 | 501; readonly notProviderStatus: 400 | 501 };
  /**
   * An attempt whose upstream answered with an error is never retried nor failed over (a paid
   * job may exist: video submits). Absent: the model's retry rules.
   */
  readonly noReplayAfterAnswer?: boolean;
  /**
   * When `least_latency` measures an attempt to the upstream's response headers rather than to
   * its first token / whole body (`RouteRequest.latencyAt: 'headers'`; seed 003): `always`
   * (speech: audio bytes are no model token), `stream` (only a streamed request: a streamed
   * transcription). Absent: never.
   */
  readonly latencyAtHeaders?: 'always' | 'stream';
}

/**
 * One API family the gateway serves (chat completions, text completions, embeddings, …): its
 * path, whether it streams, its own request checks and its prompt-size estimate. The shared
 * parse (`request-body.ts`: JSON, `model`, `stream`, `max_tokens`) runs first, then the family's.
 * The families are registered in `endpoints/families.ts`.
 */
import type { Modality } from '../../core/index.ts';
import type { BodyProblem, Endpoint } from '../request-body.ts';

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
}

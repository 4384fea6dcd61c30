/**
 * The inference API families the gateway serves, by `Endpoint`. Adding one is a file of its own
 * in `endpoints/` exporting an `EndpointFamily`, its name in `Endpoint` (`request-body.ts`), and
 * one line here; the HTTP layer registers every family's path from this table. An adapter serves
 * the families it lists in `UpstreamAdapter.endpoints` (openai_compat: the keys of its
 * `UPSTREAM_PATH`).
 */
import type { Endpoint } from '../request-body.ts';
import { chatCompletions } from './chat-completions.ts';
import { completions } from './completions.ts';
import type { EndpointFamily } from './endpoint-family.ts';
import { embeddings } from './embeddings.ts';

/** Every family, by endpoint. */
export const ENDPOINT_FAMILIES: Readonly<Record<Endpoint, EndpointFamily>> = {
  chat: chatCompletions,
  completion: completions,
  embedding: embeddings,
};

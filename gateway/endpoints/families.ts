/**
 * The registry of inference API families the gateway serves, by id (`EndpointFamily.endpoint`:
 * `chat`, `completion`, `embedding`, …). The routing core treats these ids as open data: it
 * only compares a request's family with a route's, so a new family needs no change there.
 *
 * Adding a family is a file of its own in `endpoints/` exporting an `EndpointFamily`, and one
 * `registerEndpointFamily` line at the end of this file; the HTTP layer mounts every registered
 * family's path when it creates its app (`server/uws.ts`), the configuration check accepts the
 * id in a route's `endpoints:`, and an adapter that lists the id serves it
 * (`upstream/adapters.ts`). See the gateway section of the README.
 *
 * Registration happens at module load, so every process and worker thread of the gateway sees
 * the same families; a family registered at run time (a test, an embedding program) must be
 * registered before the configuration is loaded and the gateway started, and reaches only this
 * thread (`server.workers: 1`).
 */
import { chatCompletions } from './chat-completions.ts';
import type { ClientWire } from './client-wire.ts';
import { completions } from './completions.ts';
import type { EndpointFamily } from './endpoint-family.ts';
import { embeddings } from './embeddings.ts';
import { countTokens } from './messages/count-tokens.ts';
import { messages } from './messages/messages.ts';
import { responses } from './responses/responses.ts';
import { openAiWire } from './openai-wire.ts';
import { rerank } from './rerank.ts';
import { imageEdits, imageGenerations } from './images.ts';
import { audioSpeech, audioTranscriptions, audioTranslations } from './audio.ts';
import { videos } from './videos.ts';

const FAMILIES = new Map<string, EndpointFamily>();

/** What an endpoint family id looks like (the same rule as a route's `endpoints:` entries). */
const FAMILY_ID = /^[a-z][a-z0-9_]*$/;

/**
 * Adds `family` to the gateway.
 * @throws Error when its id is not lower-case letters, digits and `_`, or its id or path is
 *   already registered (each names the clash).
 */
export function registerEndpointFamily(family: EndpointFamily): void {
  if (!FAMILY_ID.test(family.endpoint)) throw new Error(`endpoint family id '${family.endpoint}' must be lower-case letters, digits and _ (e.g. 'messages')`);
  if (FAMILIES.has(family.endpoint)) throw new Error(`endpoint family '${family.endpoint}' is registered twice; give the new family another id`);
  for (const f of FAMILIES.values()) {
    if (f.path === family.path) throw new Error(`endpoint family '${family.endpoint}' wants path ${family.path}, which '${f.endpoint}' already serves`);
  }
  FAMILIES.set(family.endpoint, family);
}

/** The family registered under `id`, or undefined. */
export function endpointFamily(id: string): EndpointFamily | undefined {
  return FAMILIES.get(id);
}

/** The client wire of `family`: its own, else OpenAI's (`openai-wire.ts`). */
export function wireOf(family: EndpointFamily): ClientWire {
  return family.wire ?? openAiWire;
}

/** Every registered family, in registration order. */
export function endpointFamilies(): readonly EndpointFamily[] {
  return [...FAMILIES.values()];
}

// The families, one line each.
registerEndpointFamily(chatCompletions);
registerEndpointFamily(completions);
registerEndpointFamily(embeddings);
registerEndpointFamily(messages);
registerEndpointFamily(countTokens);
registerEndpointFamily(rerank);
registerEndpointFamily(imageGenerations);
registerEndpointFamily(imageEdits);
registerEndpointFamily(audioTranscriptions);
registerEndpointFamily(audioTranslations);
registerEndpointFamily(audioSpeech);
registerEndpointFamily(videos);
registerEndpointFamily(responses);

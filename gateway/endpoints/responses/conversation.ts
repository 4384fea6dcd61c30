/**
 * The conversation of one `/v1/responses` request, before it is routed: a request naming a
 * `previous_response_id` gets the stored turns in front of its own `input` (so any upstream,
 * native or translated, is sent the whole context and the gateway keeps the state), and is
 * routed to the target that served that response first (`RouteRequest.preferEndpointId`, seed
 * 003); without one, a request whose `input` carries reasoning items a target wrote
 * (`encrypted_content` tagged with it, `response-ids.ts`) goes to the target of the last one
 * first. A request that may be stored (`store` not false) gets the function that stores its
 * response once it succeeded.
 */
import type { ClientRequest } from '../../request-body.ts';
import { endpointOfReasoning, endpointOfResponseId } from './response-ids.ts';
import type { ResponseStore } from './response-store.ts';

/** What routing and the exchange need from the conversation. */
export interface Conversation {
  /** The request with its whole conversation as `input` (the prompt size re-estimated). */
  readonly req: ClientRequest;
  /** The target that holds the conversation's context, or null. */
  readonly preferEndpointId: string | null;
  /**
   * Stores the request's final response (as the client saw it, served by `endpointId`), or null
   * when the request asked not to be stored. Its promise never rejects.
   */
  readonly keep: ((response: Record<string, unknown>, endpointId: string) => Promise<void>) | null;
}

/** A refusal of the conversation (400 naming the field). */
export interface ConversationProblem {
  readonly code: 'invalid_request';
  readonly message: string;
  readonly param: string;
}

/** A request's `input` as a list of items (a string is one user message). */
export function inputItems(input: unknown): unknown[] {
  if (typeof input === 'string') return [{ type: 'message', role: 'user', content: input }];
  return Array.isArray(input) ? input : [];
}

/**
 * The conversation of `req` (a checked Responses request) against `store`.
 * @param onStoreError told of a failed store write (the response was already delivered).
 * @param mayUseModel whether the caller may use a model (its key's model list); a stored response
 *   of a model the caller may not use is treated as not found, as `GET /v1/responses/{id}` does,
 *   so a key cannot continue, read or probe another key's conversation.
 * @returns the conversation, or a problem when `previous_response_id` names no stored response
 *   the caller may read. Rejects only when the store's read fails.
 */
export async function resolveConversation(
  req: ClientRequest,
  store: ResponseStore,
  onStoreError: (e: unknown) => void,
  mayUseModel: (model: string) => boolean = () => true,
): Promise<Conversation | ConversationProblem> {
  const body = req.body;
  let input = inputItems(body.input);
  let preferEndpointId: string | null = null;
  let next = req;
  const previousId = typeof body.previous_response_id === 'string' && body.previous_response_id.length > 0 ? body.previous_response_id : null;
  if (previousId !== null) {
    const prev = await store.get(previousId);
    const prevModel = prev?.response.model;
    if (prev === null || (typeof prevModel === 'string' && !mayUseModel(prevModel))) {
      return {
        code: 'invalid_request',
        param: 'previous_response_id',
        message: `Previous response with id '${previousId}' not found. It was never stored (store: false), has expired, or was made through another gateway; send the whole conversation as 'input' instead.`,
      };
    }
    const output = Array.isArray(prev.response.output) ? prev.response.output : [];
    input = [...prev.input, ...output, ...input];
    preferEndpointId = prev.endpointId ?? endpointOfResponseId(previousId);
    const expanded = { ...body, input };
    const size = req.family.prompt(expanded);
    next = { ...req, body: expanded, inputTokens: size.inputTokens, modalities: size.modalities };
  } else {
    preferEndpointId = endpointOfReasoning(input);
  }
  const conversation = input;
  const keep =
    body.store === false
      ? null
      : (response: Record<string, unknown>, endpointId: string): Promise<void> => {
          const id = response.id;
          if (typeof id !== 'string') return Promise.resolve();
          return store.put({ id, response, input: conversation, endpointId }).catch(onStoreError);
        };
  return { req: next, preferEndpointId, keep };
}

/** True when `r` is a refusal. */
export function isConversationProblem(r: Conversation | ConversationProblem): r is ConversationProblem {
  return 'code' in r;
}

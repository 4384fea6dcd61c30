/**
 * `POST /v1/responses`, OpenAI's Responses API (what the newer OpenAI clients speak): its
 * checks, prompt-size estimate and wire (`responses-wire.ts`). A route that lists `responses` in
 * its `endpoints:` has the API natively and gets the request as it is; others get it translated
 * onto chat completions (`../../translate/responses-to-chat.ts`). Conversation state —
 * `previous_response_id`, `store`, `GET /v1/responses/{id}` — is the gateway's own
 * (`conversation.ts`, `response-store.ts`).
 *
 * Refused here because no route could honour them (400 naming the field): `background: true`
 * (the gateway keeps no background jobs), `conversation` (the Conversations API; send
 * `previous_response_id`), `prompt` (prompt templates stored at OpenAI).
 */
import type { Modality } from '../../../core/index.ts';
import type { BodyProblem } from '../../request-body.ts';
import type { EndpointFamily } from '../endpoint-family.ts';
import { checkBoolean, checkNumber, invalid, jsonTypeOf, promptTokens } from '../openai-fields.ts';
import { responsesWire } from './responses-wire.ts';

/** The family id, as routes list it in `endpoints:`. */
export const RESPONSES = 'responses';

/** Fields the gateway cannot honour on any route, and what to do instead. */
const UNHONOURABLE: ReadonlyArray<readonly [string, (v: unknown) => boolean, string]> = [
  ['background', (v) => v === true, `'background' responses are not supported by this gateway; send the request without it (or with stream: true) and keep the connection open.`],
  ['conversation', (v) => v !== undefined && v !== null, `'conversation' (the Conversations API) is not supported by this gateway; chain turns with 'previous_response_id' instead.`],
  ['prompt', (v) => v !== undefined && v !== null, `'prompt' templates are not supported by this gateway; send the prompt's text as 'instructions' and 'input'.`],
];

function checkInput(input: unknown): BodyProblem | null {
  if (input === undefined || input === null) return invalid('input', `Missing required parameter: 'input'.`);
  if (typeof input === 'string') return null;
  if (!Array.isArray(input)) return invalid('input', `Invalid type for 'input': expected a string or an array of input items, but got ${jsonTypeOf(input)} instead.`);
  for (let i = 0; i < input.length; i++) {
    const item = input[i] as unknown;
    if (item === null || typeof item !== 'object' || Array.isArray(item)) {
      return invalid(`input[${i}]`, `Invalid type for 'input[${i}]': expected an input item object, but got ${jsonTypeOf(item)} instead.`);
    }
  }
  return null;
}

function checkString(body: Record<string, unknown>, field: string): BodyProblem | null {
  const v = body[field];
  if (v === undefined || v === null || typeof v === 'string') return null;
  return invalid(field, `Invalid type for '${field}': expected a string, but got ${jsonTypeOf(v)} instead.`);
}

/** Whether `input` carries an image part anywhere. */
function hasImage(input: unknown): boolean {
  if (!Array.isArray(input)) return false;
  return input.some((item) => {
    const c = (item as { content?: unknown } | null)?.content;
    return Array.isArray(c) && c.some((p) => (p as { type?: unknown } | null)?.type === 'input_image');
  });
}

/** The Responses family. */
export const responses: EndpointFamily = {
  endpoint: RESPONSES,
  path: '/v1/responses',
  streams: true,
  check(body) {
    for (const [field, bad, message] of UNHONOURABLE) if (bad(body[field])) return invalid(field, message);
    if (body.tools !== undefined && body.tools !== null && !Array.isArray(body.tools)) return invalid('tools', `Invalid type for 'tools': expected an array, but got ${jsonTypeOf(body.tools)} instead.`);
    return (
      checkInput(body.input) ??
      checkString(body, 'instructions') ??
      checkString(body, 'previous_response_id') ??
      checkBoolean(body, 'store') ??
      checkBoolean(body, 'parallel_tool_calls') ??
      checkNumber(body, 'max_output_tokens', { integer: true, min: 1 }) ??
      checkNumber(body, 'top_logprobs', { integer: true, min: 0, max: 20 }) ??
      checkNumber(body, 'temperature', { min: 0, max: 2 }) ??
      checkNumber(body, 'top_p', { min: 0, max: 1 })
    );
  },
  prompt(body) {
    // 4 UTF-8 bytes per token over the instructions and the input items as JSON text.
    const text = `${typeof body.instructions === 'string' ? body.instructions : ''}${typeof body.input === 'string' ? body.input : JSON.stringify(body.input ?? '')}`;
    const modalities: Modality[] = hasImage(body.input) ? ['image'] : [];
    return { inputTokens: promptTokens(text), modalities };
  },
  wire: responsesWire,
};

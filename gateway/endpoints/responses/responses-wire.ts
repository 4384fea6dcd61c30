/**
 * The client wire of `/v1/responses` (`../client-wire.ts`): OpenAI's error bodies (the official
 * clients raise their usual exceptions by status), stream events named by their `type`
 * (`event: response.output_text.delta` + `data:`), no terminator — a Responses stream ends after
 * its `response.completed` event, without `[DONE]` — and, for a failure after commit, the
 * Responses `error` event `{"type":"error","code","message","param"}` that ends the stream.
 * Source: OpenAI's API reference, "Streaming events".
 */
import { errorJson } from '../../errors.ts';
import type { ClientWire } from '../client-wire.ts';
import { passThroughBody, sseEvent } from '../openai-wire.ts';

/** The Responses wire. */
export const responsesWire: ClientWire = {
  errorBody: (code, message, param, status) => errorJson(code, message, param, status),
  passThroughBody,
  streamEvent: sseEvent,
  streamError: (code, message) => sseEvent('error', JSON.stringify({ type: 'error', code, message, param: null, sequence_number: 0 })),
  streamEnd: '',
};

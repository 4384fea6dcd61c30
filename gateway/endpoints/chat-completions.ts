/**
 * `POST /v1/chat/completions`: the family's own request checks and prompt-size estimate.
 * Every message must be an object with a `role` OpenAI knows (`param` names the message, as
 * OpenAI does: `messages.[2].role`) and a `content` that is a string, an array of content-part
 * objects, or null/absent; the sampling knobs are checked as `openai-fields.ts` says.
 * Prompt size: the core's `estimatePromptTokens` (4 UTF-8 bytes per token, 85 per image, 200 per
 * audio — seed 000, "prefill load").
 */
import { estimatePromptTokens, type Modality } from '../../core/index.ts';
import type { BodyProblem } from '../request-body.ts';
import type { EndpointFamily } from './endpoint-family.ts';
import { checkBoolean, checkNumber, checkSampling, invalid, jsonTypeOf } from './openai-fields.ts';

/** Message roles of the Chat Completions API. */
const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool', 'function']);

function checkMessages(messages: unknown): BodyProblem | null {
  if (!Array.isArray(messages) || messages.length === 0) return invalid('messages', `'messages' must be a non-empty array.`);
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i] as unknown;
    if (m === null || typeof m !== 'object' || Array.isArray(m)) {
      return invalid(`messages.[${i}]`, `Invalid type for 'messages.[${i}]': expected an object, but got ${jsonTypeOf(m)} instead.`);
    }
    const role = (m as { role?: unknown }).role;
    if (role === undefined || role === null) return invalid(`messages.[${i}].role`, `Missing required parameter: 'messages.[${i}].role'.`);
    if (typeof role !== 'string' || !ROLES.has(role)) {
      return invalid(`messages.[${i}].role`, `Invalid value for 'messages.[${i}].role': ${JSON.stringify(role)}. Supported values are: ${[...ROLES].map((r) => `'${r}'`).join(', ')}.`);
    }
    // A type check only (string, list of parts, or null/absent as for an assistant's tool
    // calls); what the parts say is the upstream's to judge.
    const content = (m as { content?: unknown }).content;
    if (content !== undefined && content !== null && typeof content !== 'string') {
      if (!Array.isArray(content)) {
        return invalid(`messages.[${i}].content`, `Invalid type for 'messages.[${i}].content': expected a string or an array of content parts (objects such as {"type": "text", "text": "…"}), but got ${jsonTypeOf(content)} instead.`);
      }
      for (let j = 0; j < content.length; j++) {
        const part = content[j] as unknown;
        if (part === null || typeof part !== 'object' || Array.isArray(part)) {
          return invalid(`messages.[${i}].content.[${j}]`, `Invalid type for 'messages.[${i}].content.[${j}]': expected a content part object such as {"type": "text", "text": "…"}, but got ${jsonTypeOf(part)} instead.`);
        }
      }
    }
  }
  return null;
}

/** The chat completions family. */
export const chatCompletions: EndpointFamily = {
  endpoint: 'chat',
  path: '/v1/chat/completions',
  streams: true,
  check(body) {
    return checkMessages(body.messages) ?? checkSampling(body) ?? checkBoolean(body, 'logprobs') ?? checkNumber(body, 'top_logprobs', { integer: true, min: 0, max: 20 });
  },
  prompt(body) {
    const est = estimatePromptTokens(body);
    const modalities: Modality[] = [];
    if (est.images > 0) modalities.push('image');
    if (est.audios > 0) modalities.push('audio');
    return { inputTokens: est.tokens, modalities };
  },
};

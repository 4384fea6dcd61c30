/**
 * The request checks of Anthropic's Messages API that the gateway applies before routing, with
 * Anthropic's `param` paths (`messages.0.role`) and wording close to its own validation errors;
 * the rest of the body is the upstream's (or the translating adapter's) to judge. Also the
 * prompt-size estimate of a Messages body: the core's estimate (4 UTF-8 bytes per token, 85 per
 * image) over the messages and tool definitions plus the system prompt (seed 000, "max offload
 * input": /v1/messages is estimated the same way, system prompt included).
 */
import { BYTES_PER_TOKEN, TOKENS_PER_AUDIO, TOKENS_PER_IMAGE, estimatePromptTokens, utf8ByteLength, type Modality } from '../../../core/index.ts';
import type { BodyProblem } from '../../request-body.ts';
import type { PromptSize } from '../endpoint-family.ts';
import { jsonTypeOf } from '../openai-fields.ts';

const ROLES = new Set(['user', 'assistant']);

function invalid(param: string, message: string): BodyProblem {
  return { code: 'invalid_request', message: `${param}: ${message}`, param };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function checkBlocks(blocks: unknown[], at: string): BodyProblem | null {
  for (let j = 0; j < blocks.length; j++) {
    const b = blocks[j];
    if (!isRecord(b)) return invalid(`${at}.${j}`, `Input should be a content block object such as {"type": "text", "text": "…"}, got ${jsonTypeOf(b)}`);
    if (typeof b.type !== 'string') return invalid(`${at}.${j}.type`, 'Field required');
    if (b.type === 'text' && typeof b.text !== 'string') return invalid(`${at}.${j}.text`, b.text === undefined ? 'Field required' : `Input should be a string, got ${jsonTypeOf(b.text)}`);
    if (b.type === 'tool_use') {
      if (typeof b.id !== 'string' || b.id.length === 0) return invalid(`${at}.${j}.id`, 'Field required (the tool call id the tool_result answers)');
      if (typeof b.name !== 'string' || b.name.length === 0) return invalid(`${at}.${j}.name`, 'Field required');
      if (!isRecord(b.input)) return invalid(`${at}.${j}.input`, `Input should be an object, got ${jsonTypeOf(b.input)}`);
    }
    if (b.type === 'tool_result' && (typeof b.tool_use_id !== 'string' || b.tool_use_id.length === 0)) return invalid(`${at}.${j}.tool_use_id`, 'Field required (the id of the tool_use block it answers)');
  }
  return null;
}

/** `messages`: a non-empty array of {role: user|assistant, content: string | blocks}. */
function checkMessages(messages: unknown): BodyProblem | null {
  if (messages === undefined || messages === null) return invalid('messages', 'Field required');
  if (!Array.isArray(messages)) return invalid('messages', `Input should be a valid list, got ${jsonTypeOf(messages)}`);
  if (messages.length === 0) return invalid('messages', 'at least one message is required');
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (!isRecord(m)) return invalid(`messages.${i}`, `Input should be an object with role and content, got ${jsonTypeOf(m)}`);
    if (m.role === undefined || m.role === null) return invalid(`messages.${i}.role`, 'Field required');
    if (typeof m.role !== 'string' || !ROLES.has(m.role)) return invalid(`messages.${i}.role`, `Input should be 'user' or 'assistant', got ${JSON.stringify(m.role)}`);
    const c = m.content;
    if (c === undefined || c === null) return invalid(`messages.${i}.content`, 'Field required');
    if (typeof c === 'string') continue;
    if (!Array.isArray(c)) return invalid(`messages.${i}.content`, `Input should be a string or a list of content blocks, got ${jsonTypeOf(c)}`);
    if (c.length === 0 && (m.role === 'user' || i < messages.length - 1)) return invalid(`messages.${i}.content`, 'at least one content block is required');
    const p = checkBlocks(c, `messages.${i}.content`);
    if (p) return p;
  }
  return null;
}

function checkNumber(body: Record<string, unknown>, field: string, min: number, max: number | null, integer = false): BodyProblem | null {
  const v = body[field];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isInteger(v))) return invalid(field, `Input should be ${integer ? 'an integer' : 'a number'}, got ${jsonTypeOf(v)}`);
  if (v < min || (max !== null && v > max)) return invalid(field, `Input should be ${max === null ? `at least ${min}` : `between ${min} and ${max}`}, got ${v}`);
  return null;
}

/** The shape checks both Messages families share (system, tools, tool_choice, thinking, metadata). */
function checkCommon(body: Record<string, unknown>): BodyProblem | null {
  const sys = body.system;
  if (sys !== undefined && sys !== null && typeof sys !== 'string') {
    if (!Array.isArray(sys)) return invalid('system', `Input should be a string or a list of text blocks, got ${jsonTypeOf(sys)}`);
    const p = checkBlocks(sys, 'system');
    if (p) return p;
  }
  if (body.tools !== undefined && body.tools !== null) {
    if (!Array.isArray(body.tools)) return invalid('tools', `Input should be a valid list, got ${jsonTypeOf(body.tools)}`);
    for (let i = 0; i < body.tools.length; i++) {
      const t = body.tools[i];
      if (!isRecord(t)) return invalid(`tools.${i}`, `Input should be a tool object, got ${jsonTypeOf(t)}`);
      if (typeof t.name !== 'string' || t.name.length === 0) return invalid(`tools.${i}.name`, 'Field required');
    }
  }
  for (const field of ['tool_choice', 'thinking', 'metadata'] as const) {
    const v = body[field];
    if (v !== undefined && v !== null && !isRecord(v)) return invalid(field, `Input should be an object, got ${jsonTypeOf(v)}`);
  }
  const tc = body.tool_choice;
  if (isRecord(tc)) {
    if (typeof tc.type !== 'string') return invalid('tool_choice.type', 'Field required');
    const tools = Array.isArray(body.tools) ? (body.tools as Array<{ name?: unknown }>) : [];
    if ((tc.type === 'any' || tc.type === 'tool') && tools.length === 0) return invalid('tool_choice', `tool_choice '${tc.type}' needs tools; define the tools or drop tool_choice`);
    if (tc.type === 'tool' && !tools.some((t) => t.name === tc.name)) return invalid('tool_choice.name', `no tool named ${JSON.stringify(tc.name)} is defined in tools`);
  }
  return checkMessages(body.messages);
}

/** `POST /v1/messages`: `max_tokens` is required, sampling knobs in Anthropic's ranges, `stop_sequences` strings. */
export function checkMessagesRequest(body: Record<string, unknown>): BodyProblem | null {
  if (body.max_tokens === undefined || body.max_tokens === null) return invalid('max_tokens', 'Field required');
  const seq = body.stop_sequences;
  if (seq !== undefined && seq !== null && (!Array.isArray(seq) || seq.some((s) => typeof s !== 'string'))) return invalid('stop_sequences', 'Input should be a list of strings');
  return checkNumber(body, 'temperature', 0, 1) ?? checkNumber(body, 'top_p', 0, 1) ?? checkNumber(body, 'top_k', 0, null, true) ?? checkCommon(body);
}

/** `POST /v1/messages/count_tokens`: the message checks only (no `max_tokens`). */
export function checkCountTokensRequest(body: Record<string, unknown>): BodyProblem | null {
  return checkCommon(body);
}

/** UTF-8 bytes of a `system` prompt: a string, or its text blocks' text. */
function systemBytes(sys: unknown): number {
  if (typeof sys === 'string') return utf8ByteLength(sys);
  if (!Array.isArray(sys)) return 0;
  let n = 0;
  for (const b of sys) if (isRecord(b) && typeof b.text === 'string') n += utf8ByteLength(b.text);
  return n;
}

/** The prompt size of a checked Messages body (see the module doc). */
export function messagesPromptSize(body: Record<string, unknown>): PromptSize {
  const est = estimatePromptTokens({ messages: body.messages, tools: body.tools });
  const modalities: Modality[] = est.images > 0 ? ['image'] : [];
  const inputTokens = Math.ceil((est.textBytes + systemBytes(body.system)) / BYTES_PER_TOKEN) + TOKENS_PER_IMAGE * est.images + TOKENS_PER_AUDIO * est.audios;
  return { inputTokens, modalities };
}

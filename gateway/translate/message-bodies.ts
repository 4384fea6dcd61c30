/**
 * Non-streamed response bodies between the two formats: an OpenAI chat completion ↔ an
 * Anthropic Message. Pure; only choice 0 of a chat completion is read (the request translators
 * never ask for more). Reasoning text (`reasoning_content`, or `reasoning` as some servers name
 * it) maps to a thinking block with an empty signature — OpenAI-compatible servers do not sign
 * their reasoning.
 */
import { isRecord, nonEmpty, str } from './json-values.ts';
import { finishFromStopReason, stopReasonFromFinish } from './stop-reasons.ts';
import { anthropicUsageFromOpenAi, openAiUsageFromAnthropic } from './usage.ts';

/**
 * An OpenAI chat completion → an Anthropic Message named `model`: id `msg_<upstream id>`;
 * content blocks in the order thinking (from reasoning text), text (content then any refusal),
 * then one `tool_use` per tool
 * call (arguments parsed; text that is not a JSON object becomes `{}`); stop_reason from
 * finish_reason; stop_sequence the matched stop string where the upstream names it (vLLM's
 * `stop_reason`), else null (OpenAI does not say); usage in
 * Anthropic's shape.
 */
export function chatCompletionToMessage(chat: Record<string, unknown>, model: string): Record<string, unknown> {
  const choices = Array.isArray(chat.choices) ? chat.choices : [];
  const choice = choices.find((c) => isRecord(c) && (c.index === 0 || c.index === undefined)) ?? choices[0];
  const c = isRecord(choice) ? choice : {};
  const message = isRecord(c.message) ? c.message : {};
  const content: Record<string, unknown>[] = [];
  const reasoning = nonEmpty(message.reasoning_content) ? message.reasoning_content : message.reasoning;
  if (nonEmpty(reasoning)) content.push({ type: 'thinking', thinking: reasoning, signature: '' });
  // A refusal is model output too; Anthropic has no separate field for it, so it reads as text.
  const text = str(message.content) + str(message.refusal);
  if (text !== '') content.push({ type: 'text', text });
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  for (const call of calls) {
    if (!isRecord(call)) continue;
    const fn = isRecord(call.function) ? call.function : {};
    content.push({ type: 'tool_use', id: str(call.id), name: str(fn.name), input: parseToolInput(fn.arguments) });
  }
  // vLLM names the stop string that matched in `stop_reason` (an integer is a stop token id).
  const matched = typeof c.stop_reason === 'string' && stopReasonFromFinish(c.finish_reason) === 'end_turn' ? c.stop_reason : null;
  return {
    id: `msg_${str(chat.id)}`,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: matched !== null ? 'stop_sequence' : stopReasonFromFinish(c.finish_reason),
    stop_sequence: matched,
    usage: anthropicUsageFromOpenAi(chat.usage),
  };
}

/** Tool-call arguments (JSON text) as an input object; `{}` when empty, unparseable or not an object. */
export function parseToolInput(args: unknown): Record<string, unknown> {
  if (!nonEmpty(args)) return {};
  try {
    const v: unknown = JSON.parse(args);
    return isRecord(v) ? v : {};
  } catch {
    return {};
  }
}

/**
 * An Anthropic Message → an OpenAI chat completion named `model`, created at `createdSec`
 * (Unix seconds, supplied by the caller): id `chatcmpl-<message id>`; one choice whose message
 * has the text blocks joined as `content` (null when there are none), thinking blocks joined as
 * `reasoning_content` (present only when non-empty), and `tool_use` blocks as `tool_calls`
 * (arguments = the input as JSON text); finish_reason from stop_reason; usage in OpenAI's shape.
 */
export function messageToChatCompletion(msg: Record<string, unknown>, model: string, createdSec: number): Record<string, unknown> {
  const blocks = Array.isArray(msg.content) ? msg.content : [];
  let text = '';
  let thinking = '';
  const toolCalls: Record<string, unknown>[] = [];
  for (const b of blocks) {
    if (!isRecord(b)) continue;
    if (b.type === 'text') text += str(b.text);
    else if (b.type === 'thinking') thinking += str(b.thinking);
    else if (b.type === 'tool_use') {
      toolCalls.push({ id: str(b.id), type: 'function', function: { name: str(b.name), arguments: JSON.stringify(b.input ?? {}) } });
    }
  }
  const message: Record<string, unknown> = { role: 'assistant', content: text === '' ? null : text };
  if (thinking !== '') message.reasoning_content = thinking;
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  return {
    id: `chatcmpl-${str(msg.id)}`,
    object: 'chat.completion',
    created: createdSec,
    model,
    choices: [{ index: 0, message, finish_reason: finishFromStopReason(msg.stop_reason), logprobs: null }],
    usage: openAiUsageFromAnthropic(msg.usage),
  };
}

/**
 * Why generation stopped, between OpenAI's `finish_reason` and Anthropic's `stop_reason`. One
 * table each way so the body and stream translators agree.
 */

/** OpenAI finish_reason → Anthropic stop_reason; anything else (or none) reads as `end_turn`. */
const TO_ANTHROPIC: Readonly<Record<string, string>> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  content_filter: 'refusal',
};

/** Anthropic stop_reason → OpenAI finish_reason; anything else (or none) reads as `stop`. */
const TO_OPENAI: Readonly<Record<string, string>> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
  // A paused server-tool turn has no OpenAI counterpart; the turn ended, so `stop`.
  pause_turn: 'stop',
};

/** Anthropic's stop_reason for an OpenAI finish_reason (stop→end_turn, length→max_tokens, …). */
export function stopReasonFromFinish(finish: unknown): string {
  return (typeof finish === 'string' ? TO_ANTHROPIC[finish] : undefined) ?? 'end_turn';
}

/** OpenAI's finish_reason for an Anthropic stop_reason (end_turn→stop, tool_use→tool_calls, …). */
export function finishFromStopReason(stop: unknown): string {
  return (typeof stop === 'string' ? TO_OPENAI[stop] : undefined) ?? 'stop';
}

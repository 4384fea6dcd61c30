/**
 * An OpenAI chat-completion chunk stream → Anthropic Messages SSE events, for an Anthropic
 * client served by an OpenAI-compatible upstream. Pure and incremental: feed each parsed chunk
 * to `chunk`, then call `end` once the upstream sent `[DONE]`.
 *
 * Events follow Anthropic's streaming order: `message_start` with the first chunk (usage zero,
 * since OpenAI reports it only at the end), then per content block `content_block_start`,
 * deltas and `content_block_stop` — a thinking block for reasoning deltas (`reasoning_content`,
 * or `reasoning` as some servers name it), a text block for content and refusal text, and a `tool_use` block per
 * tool call (a new tool-call index closes the block before it). `end` closes the open block and
 * sends `message_delta` with the stop reason and the full usage of the last usage chunk.
 * `message_stop` is not produced: the gateway writes that terminator itself. Only choice 0 is
 * translated (the request translator never asks for more).
 */
import type { Usage } from '../../core/index.ts';
import { isRecord, nonEmpty, str } from './json-values.ts';
import { stopReasonFromFinish } from './stop-reasons.ts';
import type { TranslatedEvent } from './translated.ts';
import { anthropicUsageFromOpenAi, usageFromAnthropic } from './usage.ts';

type OpenBlock = { kind: 'thinking' | 'text'; index: number } | { kind: 'tool'; index: number; toolIndex: number };

/** One upstream stream's translation. */
export class ChatStreamToMessages {
  private started = false;
  private ended = false;
  private open: OpenBlock | null = null;
  private nextIndex = 0;
  private finishReason: unknown = null;
  private lastUsage: Record<string, unknown> | null = null;
  private coreUsage: Usage | null = null;

  /** `model` is the name shown to the client in `message_start`. */
  constructor(private readonly model: string) {}

  /** The core's usage from the last usage chunk seen; null until one arrives. */
  get usage(): Usage | null {
    return this.coreUsage;
  }

  /**
   * Translates one parsed `chat.completion.chunk` (including the final usage-only chunk with
   * `choices: []`) into the Anthropic events it completes, in order.
   */
  chunk(chunk: Record<string, unknown>): TranslatedEvent[] {
    const out: TranslatedEvent[] = [];
    if (this.ended) return out;
    this.start(out, str(chunk.id));
    if (isRecord(chunk.usage)) {
      this.lastUsage = chunk.usage;
      this.coreUsage = usageFromAnthropic(anthropicUsageFromOpenAi(chunk.usage));
    }
    const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
    const choice = choices.find((c) => isRecord(c) && (c.index === 0 || c.index === undefined));
    if (!isRecord(choice)) return out;
    const delta = isRecord(choice.delta) ? choice.delta : {};
    const reasoning = nonEmpty(delta.reasoning_content) ? delta.reasoning_content : delta.reasoning;
    if (nonEmpty(reasoning)) {
      this.ensureBlock(out, 'thinking');
      this.delta(out, { type: 'thinking_delta', thinking: reasoning }, true);
    }
    // A refusal is model output too; it streams as text, as the body translation reads it.
    for (const text of [delta.content, delta.refusal]) {
      if (!nonEmpty(text)) continue;
      this.ensureBlock(out, 'text');
      this.delta(out, { type: 'text_delta', text }, true);
    }
    if (Array.isArray(delta.tool_calls)) {
      for (const tc of delta.tool_calls) if (isRecord(tc)) this.toolCall(out, tc);
    }
    if (choice.finish_reason !== null && choice.finish_reason !== undefined) this.finishReason = choice.finish_reason;
    return out;
  }

  /**
   * The upstream stream ended: closes the open block and sends `message_delta` with the stop
   * reason (from the last finish_reason; `end_turn` when none came) and the Anthropic usage of
   * the last usage chunk (zeros when none came). Later calls return nothing.
   */
  end(): TranslatedEvent[] {
    const out: TranslatedEvent[] = [];
    if (this.ended) return out;
    this.start(out, '');
    this.close(out);
    this.ended = true;
    out.push(event('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: stopReasonFromFinish(this.finishReason), stop_sequence: null },
      usage: anthropicUsageFromOpenAi(this.lastUsage),
    }, false));
    return out;
  }

  private start(out: TranslatedEvent[], id: string): void {
    if (this.started) return;
    this.started = true;
    out.push(event('message_start', {
      type: 'message_start',
      message: {
        id: `msg_${id}`, type: 'message', role: 'assistant', model: this.model, content: [],
        stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 },
      },
    }, false));
  }

  private ensureBlock(out: TranslatedEvent[], kind: 'thinking' | 'text'): void {
    if (this.open?.kind === kind) return;
    this.close(out);
    const index = this.nextIndex++;
    this.open = { kind, index };
    const block = kind === 'text' ? { type: 'text', text: '' } : { type: 'thinking', thinking: '', signature: '' };
    out.push(event('content_block_start', { type: 'content_block_start', index, content_block: block }, false));
  }

  /** A tool-call delta: same index as the open tool block appends; otherwise a new block. */
  private toolCall(out: TranslatedEvent[], tc: Record<string, unknown>): void {
    const toolIndex = typeof tc.index === 'number' ? tc.index : 0;
    const fn = isRecord(tc.function) ? tc.function : {};
    if (!(this.open?.kind === 'tool' && this.open.toolIndex === toolIndex)) {
      this.close(out);
      const index = this.nextIndex++;
      this.open = { kind: 'tool', index, toolIndex };
      out.push(event('content_block_start', {
        type: 'content_block_start', index,
        content_block: { type: 'tool_use', id: str(tc.id), name: str(fn.name), input: {} },
      }, true));
    }
    if (nonEmpty(fn.arguments)) this.delta(out, { type: 'input_json_delta', partial_json: fn.arguments }, true);
  }

  private delta(out: TranslatedEvent[], delta: Record<string, unknown>, token: boolean): void {
    out.push(event('content_block_delta', { type: 'content_block_delta', index: this.open?.index ?? 0, delta }, token));
  }

  private close(out: TranslatedEvent[]): void {
    if (this.open === null) return;
    out.push(event('content_block_stop', { type: 'content_block_stop', index: this.open.index }, false));
    this.open = null;
  }
}

function event(name: string, data: Record<string, unknown>, token: boolean): TranslatedEvent {
  return { name, data: JSON.stringify(data), token };
}

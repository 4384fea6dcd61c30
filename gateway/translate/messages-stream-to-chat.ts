/**
 * An Anthropic Messages SSE stream → OpenAI chat-completion chunks, for an OpenAI client served
 * by Anthropic's API. Pure and incremental: feed each event's name and parsed data to `event`.
 * `error` events are not passed here — the caller turns them into its own error handling.
 *
 * Each chunk is `{id: chatcmpl-<message id>, object: chat.completion.chunk, created, model,
 * choices: [{index: 0, delta, finish_reason, logprobs: null}]}`:
 * - `message_start` → the role chunk (`{role: assistant, content: ''}`);
 * - `text_delta` → `content`; `thinking_delta` → `reasoning_content` (signatures are dropped:
 *   OpenAI clients have nowhere to keep them);
 * - a `tool_use` block start → a tool call with id, name and empty arguments, at index k
 *   (tool blocks counted from 0); its `input_json_delta`s → argument pieces at the same index;
 * - `message_delta` → the finish chunk and, when the client asked for usage, a usage chunk
 *   (`choices: []`); `message_stop` sets `done` and sends nothing (the gateway writes `[DONE]`).
 * Usage accumulates `message_start`'s then `message_delta`'s counts (later values replace
 * earlier ones), as Anthropic's SDK does.
 */
import type { Usage } from '../../core/index.ts';
import { isRecord, nonEmpty, str } from './json-values.ts';
import { finishFromStopReason } from './stop-reasons.ts';
import type { TranslatedEvent } from './translated.ts';
import { openAiUsageFromAnthropic, usageFromAnthropic } from './usage.ts';

/** Options of one stream's translation. */
export interface MessagesStreamToChatOptions {
  /** Model name shown to the client. */
  model: string;
  /** The client asked for usage (`stream_options.include_usage`): send the usage chunk. */
  includeUsage: boolean;
  /** The chunks' `created`, Unix seconds (supplied by the caller; the module reads no clock). */
  createdSec: number;
}

/** One upstream stream's translation. */
export class MessagesStreamToChat {
  private id = 'chatcmpl-';
  private isDone = false;
  private toolCount = 0;
  /** Anthropic content-block index → OpenAI tool-call index, for tool_use blocks. */
  private readonly toolIndexOf = new Map<number, number>();
  private readonly anthropicUsage: Record<string, unknown> = {};
  private coreUsage: Usage | null = null;

  /** `opts`: the model name to show, whether to send the usage chunk, and the chunks' `created`. */
  constructor(private readonly opts: MessagesStreamToChatOptions) {}

  /** True once `message_stop` arrived. */
  get done(): boolean {
    return this.isDone;
  }

  /** The core's usage accumulated so far; null until `message_start` or `message_delta` carried some. */
  get usage(): Usage | null {
    return this.coreUsage;
  }

  /** Translates one Anthropic event (SSE event name and parsed data) into the chunks it yields. */
  event(name: string, data: Record<string, unknown>): TranslatedEvent[] {
    switch (name) {
      case 'message_start': {
        const msg = isRecord(data.message) ? data.message : {};
        this.id = `chatcmpl-${str(msg.id)}`;
        this.addUsage(msg.usage);
        return [this.chunk({ role: 'assistant', content: '' }, null, false)];
      }
      case 'content_block_start': {
        const block = isRecord(data.content_block) ? data.content_block : {};
        if (block.type === 'tool_use') {
          const k = this.toolCount++;
          if (typeof data.index === 'number') this.toolIndexOf.set(data.index, k);
          return [this.chunk({ tool_calls: [{ index: k, id: str(block.id), type: 'function', function: { name: str(block.name), arguments: '' } }] }, null, true)];
        }
        if (block.type === 'text' && nonEmpty(block.text)) return [this.chunk({ content: block.text }, null, true)];
        if (block.type === 'thinking' && nonEmpty(block.thinking)) return [this.chunk({ reasoning_content: block.thinking }, null, true)];
        return [];
      }
      case 'content_block_delta':
        return this.blockDelta(data);
      case 'message_delta': {
        this.addUsage(data.usage);
        const delta = isRecord(data.delta) ? data.delta : {};
        const out = [this.chunk({}, finishFromStopReason(delta.stop_reason), false)];
        if (this.opts.includeUsage) {
          out.push({ name: null, data: JSON.stringify(this.frame([], openAiUsageFromAnthropic(this.anthropicUsage))), token: false });
        }
        return out;
      }
      case 'message_stop':
        this.isDone = true;
        return [];
      default:
        // ping, content_block_stop and events unknown to this version carry nothing to relay.
        return [];
    }
  }

  private blockDelta(data: Record<string, unknown>): TranslatedEvent[] {
    const delta = isRecord(data.delta) ? data.delta : {};
    if (delta.type === 'text_delta' && nonEmpty(delta.text)) return [this.chunk({ content: delta.text }, null, true)];
    if (delta.type === 'thinking_delta' && nonEmpty(delta.thinking)) return [this.chunk({ reasoning_content: delta.thinking }, null, true)];
    if (delta.type === 'input_json_delta' && nonEmpty(delta.partial_json)) {
      const k = typeof data.index === 'number' ? this.toolIndexOf.get(data.index) : undefined;
      if (k === undefined) return [];
      return [this.chunk({ tool_calls: [{ index: k, function: { arguments: delta.partial_json } }] }, null, true)];
    }
    return [];
  }

  /** Later counts replace earlier ones key by key; null and missing values leave them be. */
  private addUsage(u: unknown): void {
    if (!isRecord(u)) return;
    for (const [key, value] of Object.entries(u)) if (typeof value === 'number') this.anthropicUsage[key] = value;
    this.coreUsage = usageFromAnthropic(this.anthropicUsage);
  }

  private chunk(delta: Record<string, unknown>, finish: string | null, token: boolean): TranslatedEvent {
    return { name: null, data: JSON.stringify(this.frame([{ index: 0, delta, finish_reason: finish, logprobs: null }], null)), token };
  }

  /** A chunk object; with includeUsage every chunk has `usage` (null but on the last), as OpenAI sends. */
  private frame(choices: unknown[], usage: Record<string, unknown> | null): Record<string, unknown> {
    const f: Record<string, unknown> = { id: this.id, object: 'chat.completion.chunk', created: this.opts.createdSec, model: this.opts.model, choices };
    if (this.opts.includeUsage) f.usage = usage;
    return f;
  }
}

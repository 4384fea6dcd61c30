/**
 * An OpenAI chat-completion chunk stream → Anthropic Messages SSE events, for an Anthropic
 * client served by an OpenAI-compatible upstream. Pure and incremental: feed each parsed chunk
 * to `chunk`, then call `end` once the upstream sent `[DONE]`.
 *
 * Events follow Anthropic's streaming order: `message_start` with the first chunk (usage zero,
 * since OpenAI reports it only at the end), then per content block `content_block_start`,
 * deltas and `content_block_stop` — a thinking block for reasoning deltas (`reasoning_content`,
 * or `reasoning` as some servers name it), a text block for content and refusal text, and a
 * `tool_use` block per tool call. OpenAI streams parallel tool calls interleaved (pieces of call 0
 * after call 1 began) and some servers send several calls under one index with distinct ids,
 * while Anthropic's blocks follow one another, so tool calls are gathered (a new id or index is
 * a new call) and sent whole at the end, each as its block with one `input_json_delta`. `end`
 * closes the open block, sends the tool blocks, then `message_delta` with the stop reason, the
 * matched stop sequence when the upstream names it (vLLM's `stop_reason`) and the full usage of
 * the last usage chunk.
 * `message_stop` is not produced: the gateway writes that terminator itself. Only choice 0 is
 * translated (the request translator never asks for more).
 */
import type { Usage } from '../../core/index.ts';
import { isRecord, nonEmpty, str } from './json-values.ts';
import { stopReasonFromFinish } from './stop-reasons.ts';
import type { TranslatedEvent } from './translated.ts';
import { anthropicUsageFromOpenAi, usageFromAnthropic } from './usage.ts';

type OpenBlock = { kind: 'thinking' | 'text'; index: number };

/** A tool call being gathered. */
interface ToolCall {
  id: string;
  name: string;
  args: string;
}

/** One upstream stream's translation. */
export class ChatStreamToMessages {
  private started = false;
  private ended = false;
  private open: OpenBlock | null = null;
  private nextIndex = 0;
  private finishReason: unknown = null;
  private lastUsage: Record<string, unknown> | null = null;
  private coreUsage: Usage | null = null;
  private stopSequence: string | null = null;
  /** Tool calls in order of first appearance, and the one each OpenAI index points at now. */
  private readonly calls: ToolCall[] = [];
  private readonly callAt = new Map<number, ToolCall>();

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
    // vLLM names the stop string that matched in `stop_reason` (an integer is a stop token id).
    if (typeof choice.stop_reason === 'string') this.stopSequence = choice.stop_reason;
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
    for (const c of this.calls) {
      const index = this.nextIndex++;
      out.push(event('content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: c.id.length > 0 ? c.id : `toolu_${index}`, name: c.name, input: {} } }, true));
      if (c.args.length > 0) out.push(event('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: c.args } }, true));
      out.push(event('content_block_stop', { type: 'content_block_stop', index }, false));
    }
    this.ended = true;
    const stop = stopReasonFromFinish(this.finishReason);
    const stopSequence = stop === 'end_turn' && this.stopSequence !== null ? this.stopSequence : null;
    out.push(event('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: stopSequence !== null ? 'stop_sequence' : stop, stop_sequence: stopSequence },
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

  /** A tool-call delta: a new index, or a new id at a known index, is a new call; pieces append to their call. */
  private toolCall(_out: TranslatedEvent[], tc: Record<string, unknown>): void {
    const toolIndex = typeof tc.index === 'number' ? tc.index : 0;
    const fn = isRecord(tc.function) ? tc.function : {};
    const id = str(tc.id);
    let call = this.callAt.get(toolIndex);
    if (call === undefined || (id.length > 0 && call.id.length > 0 && id !== call.id)) {
      call = { id, name: '', args: '' };
      this.calls.push(call);
      this.callAt.set(toolIndex, call);
    }
    if (call.id.length === 0 && id.length > 0) call.id = id;
    if (nonEmpty(fn.name) && call.name.length === 0) call.name = fn.name;
    if (nonEmpty(fn.arguments)) call.args += fn.arguments;
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

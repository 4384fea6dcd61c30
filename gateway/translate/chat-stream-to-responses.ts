/**
 * An OpenAI chat-completion chunk stream → OpenAI Responses stream events, for a
 * `/v1/responses` client served by a chat-completions upstream. Pure and incremental: feed each
 * parsed chunk to `chunk`, then call `end` once the upstream's answer is whole.
 *
 * The event grammar is the Responses API's (OpenAI's API reference, "Streaming events"; the
 * order the official `openai` client's `ResponseStream` accumulates): `response.created` and
 * `response.in_progress` with the first chunk; per output item `response.output_item.added`,
 * `response.content_part.added`, its deltas (`response.reasoning_text.delta` for reasoning,
 * `response.output_text.delta` for content and refusal text), `….done` for the text, the part
 * and the item; then the tool calls. Chat servers stream parallel tool calls interleaved, and
 * some send several under one index with distinct ids, so calls are gathered (a new id or index
 * is a new call) and sent whole at the end, each as a `function_call` item with one
 * `response.function_call_arguments.delta`. Last comes `response.completed` (or
 * `response.incomplete` for `finish_reason: "length"`) carrying the whole response with its
 * usage. Every event has its `sequence_number`, from 0. Only choice 0 is translated.
 */
import { isRecord, nonEmpty, str } from './json-values.ts';
import type { TranslatedEvent } from './translated.ts';
import {
  functionCallItem, itemId, outputTextPart, reasoningItem, responseObject, responsesUsageFromChat, statusFromFinish,
  messageItem, type ResponseFrame,
} from './chat-to-responses.ts';

/** The item whose text is streaming now. */
interface OpenItem {
  kind: 'reasoning' | 'message';
  id: string;
  outputIndex: number;
  text: string;
}

/** A tool call being gathered. */
interface ToolCall {
  id: string;
  name: string;
  args: string;
}

/** One upstream stream's translation. */
export class ChatStreamToResponses {
  private started = false;
  private ended = false;
  private seq = 0;
  private open: OpenItem | null = null;
  private readonly output: Array<Record<string, unknown>> = [];
  private finishReason: unknown = null;
  private lastUsage: unknown = null;
  private readonly calls: ToolCall[] = [];
  private readonly callAt = new Map<number, ToolCall>();
  private final: Record<string, unknown> | null = null;

  /** `frame`: the response's id, time, client-facing model name and request (echoed fields). */
  constructor(private readonly frame: ResponseFrame) {}

  /** The whole response of `response.completed` / `response.incomplete`, once `end` ran; else null. */
  get response(): Record<string, unknown> | null {
    return this.final;
  }

  /** Translates one parsed `chat.completion.chunk` (usage-only chunks included) into the events it completes. */
  chunk(chunk: Record<string, unknown>): TranslatedEvent[] {
    const out: TranslatedEvent[] = [];
    if (this.ended) return out;
    this.start(out);
    if (isRecord(chunk.usage)) this.lastUsage = chunk.usage;
    const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
    const choice = choices.find((c) => isRecord(c) && (c.index === 0 || c.index === undefined));
    if (!isRecord(choice)) return out;
    const delta = isRecord(choice.delta) ? choice.delta : {};
    const reasoning = nonEmpty(delta.reasoning_content) ? delta.reasoning_content : delta.reasoning;
    if (nonEmpty(reasoning)) this.text(out, 'reasoning', reasoning);
    for (const text of [delta.content, delta.refusal]) if (nonEmpty(text)) this.text(out, 'message', text);
    if (Array.isArray(delta.tool_calls)) for (const tc of delta.tool_calls) if (isRecord(tc)) this.toolCall(tc);
    if (choice.finish_reason !== null && choice.finish_reason !== undefined) this.finishReason = choice.finish_reason;
    return out;
  }

  /**
   * The upstream's answer is whole: closes the open item, sends the gathered tool calls, then
   * `response.completed` (or `response.incomplete`) with the output and usage. Later calls return nothing.
   */
  end(): TranslatedEvent[] {
    const out: TranslatedEvent[] = [];
    if (this.ended) return out;
    this.start(out);
    this.close(out);
    for (const c of this.calls) {
      const outputIndex = this.output.length;
      const id = itemId('fc', this.frame.id, outputIndex);
      const callId = c.id.length > 0 ? c.id : `call_${outputIndex}`;
      out.push(this.event('response.output_item.added', { output_index: outputIndex, item: { ...functionCallItem(id, callId, c.name, ''), status: 'in_progress' } }, true));
      if (c.args.length > 0) out.push(this.event('response.function_call_arguments.delta', { item_id: id, output_index: outputIndex, delta: c.args }, true));
      out.push(this.event('response.function_call_arguments.done', { item_id: id, output_index: outputIndex, name: c.name, arguments: c.args }, false));
      const item = functionCallItem(id, callId, c.name, c.args);
      this.output.push(item);
      out.push(this.event('response.output_item.done', { output_index: outputIndex, item }, false));
    }
    if (this.output.length === 0) {
      // An answer with no text at all still has its (empty) message, as the body translation gives.
      this.openItem(out, 'message');
      this.close(out);
    }
    this.ended = true;
    const { status, incompleteReason } = statusFromFinish(this.finishReason);
    this.final = responseObject(this.frame, status, this.output, responsesUsageFromChat(this.lastUsage), incompleteReason);
    out.push(this.event(status === 'completed' ? 'response.completed' : 'response.incomplete', { response: this.final }, false));
    return out;
  }

  private start(out: TranslatedEvent[]): void {
    if (this.started) return;
    this.started = true;
    const response = responseObject(this.frame, 'in_progress', [], null);
    out.push(this.event('response.created', { response }, false));
    out.push(this.event('response.in_progress', { response }, false));
  }

  private text(out: TranslatedEvent[], kind: OpenItem['kind'], delta: string): void {
    if (this.open?.kind !== kind) {
      this.close(out);
      this.openItem(out, kind);
    }
    const o = this.open!;
    o.text += delta;
    const name = kind === 'message' ? 'response.output_text.delta' : 'response.reasoning_text.delta';
    const data: Record<string, unknown> = { item_id: o.id, output_index: o.outputIndex, content_index: 0, delta };
    if (kind === 'message') data.logprobs = [];
    out.push(this.event(name, data, true));
  }

  private openItem(out: TranslatedEvent[], kind: OpenItem['kind']): void {
    const outputIndex = this.output.length;
    const id = itemId(kind === 'message' ? 'msg' : 'rs', this.frame.id, outputIndex);
    this.open = { kind, id, outputIndex, text: '' };
    // The slot is taken now, so a tool call gathered meanwhile comes after this item.
    this.output.push({});
    const item = kind === 'message' ? { type: 'message', id, status: 'in_progress', role: 'assistant', content: [] } : { type: 'reasoning', id, summary: [], content: [] };
    out.push(this.event('response.output_item.added', { output_index: outputIndex, item }, false));
    const part = kind === 'message' ? outputTextPart('') : { type: 'reasoning_text', text: '' };
    out.push(this.event('response.content_part.added', { item_id: id, output_index: outputIndex, content_index: 0, part }, false));
  }

  private close(out: TranslatedEvent[]): void {
    const o = this.open;
    if (o === null) return;
    this.open = null;
    const at = { item_id: o.id, output_index: o.outputIndex, content_index: 0 };
    if (o.kind === 'message') {
      out.push(this.event('response.output_text.done', { ...at, text: o.text, logprobs: [] }, false));
      out.push(this.event('response.content_part.done', { ...at, part: outputTextPart(o.text) }, false));
    } else {
      out.push(this.event('response.reasoning_text.done', { ...at, text: o.text }, false));
      out.push(this.event('response.content_part.done', { ...at, part: { type: 'reasoning_text', text: o.text } }, false));
    }
    const item = o.kind === 'message' ? messageItem(o.id, o.text) : reasoningItem(o.id, o.text);
    this.output[o.outputIndex] = item;
    out.push(this.event('response.output_item.done', { output_index: o.outputIndex, item }, false));
  }

  /** A tool-call delta: a new index, or a new id at a known index, is a new call; pieces append to their call. */
  private toolCall(tc: Record<string, unknown>): void {
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

  private event(type: string, fields: Record<string, unknown>, token: boolean): TranslatedEvent {
    return { name: type, data: JSON.stringify({ type, sequence_number: this.seq++, ...fields }), token };
  }
}

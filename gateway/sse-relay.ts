/**
 * The SSE relay of one upstream stream: bytes in, client frames and stream facts out. Pure (no
 * I/O, no clock), so its output depends only on the bytes and never on how TCP cut them —
 * UTF-8 is decoded in streaming mode and events are framed by `eventsource-parser`.
 *
 * Per upstream event it decides:
 * - `[DONE]` ⇒ `done` (the driver writes its own terminator once the core agrees);
 * - `{"error":…}` ⇒ `upstream_error` (vLLM and others report late failures in-band);
 * - otherwise a `frame` to relay, flagged `token` when it carries model output — a non-empty
 *   content / refusal / reasoning delta or a tool call (chat), or non-empty text (completions).
 *   Role-only and empty deltas are frames without a token: the driver holds them back until the
 *   core commits the attempt, so a failure before the first token can fail over invisibly.
 * The relay always sees usage (the gateway asks upstream for it) and records it; when the
 * client did not ask, the usage-only chunk is dropped and `usage` keys are removed from the
 * others. The `model` field is rewritten to the name the client asked for. Each event is
 * framed for the client by the request's client wire (`RelayOptions.wire`; OpenAI's by default,
 * which relays unchanged events byte for byte); SSE comments and ids are dropped (nothing is
 * sent before commit, and a keep-alive comment after it carries nothing for the client).
 */
import { createParser, type EventSourceMessage, type EventSourceParser } from 'eventsource-parser';
import type { Usage } from '../core/index.ts';
import type { ClientWire } from './endpoints/client-wire.ts';
import { openAiWire } from './endpoints/openai-wire.ts';
import type { TranslatedEvent } from './translate/translated.ts';

/** What the relay produces, in order. */
export type RelayEvent =
  | { kind: 'frame'; text: string; token: boolean }
  /** `[DONE]`; `usage` is what the upstream reported (null if it sent none). */
  | { kind: 'done'; usage: Usage | null }
  /**
   * An in-band error event: its status (the error's numeric `code`/`status`, else 500), string
   * `code` and `type`, `message`, and a Retry-After in ms when the error carries
   * `retry_after_ms` or `retry_after` (seconds).
   */
  | { kind: 'upstream_error'; status: number; code: string | null; type: string | null; message: string; retryAfterMs: number | null }
  | { kind: 'malformed'; reason: string };

/** Options of one relay. */
export interface RelayOptions {
  /** Chat deltas or text-completion choices. */
  endpoint: 'chat' | 'completion';
  /** The client asked for usage (`stream_options.include_usage`). */
  includeUsage: boolean;
  /** Model name to show the client (the id or alias it asked for); null keeps the upstream's. */
  model: string | null;
  /** Bound on one buffered event, characters (default 16 Mi). */
  maxEventChars?: number;
  /** Frames each relayed event for the client (`ClientWire.streamEvent`); default OpenAI's. */
  wire?: ClientWire;
  /**
   * Turns each chunk into the client family's events instead of relaying it (an Anthropic
   * client on an OpenAI upstream: `translate/chat-stream-to-messages.ts`); its `end` events go
   * out before `done`. Absent: chunks are relayed as they are.
   */
  translator?: ChunkTranslator;
}

/** A stream translator the relay drives (`RelayOptions.translator`). */
export interface ChunkTranslator {
  /** The client events of one parsed chunk (usage-only chunks included). */
  chunk(chunk: Record<string, unknown>): readonly TranslatedEvent[];
  /** The closing events, once, before `done`. */
  end(): readonly TranslatedEvent[];
  /** Whether `chunk` ends the answer (as a finish reason does); absent: only `finish_reason` does. */
  finishes?(chunk: Record<string, unknown>): boolean;
  /**
   * For a stream of the client's own family that is not made of chat chunks (a native Responses
   * upstream, `translate/native-responses.ts`): the event's in-band failure, or null. Absent:
   * chat chunks, whose `error` key the relay reads itself.
   */
  failure?(chunk: Record<string, unknown>): Extract<RelayEvent, { kind: 'upstream_error' }> | null;
  /** Such a stream's answer is whole (it ends with an event of its own, not a finish reason). */
  readonly finished?: boolean;
  /** Such a stream's usage, once its final event came (chat chunks carry `usage` themselves). */
  readonly usage?: Usage | null;
}

/** One upstream stream's relay. Feed bytes with `push`, then call `end`. */
export class SseRelay {
  /** Usage from the upstream's usage chunk, once seen. */
  usage: Usage | null = null;
  /** Whether any chunk carried a `finish_reason`. */
  finishSeen = false;
  private readonly decoder = new TextDecoder('utf-8');
  private readonly parser: EventSourceParser;
  private readonly wire: ClientWire;
  private out: RelayEvent[] = [];
  /** After done / error / malformed, later bytes are ignored. */
  private over = false;

  constructor(private readonly opts: RelayOptions) {
    this.wire = opts.wire ?? openAiWire;
    this.parser = createParser({
      onEvent: (e) => this.onEvent(e),
      onError: (err) => {
        if (err.type === 'max-buffer-size-exceeded') this.stop({ kind: 'malformed', reason: 'an SSE event exceeded the size bound' });
      },
      maxBufferSize: opts.maxEventChars ?? 16 * 1024 * 1024,
    });
  }

  /** True once `done`, `upstream_error` or `malformed` was produced. */
  get finished(): boolean {
    return this.over;
  }

  /** Feeds upstream bytes; appends what they complete to `out`. */
  push(chunk: Uint8Array, out: RelayEvent[]): void {
    if (this.over) return;
    this.out = out;
    this.parser.feed(this.decoder.decode(chunk, { stream: true }));
  }

  /** The upstream body ended; an unterminated last event is discarded (SSE rules). */
  end(out: RelayEvent[]): void {
    if (this.over) return;
    this.out = out;
    const rest = this.decoder.decode();
    if (rest) this.parser.feed(rest);
  }

  /**
   * The answer is whole (`[DONE]`, or a finish reason and usage from a lenient server): the
   * translator's closing events, then `done` with the usage, into `out`; later bytes are ignored.
   */
  complete(out: RelayEvent[]): void {
    if (this.over) return;
    const t = this.opts.translator;
    if (t) for (const ev of t.end()) out.push({ kind: 'frame', text: this.wire.streamEvent(ev.name, ev.data), token: ev.token });
    out.push({ kind: 'done', usage: this.usage });
    this.over = true;
  }

  private stop(e: RelayEvent): void {
    this.out.push(e);
    this.over = true;
  }

  private onEvent(e: EventSourceMessage): void {
    if (this.over) return;
    const data = e.data;
    if (data === '[DONE]') return this.complete(this.out);
    let obj: unknown;
    try {
      obj = JSON.parse(data);
    } catch {
      return this.stop({ kind: 'malformed', reason: 'an SSE data field is not JSON' });
    }
    if (!isRecord(obj)) return this.stop({ kind: 'malformed', reason: 'an SSE data field is not a JSON object' });
    if (obj.error !== undefined && obj.error !== null) return this.stop(inBandError(obj.error));
    let changed = false;
    const choices = Array.isArray(obj.choices) ? obj.choices : [];
    const t = this.opts.translator;
    if (t) {
      const failure = t.failure?.(obj) ?? null;
      if (failure !== null) return this.stop(failure);
      if (isRecord(obj.usage)) this.usage = toUsage(obj.usage);
      for (const c of choices) if (isRecord(c) && c.finish_reason !== null && c.finish_reason !== undefined) this.finishSeen = true;
      if (t.finishes?.(obj) === true) this.finishSeen = true;
      for (const ev of t.chunk(obj)) this.out.push({ kind: 'frame', text: this.wire.streamEvent(ev.name, ev.data), token: ev.token });
      if (t.finished === true) this.finishSeen = true;
      if (t.usage !== undefined && t.usage !== null) this.usage = t.usage;
      return;
    }
    if (isRecord(obj.usage)) {
      this.usage = toUsage(obj.usage);
      if (!this.opts.includeUsage && choices.length === 0) return; // the usage-only chunk
    }
    if (!this.opts.includeUsage && 'usage' in obj) {
      delete obj.usage;
      changed = true;
    }
    if (this.opts.model !== null && typeof obj.model === 'string' && obj.model !== this.opts.model) {
      obj.model = this.opts.model;
      changed = true;
    }
    let token = false;
    for (const c of choices) {
      if (!isRecord(c)) continue;
      if (c.finish_reason !== null && c.finish_reason !== undefined) this.finishSeen = true;
      if (!token) token = this.opts.endpoint === 'chat' ? isOutputDelta(c.delta) : nonEmpty(c.text);
    }
    this.out.push({ kind: 'frame', text: this.wire.streamEvent(e.event ?? null, changed ? JSON.stringify(obj) : data), token });
  }
}

/** Whether a chat delta carries model output (not just a role or nothing). */
export function isOutputDelta(delta: unknown): boolean {
  if (!isRecord(delta)) return false;
  if (nonEmpty(delta.content) || nonEmpty(delta.refusal) || nonEmpty(delta.reasoning_content) || nonEmpty(delta.reasoning)) return true;
  if (Array.isArray(delta.tool_calls) && delta.tool_calls.length > 0) return true;
  return isRecord(delta.function_call);
}

/** Usage in the core's terms from an OpenAI usage object (missing counts are 0). */
export function toUsage(u: Record<string, unknown>): Usage {
  const details = isRecord(u.prompt_tokens_details) ? u.prompt_tokens_details : null;
  return {
    inputTokens: count(u.prompt_tokens),
    outputTokens: count(u.completion_tokens),
    cachedTokens: count(details?.cached_tokens),
  };
}

function inBandError(err: unknown): RelayEvent {
  const e = isRecord(err) ? err : { message: String(err) };
  const numeric = typeof e.code === 'number' ? e.code : typeof e.status === 'number' ? e.status : null;
  const status = numeric !== null && numeric >= 400 && numeric <= 599 ? numeric : 500;
  const ms = typeof e.retry_after_ms === 'number' ? e.retry_after_ms : typeof e.retry_after === 'number' ? e.retry_after * 1000 : null;
  return {
    kind: 'upstream_error',
    status,
    code: typeof e.code === 'string' ? e.code : typeof e.type === 'string' ? e.type : null,
    type: typeof e.type === 'string' ? e.type : null,
    message: typeof e.message === 'string' ? e.message : 'upstream error',
    retryAfterMs: ms !== null && Number.isFinite(ms) && ms >= 0 ? Math.ceil(ms) : null,
  };
}

function nonEmpty(v: unknown): boolean {
  return typeof v === 'string' && v.length > 0;
}

function count(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 0;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * The `anthropic` adapter: a native Anthropic Messages upstream (api.anthropic.com, or anything
 * speaking its protocol). It sends the route's key as `x-api-key`, the client's
 * `anthropic-version` (else 2023-06-01) and `anthropic-beta` when the client sent one, and reads
 * Anthropic's event stream (`anthropic-events.ts`), its error envelope and `retry-after`; an
 * upstream 529 `overloaded_error` is busy, not broken (the core's outcome table). It serves:
 * - `messages` natively: the body as the client sent it with the route's model name; events are
 *   relayed as they came (the model name in `message_start` rewritten to the one asked for),
 *   `message_stop` ends the answer and the client wire writes its own;
 * - `count_tokens` natively, via the upstream's `/v1/messages/count_tokens`;
 * - `chat` by translation (`../../translate/`): the OpenAI request becomes a Messages request
 *   (fields without an equivalent are dropped and named in `x-switchyard-dropped-params`, or
 *   refused with a 400 naming them), and the answer comes back as OpenAI chunks or a chat
 *   completion;
 * - `responses` by translation through chat (`anthropic-responses.ts`): OpenAI's Responses API
 *   on a Messages upstream, its events and response object built by the gateway.
 * A streamed answer that ends without `message_stop` is a reset, as for OpenAI upstreams.
 */
import { publicModelOf } from '../../auto/auto-request.ts';
import { createParser } from 'eventsource-parser';
import type { Dispatcher } from 'undici';
import type { Usage } from '../../../core/index.ts';
import type { ClientRequest } from '../../request-body.ts';
import type { RelayEvent } from '../../sse-relay.ts';
import type { AttemptContext, AttemptEnd, AttemptHandle, AttemptHooks, UpstreamAdapter, UpstreamTarget } from '../adapter.ts';
import { droppedParamsHeader } from '../dropped-params.ts';
import { errorBodyFailure, retryAfterFromHeaders, transportOutcome } from '../openai-compat.ts';
import { usageFromAnthropic } from '../../translate/usage.ts';
import { AnthropicStreamUsage, statusOfAnthropicError } from './anthropic-events.ts';
import { translationFor, type AnthropicTranslation } from './anthropic-translation.ts';

/** `anthropic-version` sent when the client named none. */
export const DEFAULT_ANTHROPIC_VERSION = '2023-06-01';

const RESET: AttemptEnd = { kind: 'failed', outcome: { kind: 'transport', cause: 'reset' }, errorBody: null };

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Where an attempt goes and how its answer is read, per endpoint family. */
interface Plan {
  path: string;
  body: string;
  stream: boolean;
  dropped: readonly string[];
  /** Response headers at commit besides the dropped fields. */
  headers: ReadonlyArray<readonly [string, string]>;
  /** Each stream event → client events (native: relay; chat: translate). */
  translation: AnthropicTranslation;
}

function planOf(target: UpstreamTarget, req: ClientRequest, ctx: AttemptContext): Plan | AttemptEnd {
  const t = translationFor(req, target.upstreamModel, { endpointId: target.endpointId, onResponse: ctx.onResponse });
  if ('kind' in t) return t;
  const path = req.endpoint === 'count_tokens' ? `${target.basePath}/messages/count_tokens` : `${target.basePath}/messages`;
  return { path, body: JSON.stringify(t.body), stream: req.stream, dropped: t.dropped, headers: t.headers, translation: t.translation };
}

/** The `anthropic` adapter. */
export const anthropicAdapter: UpstreamAdapter = {
  kind: 'anthropic',
  endpoints: ['messages', 'count_tokens', 'chat', 'responses'],
  startAttempt(target, req, ctx, hooks, end) {
    return new AnthropicAttempt(target, req, ctx, hooks, end);
  },
};

/** One attempt on a native Anthropic upstream (undici's promise API with an abort signal). */
class AnthropicAttempt implements AttemptHandle {
  readonly commitHeaders: ReadonlyArray<readonly [string, string]> | undefined;
  private readonly abortController = new AbortController();
  private ended = false;

  constructor(
    target: UpstreamTarget,
    private readonly req: ClientRequest,
    ctx: AttemptContext,
    private readonly hooks: AttemptHooks,
    private readonly onEnd: (e: AttemptEnd) => void,
  ) {
    const plan = planOf(target, req, ctx);
    if ('kind' in plan) {
      this.commitHeaders = undefined;
      queueMicrotask(() => this.finish(plan));
      return;
    }
    const commit: Array<readonly [string, string]> = [...plan.headers];
    const dropped = droppedParamsHeader(plan.dropped);
    if (dropped) commit.push(dropped);
    this.commitHeaders = commit.length > 0 ? commit : undefined;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: plan.stream ? 'text/event-stream' : 'application/json',
      'x-request-id': ctx.requestId,
      'anthropic-version': ctx.clientHeaders?.['anthropic-version'] || DEFAULT_ANTHROPIC_VERSION,
    };
    const beta = ctx.clientHeaders?.['anthropic-beta'];
    if (beta && (req.endpoint === 'messages' || req.endpoint === 'count_tokens')) headers['anthropic-beta'] = beta;
    const apiKey = ctx.apiKey ?? target.apiKey;
    if (apiKey) headers['x-api-key'] = apiKey;
    if (ctx.traceHeaders) Object.assign(headers, ctx.traceHeaders);
    this.run(target, plan, headers, ctx.maxErrorBodyBytes).catch((e: unknown) => this.finish({ kind: 'failed', outcome: transportOutcome(e), errorBody: null }));
  }

  abort(): void {
    if (this.ended) return;
    this.finish({ kind: 'aborted' });
    this.abortController.abort();
  }

  private finish(e: AttemptEnd): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd(e);
  }

  private async run(target: UpstreamTarget, plan: Plan, headers: Record<string, string>, maxErrorBodyBytes: number): Promise<void> {
    const res = await target.pool.request({ method: 'POST', path: plan.path, headers, body: plan.body, signal: this.abortController.signal });
    if (this.ended) return void res.body.resume();
    if (res.statusCode >= 400) {
      const text = await readBounded(res.body, maxErrorBodyBytes);
      return this.finish(errorBodyFailure(res.statusCode, text, retryAfterFromHeaders(res.headers)));
    }
    if (res.statusCode >= 300) {
      res.body.resume();
      return this.finish(RESET);
    }
    this.hooks.headers();
    if (this.ended) return void res.body.resume();
    if (!plan.stream) {
      const text = await res.body.text();
      if (this.ended) return;
      let obj: unknown;
      try {
        obj = JSON.parse(text);
      } catch {
        return this.finish(RESET);
      }
      if (!isRecord(obj)) return this.finish(RESET);
      const usage: Usage = this.req.endpoint === 'count_tokens' ? { inputTokens: 0, outputTokens: 0, cachedTokens: 0 } : usageFromAnthropic(obj.usage);
      return this.finish({ kind: 'body', text: plan.translation.body(obj, publicModelOf(this.req)), usage });
    }
    if (!String(res.headers['content-type'] ?? '').includes('text/event-stream')) {
      res.body.resume();
      return this.finish(RESET);
    }
    await this.relay(res.body, plan.translation);
  }

  private async relay(body: Dispatcher.ResponseData['body'], translation: AnthropicTranslation): Promise<void> {
    const usage = new AnthropicStreamUsage();
    let out: RelayEvent[] = [];
    let failure: AttemptEnd | null = null;
    let done = false;
    const wire = this.req.wire;
    const parser = createParser({
      onEvent: (e) => {
        if (done || failure) return;
        const name = e.event ?? 'message';
        let data: unknown;
        try {
          data = JSON.parse(e.data);
        } catch {
          failure = RESET;
          return;
        }
        if (!isRecord(data)) {
          failure = RESET;
          return;
        }
        if (name === 'error') {
          const err = isRecord(data.error) ? data.error : {};
          const type = typeof err.type === 'string' ? err.type : null;
          failure = errorBodyFailure(statusOfAnthropicError(type), e.data, null);
          return;
        }
        if (name === 'ping') return;
        usage.note(name, data);
        for (const ev of translation.event(name, data, e.data, publicModelOf(this.req))) out.push({ kind: 'frame', text: wire.streamEvent(ev.name, ev.data), token: ev.token });
        if (name === 'message_stop') {
          done = true;
          out.push({ kind: 'done', usage: usage.usage });
        }
      },
    });
    const decoder = new TextDecoder();
    for await (const chunk of body) {
      if (this.ended) return;
      parser.feed(decoder.decode(chunk as Buffer, { stream: true }));
      const batch = out;
      out = [];
      if (batch.length > 0) await this.hooks.events(batch);
      if (this.ended) return;
      if (failure) {
        this.finish(failure);
        this.abortController.abort();
        return;
      }
      if (done) return this.finish({ kind: 'streamed' });
    }
    if (!this.ended) this.finish(RESET); // the body ended without message_stop
  }
}

async function readBounded(body: Dispatcher.ResponseData['body'], maxBytes: number): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    parts.push(chunk as Buffer);
    size += (chunk as Buffer).length;
    if (size >= maxBytes) break;
  }
  return Buffer.concat(parts).subarray(0, maxBytes).toString('utf8');
}

/**
 * OpenTelemetry traces of the gateway, loaded only when `tracing.enabled` is set (`tracing.ts`).
 * One SERVER span per inference request, named `{gen_ai.operation.name} {gen_ai.request.model}`
 * as the GenAI semantic conventions name inference spans, and one CLIENT span per upstream
 * attempt under it. Spans start live (the attempt span's id goes upstream in `traceparent` when
 * the attempt is sent) and get their attributes and end times at the end of the request from
 * the core's routing metadata, the same report the request log and metrics read.
 *
 * Attributes: `gen_ai.operation.name`, `gen_ai.request.model`, `gen_ai.response.model`,
 * `gen_ai.request.max_tokens`, `gen_ai.usage.input_tokens` / `output_tokens`, `server.address` /
 * `server.port` (attempts), `http.response.status_code` (request), and `switchyard.*` for the
 * routing facts: request id, status, strategy, serving endpoint, fallback, offload reason,
 * attempt count and TTFT on the request; endpoint id, target, outcome, reason (primary, retry,
 * fallback, offload) and TTFT on each attempt.
 *
 * The W3C trace context (https://www.w3.org/TR/trace-context/) is parsed and written here rather
 * than through a global propagator: the gateway registers no global tracer, context manager or
 * propagator, so nothing else in the process changes when tracing is on.
 */
import { createTraceState, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { RoutingMetadata } from '../../core/index.ts';
import type { TracingConfig } from '../config/gateway-settings.ts';
import type { Endpoint } from '../request-body.ts';
import { attemptReason } from '../server/attempt-reason.ts';
import type { FinishedExchange, RouteTarget } from '../server/exchange-context.ts';
import type { ClientTraceHeaders, RequestTrace, Tracing, TracingOptions } from './tracing.ts';

/**
 * `gen_ai.operation.name` of each endpoint family: the conventions' well-known values where one
 * fits (Anthropic's Messages is a chat), the family's own name where none does.
 */
const OPERATION: Readonly<Record<Endpoint, string>> = {
  chat: 'chat',
  messages: 'chat',
  completion: 'text_completion',
  embedding: 'embeddings',
  count_tokens: 'count_tokens',
};

/** `version-traceid-parentid-flags`, lower-case hex; a later version may append fields. */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/**
 * The parent context of the client's trace-context headers, or the root context when
 * `traceparent` is absent or invalid (then `tracestate` is ignored too, as the spec says).
 */
export function clientParent(h: ClientTraceHeaders | null): Context {
  if (!h || h.traceparent.length === 0) return ROOT_CONTEXT;
  const m = TRACEPARENT.exec(h.traceparent.trim());
  if (!m) return ROOT_CONTEXT;
  const [, version, traceId, spanId, flags, rest] = m as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined) || traceId === ZERO_TRACE || spanId === ZERO_SPAN) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId,
    spanId,
    traceFlags: parseInt(flags, 16) & TraceFlags.SAMPLED,
    isRemote: true,
    ...(h.tracestate.length > 0 && { traceState: createTraceState(h.tracestate) }),
  });
}

/** Wall-clock ms of a gateway clock reading (`performance.now()`), as span times take it. */
function wallMs(nowMs: number): number {
  return performance.timeOrigin + nowMs;
}

/** The outcome as the request log writes it: `ok`, `http_503`, `transport`, … */
function outcomeName(o: { kind: string; status?: number }): string {
  return o.kind === 'http_status' ? `http_${o.status}` : o.kind;
}

/** The spans of one request. */
class OtelRequestTrace implements RequestTrace {
  private readonly span: Span;
  private readonly ctx: Context;
  /** Attempt spans by the core's attempt id, with their target. */
  private readonly attempts = new Map<number, { span: Span; target: RouteTarget }>();

  constructor(
    private readonly tracer: Tracer,
    client: ClientTraceHeaders | null,
    startedAtMs: number,
  ) {
    this.span = tracer.startSpan('request', { kind: SpanKind.SERVER, startTime: wallMs(startedAtMs) }, clientParent(client));
    this.ctx = trace.setSpan(ROOT_CONTEXT, this.span);
  }

  attempt(attemptId: number, target: RouteTarget, nowMs: number): Readonly<Record<string, string>> {
    const span = this.tracer.startSpan(`attempt ${target.endpointId}`, { kind: SpanKind.CLIENT, startTime: wallMs(nowMs) }, this.ctx);
    this.attempts.set(attemptId, { span, target });
    const sc = span.spanContext();
    const headers: Record<string, string> = { traceparent: `00-${sc.traceId}-${sc.spanId}-0${sc.traceFlags & TraceFlags.SAMPLED}` };
    const state = sc.traceState?.serialize();
    if (state) headers.tracestate = state;
    return headers;
  }

  end(f: FinishedExchange): void {
    const md = f.metadata;
    const req = f.req;
    const operation = OPERATION[req.endpoint] ?? req.endpoint;
    const model = req.model;
    this.span.updateName(`${operation} ${model}`);
    const a: Attributes = {
      'gen_ai.operation.name': operation,
      'gen_ai.request.model': model,
      'http.response.status_code': f.httpStatus,
      'switchyard.request_id': f.requestId,
      'switchyard.stream': req.stream,
      'switchyard.status': f.cut ? 'draining' : (md?.status ?? f.refusedCode ?? 'internal_error'),
    };
    if (req.outputTokensHint !== null) a['gen_ai.request.max_tokens'] = req.outputTokensHint;
    if (f.sessionId !== null) a['switchyard.session_id'] = f.sessionId;
    if (md) {
      a['switchyard.model_id'] = md.modelId;
      a['switchyard.strategy'] = md.strategy;
      a['switchyard.route_reason'] = md.reason;
      a['switchyard.fallback'] = md.fallback;
      a['switchyard.attempts'] = md.attempts.length;
      if (md.endpointId !== null) a['switchyard.endpoint_id'] = md.endpointId;
      if (md.offloadReason !== null) a['switchyard.offload_reason'] = md.offloadReason;
      // A non-stream's first token is its whole body, as the metrics count it.
      if (md.firstTokenAtMs !== null) a['switchyard.ttft_ms'] = md.firstTokenAtMs - f.startedAtMs;
      else if (!req.stream && md.status === 'ok') a['switchyard.ttft_ms'] = f.endedAtMs - f.startedAtMs;
      const served = md.endpointId === null ? undefined : [...this.attempts.values()].find((x) => x.target.endpointId === md.endpointId);
      if (served) a['gen_ai.response.model'] = served.target.upstreamModel;
      if (md.usage) {
        a['gen_ai.usage.input_tokens'] = md.usage.inputTokens;
        a['gen_ai.usage.output_tokens'] = md.usage.outputTokens;
      }
      this.endAttempts(md, operation);
    }
    // Attempts the metadata does not list (a request the gateway failed itself) end with it.
    for (const { span } of this.attempts.values()) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'unfinished' });
      span.end(wallMs(f.endedAtMs));
    }
    this.attempts.clear();
    this.span.setAttributes(a);
    if (a['switchyard.status'] !== 'ok') this.span.setStatus({ code: SpanStatusCode.ERROR, message: String(a['switchyard.status']) });
    this.span.end(wallMs(f.endedAtMs));
  }

  /** Ends the span of every attempt in `md` (a skipped one gets a span of zero length). */
  private endAttempts(md: RoutingMetadata, operation: string): void {
    md.attempts.forEach((rec, i) => {
      const live = this.attempts.get(rec.attemptId);
      this.attempts.delete(rec.attemptId);
      const span = live?.span ?? this.tracer.startSpan(`attempt ${rec.endpointId}`, { kind: SpanKind.CLIENT, startTime: wallMs(rec.startMs) }, this.ctx);
      const outcome = outcomeName(rec.outcome as { kind: string; status?: number });
      const a: Attributes = {
        'gen_ai.operation.name': operation,
        'switchyard.endpoint_id': rec.endpointId,
        'switchyard.attempt.index': i,
        'switchyard.attempt.reason': attemptReason(md, i),
        'switchyard.outcome': outcome,
      };
      if (rec.target !== undefined) a['switchyard.target'] = rec.target;
      if (rec.skipped) a['switchyard.skipped'] = rec.skipped;
      if (live) {
        a['gen_ai.request.model'] = live.target.upstreamModel;
        const origin = new URL(live.target.origin);
        a['server.address'] = origin.hostname;
        a['server.port'] = origin.port ? Number(origin.port) : origin.protocol === 'https:' ? 443 : 80;
      }
      if (rec.usage) {
        a['gen_ai.usage.input_tokens'] = rec.usage.inputTokens;
        a['gen_ai.usage.output_tokens'] = rec.usage.outputTokens;
      }
      // The request's first token came from the attempt that served it (a non-stream's with its whole body).
      if (rec.outcome.kind === 'ok' && rec.endpointId === md.endpointId) a['switchyard.ttft_ms'] = (md.firstTokenAtMs ?? rec.endMs) - rec.startMs;
      span.setAttributes(a);
      if (rec.outcome.kind !== 'ok') span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
      span.end(wallMs(Math.max(rec.endMs, rec.startMs)));
    });
  }
}

/** Builds the tracer provider of `cfg` (batch processor, parent-based ratio sampler). */
export function startOtelTracing(cfg: TracingConfig, opts: TracingOptions): Tracing {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: cfg.service_name }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(cfg.sample_ratio) }),
    spanProcessors: [new BatchSpanProcessor(opts.exporter ?? new OTLPTraceExporter({ url: cfg.endpoint }))],
  });
  const tracer = provider.getTracer('switchyard-gateway');
  return {
    startRequest: (client, startedAtMs) => new OtelRequestTrace(tracer, client, startedAtMs),
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

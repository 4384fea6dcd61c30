/**
 * The gateway's trace seam: what an exchange asks of tracing (a request trace at arrival, a
 * child per upstream attempt with the W3C trace-context headers its upstream request carries,
 * the end from what the request log sees), with no OpenTelemetry type in it. The implementation
 * (`otel-tracing.ts`) is loaded with a dynamic `import()` only when `tracing.enabled` is set, so
 * a gateway without tracing loads no `@opentelemetry` module and pays one null check per request
 * and per attempt (`ExchangeContext.tracing`).
 */
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { TracingConfig } from '../config/gateway-settings.ts';
import type { FinishedExchange, RouteTarget } from '../server/exchange-context.ts';

/** The client's W3C trace-context headers (`traceparent`, `tracestate`), empty strings when absent. */
export interface ClientTraceHeaders {
  readonly traceparent: string;
  readonly tracestate: string;
}

/** The trace of one request: its server span, and one child span per upstream attempt. */
export interface RequestTrace {
  /**
   * Starts the span of attempt `attemptId` on `target` at `nowMs` (the gateway clock, ms) and
   * returns the trace-context headers (`traceparent`, and `tracestate` when the client sent one)
   * its upstream request carries, naming that span as the upstream's parent.
   */
  attempt(attemptId: number, target: RouteTarget, nowMs: number): Readonly<Record<string, string>>;
  /**
   * Ends the request span and every attempt span from what the request log sees: the core's
   * attempts with their outcomes, times and usage. Called once.
   */
  end(f: FinishedExchange): void;
}

/** Tracing of one gateway (one worker). */
export interface Tracing {
  /**
   * Starts the trace of a request that arrived at `startedAtMs` (the gateway clock), as a child
   * of the client's `traceparent` when it is valid, else as a new trace.
   */
  startRequest(client: ClientTraceHeaders | null, startedAtMs: number): RequestTrace;
  /** Exports every ended span now. */
  flush(): Promise<void>;
  /** Exports what is left and stops. */
  shutdown(): Promise<void>;
}

/** What `loadTracing` takes besides the settings. */
export interface TracingOptions {
  /** Where spans go instead of OTLP/HTTP to `tracing.endpoint` (tests pass an in-memory exporter). */
  exporter?: SpanExporter;
}

/**
 * The gateway's tracing, or null when `tracing.enabled` is false — then nothing of OpenTelemetry
 * is imported.
 */
export async function loadTracing(cfg: TracingConfig, opts: TracingOptions = {}): Promise<Tracing | null> {
  if (!cfg.enabled) return null;
  const { startOtelTracing } = await import('./otel-tracing.ts');
  return startOtelTracing(cfg, opts);
}

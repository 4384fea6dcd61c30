/**
 * The per-request `info` log line of an exchange: caller, model, status, serving endpoint,
 * routing reason, the attempts with their outcomes and durations, TTFT, duration and usage.
 * Built only when `info` is enabled (the default level is warn).
 */
import type { Logger } from 'pino';
import type { RoutingMetadata } from '../../core/index.ts';

/** What the line needs besides the core's metadata. Times on the exchange's clock, ms. */
export interface RequestLineFacts {
  readonly callerId: string;
  readonly startedAtMs: number;
  readonly nowMs: number;
  /** The drain's grace cut the response (the core saw the client go; the client was told `draining`). */
  readonly cut: boolean;
  /** The core's message of a failed request (endpoint ids included), or null. */
  readonly errorDetail: string | null;
}

/** Writes the line for `md` to `log` at `info`. */
export function logRequestLine(log: Logger, md: RoutingMetadata, f: RequestLineFacts): void {
  log.info(
    {
      requestId: md.requestId,
      caller: f.callerId,
      model: md.modelId,
      status: f.cut ? 'draining' : md.status,
      endpointId: md.endpointId,
      reason: md.reason,
      fallback: md.fallback,
      attempts: md.attempts.map((a) => ({ endpointId: a.endpointId, outcome: a.outcome.kind === 'http_status' ? a.outcome.status : a.outcome.kind, ms: Math.round(a.endMs - a.startMs) })),
      ttftMs: md.firstTokenAtMs === null ? null : Math.round(md.firstTokenAtMs - f.startedAtMs),
      durationMs: Math.round(f.nowMs - f.startedAtMs),
      usage: md.usage,
      ...(f.cut && { cut: true }),
      ...(f.errorDetail !== null && { detail: f.errorDetail }),
    },
    'request',
  );
}

/**
 * The context-window stage of the candidate pipeline, shared by every model kind: a route may
 * serve a request only if the request fits its `context_length` — the prompt estimate (4 bytes
 * per token in the gateway, the trace's count in the simulator) plus the expected output
 * (`max_tokens`, or the trace's output count) — and, once a route refused the prompt as too
 * long, only a route whose window is larger than the refusing one's. A route that declares no
 * window always fits (the core does not guess). Pure.
 */
import type { RouteRequest } from '../../lifecycle/seam.ts';

/** Tokens `request` needs in a window: prompt estimate plus expected output (0 when unknown). */
export function contextNeedTokens(request: RouteRequest): number {
  return request.inputTokens + (request.outputTokensHint ?? 0);
}

/**
 * Whether a window of `contextLength` tokens (null = undeclared) may serve a request needing
 * `needTokens`, above a refusal floor `floorTokens` (null = no refusal yet).
 */
export function fitsWindow(contextLength: number | null, needTokens: number, floorTokens: number | null = null): boolean {
  if (contextLength === null) return true;
  return contextLength >= needTokens && (floorTokens === null || contextLength > floorTokens);
}

/**
 * The floor a context-length refusal by a route with window `contextLength` sets: its window,
 * or — when it declares none — what the request needs (windows no larger cannot help either).
 */
export function refusalFloorTokens(contextLength: number | null, needTokens: number): number {
  return contextLength ?? needTokens;
}

/** The client message when no window fits (no endpoint names: it reaches the caller). */
export function noWindowFitsMessage(modelId: string, needTokens: number, windows: ReadonlyArray<number | null>): string {
  let largest = 0;
  for (const w of windows) if (w !== null && w > largest) largest = w;
  return `the request needs about ${needTokens} tokens (prompt estimate plus max_tokens), more than the largest context window of model '${modelId}' (${largest} tokens)`;
}

/**
 * The routes of `routes` whose window fits `needTokens`: `routes` itself when all do (nothing
 * allocated), else a filtered copy (possibly empty: the caller answers `context_length_exceeded`).
 */
export function routesFitting<R extends { readonly contextLength: number | null }>(routes: readonly R[], needTokens: number): readonly R[] {
  for (let i = 0; i < routes.length; i++) {
    if (!fitsWindow(routes[i]!.contextLength, needTokens)) return routes.filter((r) => fitsWindow(r.contextLength, needTokens));
  }
  return routes;
}

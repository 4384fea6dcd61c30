// Helpers to build cores with multi-target models and drive their lives through the seam,
// performing `wait_until` backoffs on a virtual clock.
import { RoutingCore, parseModelsConfig, type LifecycleAction, type Outcome, type RouteRequest, type Rng, type RoutingCoreOptions } from '../../../core/index.ts';
import { dispatchOf, doneOf, errorOf, req } from '../harness.ts';

export interface DirectSpec {
  id: string;
  /** Input + output USD per 1M tokens; absent = unpriced. */
  price?: [number, number];
  modalities?: Array<'text' | 'image' | 'audio'>;
  cooldown?: Record<string, unknown>;
  /** The direct model's `health_check:` block. */
  healthCheck?: Record<string, unknown>;
  provider?: string;
  /** The route's `api_key` (its provider key, with `provider`). */
  apiKey?: string;
}

/** Direct models `d.id` with one route `sim://{id}` each (endpoint id `{id}:{id}`), plus `extra` models. */
export function makeMtCore(directs: Array<DirectSpec | string>, extra: Array<Record<string, unknown>>, options: RoutingCoreOptions = {}): RoutingCore {
  const models = directs.map((x) => {
    const d = typeof x === 'string' ? { id: x } : x;
    return {
      id: d.id,
      route: [
        {
          base_url: `sim://${d.id}`,
          ...(d.price && { pricing: { input_usd_per_1m: d.price[0], output_usd_per_1m: d.price[1] } }),
          ...(d.modalities && { input_modalities: d.modalities }),
          ...(d.provider && { provider: d.provider }),
          ...(d.apiKey && { api_key: d.apiKey }),
        },
      ],
      ...(d.cooldown && { cooldown: d.cooldown }),
      ...(d.healthCheck && { health_check: d.healthCheck }),
    };
  });
  return new RoutingCore(parseModelsConfig({ models: [...models, ...extra] }), options);
}

/** A multi-target model `alias` over `targets` with `routing` fields. */
export function group(alias: string, targets: Array<string | Record<string, unknown>>, routing: Record<string, unknown> = {}): Record<string, unknown> {
  return { id: alias, routing: { targets: targets.map((t) => (typeof t === 'string' ? { model: t } : t)), ...routing } };
}

/** Endpoint id of direct model `id` built by `makeMtCore`. */
export const ep = (id: string) => `${id}:${id}`;

export const ok: Outcome = { kind: 'ok' };
export const s503: Outcome = { kind: 'http_status', status: 503, errorClass: 'server_error', retryAfterMs: null };
export const s500: Outcome = { kind: 'http_status', status: 500, errorClass: 'server_error', retryAfterMs: null };
export const s429: Outcome = { kind: 'http_status', status: 429, errorClass: 'rate_limited', retryAfterMs: null };
export const s400: Outcome = { kind: 'http_status', status: 400, errorClass: 'client_error', retryAfterMs: null };
export const s408: Outcome = { kind: 'http_status', status: 408, errorClass: 'request_timeout', retryAfterMs: null };
export const reset: Outcome = { kind: 'transport', cause: 'reset' };

export function mreq(over: Partial<RouteRequest> = {}): RouteRequest {
  return req({ model: 'g', ...over });
}

/**
 * Runs one request to completion. Each dispatch gets `outcomeFor(endpointId, n)` where n counts
 * dispatches to that endpoint in this request (0-based). Backoffs advance the virtual clock.
 */
export function drive(core: RoutingCore, request: RouteRequest, nowMs: number, rng: Rng, outcomeFor: (endpointId: string, n: number) => Outcome) {
  let now = nowMs;
  const { life, actions } = core.start(request, now, rng);
  const all: LifecycleAction[] = [...actions];
  const dispatched: string[] = [];
  const waits: number[] = [];
  const counts = new Map<string, number>();
  let pending = actions;
  let guard = 0;
  while (!life.isDone && guard++ < 200) {
    const d = dispatchOf(pending);
    const w = pending.find((a): a is Extract<LifecycleAction, { kind: 'wait_until' }> => a.kind === 'wait_until');
    let next: LifecycleAction[];
    if (d) {
      dispatched.push(d.endpointId);
      const n = counts.get(d.endpointId) ?? 0;
      counts.set(d.endpointId, n + 1);
      const o = outcomeFor(d.endpointId, n);
      next =
        o.kind === 'ok'
          ? [...life.step({ kind: 'first_token', attemptId: d.attemptId }, now), ...life.step({ kind: 'finished', attemptId: d.attemptId, usage: { inputTokens: 7, outputTokens: 3, cachedTokens: 0 } }, now)]
          : life.step({ kind: 'failed', attemptId: d.attemptId, outcome: o }, now);
    } else if (w) {
      waits.push(w.atMs - now);
      now = w.atMs;
      next = life.step({ kind: 'deadline', deadlineId: w.deadlineId }, now);
    } else break;
    all.push(...next);
    pending = next;
    life.invariants();
  }
  life.invariants();
  return { life, actions: all, done: doneOf(all)!, error: errorOf(all), dispatched, waits, endMs: now };
}

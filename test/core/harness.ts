// Small helpers to build a core and drive request lives through the seam in tests.
import { RoutingCore, deriveRng, parseModelsConfig, type LifecycleAction, type Outcome, type RequestLife, type RouteRequest, type Rng } from '../../core/index.ts';

export interface RouteSpec {
  name: string;
  weight?: number;
  modalities?: Array<'text' | 'image' | 'audio'>;
  provider?: string;
}

export function makeCore(routes: RouteSpec[], strategy = 'fixed', params: Record<string, unknown> = {}, health = {}, settings: Record<string, unknown> = {}): RoutingCore {
  return new RoutingCore(
    parseModelsConfig({
      models: [
        {
          id: 'm',
          aliases: ['m-alias'],
          router: strategy,
          router_params: params,
          route: routes.map((r) => ({
            base_url: `sim://${r.name}`,
            weight: r.weight ?? 1,
            ...(r.modalities && { input_modalities: r.modalities }),
            ...(r.provider && { provider: r.provider }),
          })),
        },
      ],
    }),
    { health, settings },
  );
}

let counter = 0;
export function req(over: Partial<RouteRequest> = {}): RouteRequest {
  return {
    requestId: `r${counter++}`,
    model: 'm',
    sessionId: null,
    callerId: null,
    inputTokens: 100,
    outputTokensHint: 10,
    stream: true,
    modalities: [],
    pin: null,
    prefixHashes: null,
    ...over,
  };
}

export const ok: Outcome = { kind: 'ok' };
export const fail503: Outcome = { kind: 'http_status', status: 503, errorClass: 'server_error', retryAfterMs: null };

export function dispatchOf(actions: LifecycleAction[]) {
  return actions.find((a): a is Extract<LifecycleAction, { kind: 'dispatch' }> => a.kind === 'dispatch');
}
export function doneOf(actions: LifecycleAction[]) {
  return actions.find((a): a is Extract<LifecycleAction, { kind: 'done' }> => a.kind === 'done');
}
export function errorOf(actions: LifecycleAction[]) {
  return actions.find((a): a is Extract<LifecycleAction, { kind: 'respond_error' }> => a.kind === 'respond_error');
}

/** Runs one request to completion where every attempt gets `outcomeFor(endpointId)`. */
export function runOne(core: RoutingCore, nowMs: number, rng: Rng, outcomeFor: (endpointId: string) => Outcome, r = req()) {
  const { life, actions } = core.start(r, nowMs, rng);
  const all = [...actions];
  let d = dispatchOf(actions);
  let guard = 0;
  while (d && !life.isDone && guard++ < 100) {
    const o = outcomeFor(d.endpointId);
    const next =
      o.kind === 'ok'
        ? [...life.step({ kind: 'first_token', attemptId: d.attemptId }, nowMs), ...life.step({ kind: 'finished', attemptId: d.attemptId, usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 } }, nowMs)]
        : life.step({ kind: 'failed', attemptId: d.attemptId, outcome: o }, nowMs);
    all.push(...next);
    d = dispatchOf(next);
  }
  life.invariants();
  return { life, actions: all, done: doneOf(all)!, error: errorOf(all) };
}

export const seeded = (seed: number, purpose = 'test') => deriveRng(seed, purpose);

/** An `Rng` that returns the given uniforms in order (then throws): scripted draws for exact tests. */
export function scriptedRng(...floats: number[]): Rng {
  let i = 0;
  const next = () => {
    if (i >= floats.length) throw new Error(`scripted rng ran out after ${floats.length} draws`);
    return floats[i++]!;
  };
  return { float: next, int: (n: number) => Math.floor(next() * n) };
}

/** Completes a started life with first_token then finished; returns its routing metadata. */
export function finish(life: RequestLife, actions: LifecycleAction[], nowMs: number) {
  const d = dispatchOf(actions)!;
  const out = [...life.step({ kind: 'first_token', attemptId: d.attemptId }, nowMs), ...life.step({ kind: 'finished', attemptId: d.attemptId, usage: { inputTokens: 1, outputTokens: 1, cachedTokens: 0 } }, nowMs)];
  return doneOf(out)!.metadata;
}

// Helpers for RouteWise tests: a real RoutingCore (which hands RouteWise the full route entries
// and installs its life tap), plus a small discrete-event driver for hosted routes with scripted TTFT distributions.
import {
  RoutingCore,
  parseModelsConfig,
  type LifecycleAction,
  type Outcome,
  type RequestLife,
  type RouteRequest,
  type Rng,
} from '../../../core/index.ts';
import { RouteWisePlanner } from '../../../core/strategies/routewise/routewise.ts';

export type RwRoute = Record<string, unknown> & { name: string };

/** A one-model core (`m`) routed by RouteWise with full route entries (`sim://<name>`), wired as in production. */
export function rwCore(routes: RwRoute[], params: Record<string, unknown> = {}, modelId = 'm') {
  const config = parseModelsConfig({
    models: [{ id: modelId, router: 'routewise', router_params: params, route: routes.map(({ name, ...rest }) => ({ base_url: `sim://${name}`, ...rest })) }],
  });
  const core = new RoutingCore(config);
  return { core, planner: core.model(modelId)!.planner as RouteWisePlanner };
}

/** `RoutingCore.start`: the core installs RouteWise's life tap itself. */
export function startTapped(core: RoutingCore, request: RouteRequest, nowMs: number, rng: Rng): { life: RequestLife; actions: LifecycleAction[] } {
  return core.start(request, nowMs, rng);
}

let counter = 0;
export function rreq(over: Partial<RouteRequest> = {}): RouteRequest {
  return { requestId: `rw${counter++}`, model: 'm', sessionId: null, callerId: null, inputTokens: 1000, outputTokensHint: 200, stream: true, modalities: [], pin: null, prefixHashes: null, ...over };
}

export const dispatches = (actions: LifecycleAction[]) => actions.filter((a): a is Extract<LifecycleAction, { kind: 'dispatch' }> => a.kind === 'dispatch');

/** How a simulated route answers one attempt: a TTFT (ms) or a failure after `afterMs`. */
export type Answer = { ttftMs: number; outputTokens?: number; decodeMs?: number } | { fail: Outcome; afterMs: number };

interface Ev {
  at: number;
  seq: number;
  run: () => void;
}

/** A minimal discrete-event driver: requests arrive, attempts answer per `answer`, time advances. */
export class MiniSim {
  private q: Ev[] = [];
  private seq = 0;
  now = 0;
  readonly results: Array<{ endpointId: string | null; ttftMs: number | null; status: string; attempts: number }> = [];

  constructor(
    private readonly core: RoutingCore,
    private readonly rng: Rng,
    private readonly answer: (endpointId: string, request: RouteRequest) => Answer,
  ) {}

  at(t: number, run: () => void): void {
    const e = { at: t, seq: this.seq++, run };
    let i = this.q.length;
    while (i > 0 && (this.q[i - 1]!.at > t || (this.q[i - 1]!.at === t && this.q[i - 1]!.seq > e.seq))) i--;
    this.q.splice(i, 0, e);
  }

  arrive(t: number, request: RouteRequest): void {
    this.at(t, () => {
      const { life, actions } = startTapped(this.core, request, this.now, this.rng);
      this.apply(life, request, actions, this.now);
    });
  }

  run(): void {
    while (this.q.length > 0) {
      const e = this.q.shift()!;
      this.now = e.at;
      e.run();
    }
  }

  private apply(life: RequestLife, request: RouteRequest, actions: LifecycleAction[], startMs: number): void {
    for (const a of actions) {
      if (a.kind === 'dispatch') {
        const ans = this.answer(a.endpointId, request);
        if ('fail' in ans) {
          this.at(this.now + ans.afterMs, () => this.apply(life, request, life.step({ kind: 'failed', attemptId: a.attemptId, outcome: ans.fail }, this.now), startMs));
        } else {
          this.at(this.now + ans.ttftMs, () => {
            this.apply(life, request, life.step({ kind: 'first_token', attemptId: a.attemptId }, this.now), startMs);
            this.at(this.now + (ans.decodeMs ?? 100), () =>
              this.apply(life, request, life.step({ kind: 'finished', attemptId: a.attemptId, usage: { inputTokens: request.inputTokens, outputTokens: ans.outputTokens ?? 200, cachedTokens: 0 } }, this.now), startMs),
            );
          });
        }
      } else if (a.kind === 'done') {
        const m = a.metadata;
        this.results.push({ endpointId: m.endpointId, ttftMs: m.firstTokenAtMs === null ? null : m.firstTokenAtMs - startMs, status: m.status, attempts: m.attempts.length });
        life.invariants();
      }
    }
  }
}

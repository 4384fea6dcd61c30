// Helpers for the full-lifecycle tests (issue #6): a model with local engines, a hosted route and
// an optional offload route, plus small action finders and a stepper that delivers wakeups.
import { RoutingCore, parseModelsConfig, type LifecycleAction, type LifecycleEvent, type RequestLife, type RouteRequest } from '../../../core/index.ts';
import { req, seeded } from '../harness.ts';

export interface LcOptions {
  offload?: Record<string, unknown> | null;
  settings?: Record<string, unknown>;
  router?: string;
  routerParams?: Record<string, unknown>;
  /** Extra route fields by name (engine, engine2, hosted, offload). */
  routes?: Partial<Record<'engine' | 'engine2' | 'hosted' | 'offload', Record<string, unknown> | null>>;
}

export const ENGINE = 'm:engine';
export const ENGINE2 = 'm:engine2';
export const HOSTED = 'm:hosted-api';
export const OFFLOAD = 'm:offload-api';

const BASE: Record<string, Record<string, unknown>> = {
  engine: { base_url: 'sim://engine', weight: 1 },
  engine2: { base_url: 'sim://engine2', weight: 1 },
  hosted: { base_url: 'https://api.hosted.com/v1', provider: 'hosted', weight: 1, api_key: 'k1' },
  offload: { base_url: 'https://api.offload.com/v1', provider: 'offload', weight: 1, api_key: 'k2' },
};

/** A core with model `m`; by default routes engine, hosted, offload and an offload policy on `offload`, wait 2 s. */
export function lcCore(o: LcOptions = {}): RoutingCore {
  const pick = (n: 'engine' | 'engine2' | 'hosted' | 'offload') => {
    const v = o.routes?.[n];
    return v === null ? false : n === 'engine2' ? v !== undefined : true;
  };
  const names = (['engine', 'engine2', 'hosted', 'offload'] as const).filter(pick);
  const route = names.map((n) => ({ ...BASE[n]!, ...(o.routes?.[n] ?? {}) }));
  const offload = o.offload === undefined ? { route: OFFLOAD, wait_sec: 2 } : o.offload;
  return new RoutingCore(
    parseModelsConfig({
      models: [{ id: 'm', router: o.router ?? 'failover', router_params: o.routerParams ?? {}, route, ...(offload && { offload }) }],
    }),
    { settings: { prefill_aware_enabled: false, affinity_enabled: false, ...(o.settings ?? {}) } },
  );
}

export const rq = (over: Partial<RouteRequest> = {}) => req({ model: 'm', ...over });
export const rng = () => seeded(7, 'lc');

type Act<K extends LifecycleAction['kind']> = Extract<LifecycleAction, { kind: K }>;
export function all<K extends LifecycleAction['kind']>(actions: LifecycleAction[], kind: K): Act<K>[] {
  return actions.filter((a): a is Act<K> => a.kind === kind);
}
export function one<K extends LifecycleAction['kind']>(actions: LifecycleAction[], kind: K): Act<K> | undefined {
  return all(actions, kind)[0];
}

/** A driver in miniature: tracks deadlines per life, delivers wakeups after every step. */
export class MiniDriver {
  now = 0;
  readonly timers: Array<{ life: RequestLife; id: number; atMs: number }> = [];
  readonly log = new Map<RequestLife, LifecycleAction[]>();
  constructor(readonly core: RoutingCore) {}

  start(r: RouteRequest): { life: RequestLife; actions: LifecycleAction[] } {
    const { life, actions } = this.core.start(r, this.now, rng());
    this.log.set(life, []);
    this.record(life, actions);
    return { life, actions: [...actions, ...this.wake()] };
  }

  step(life: RequestLife, e: LifecycleEvent): LifecycleAction[] {
    const a = life.step(e, this.now);
    this.record(life, a);
    return [...a, ...this.wake()];
  }

  /** Advances time to `ms`, firing due deadlines in time order; returns every action caused. */
  advanceTo(ms: number): LifecycleAction[] {
    const out: LifecycleAction[] = [];
    for (;;) {
      this.timers.sort((x, y) => x.atMs - y.atMs);
      const t = this.timers[0];
      if (!t || t.atMs > ms) break;
      this.timers.shift();
      this.now = Math.max(this.now, t.atMs);
      if (!t.life.isDone) out.push(...this.step(t.life, { kind: 'deadline', deadlineId: t.id }));
    }
    this.now = ms;
    return out;
  }

  private wake(): LifecycleAction[] {
    const out: LifecycleAction[] = [];
    for (let w = this.core.drainWakeups(); w.length > 0; w = this.core.drainWakeups()) {
      for (const x of w) {
        const a = x.life.step(x.event, this.now);
        this.record(x.life, a);
        out.push(...a);
      }
    }
    return out;
  }

  private record(life: RequestLife, actions: LifecycleAction[]): void {
    this.log.get(life)?.push(...actions);
    for (const a of actions) if (a.kind === 'wait_until') this.timers.push({ life, id: a.deadlineId, atMs: a.atMs });
  }

  /** Every action a life has produced so far (including those delivered via wakeups). */
  actionsOf(life: RequestLife): LifecycleAction[] {
    return this.log.get(life) ?? [];
  }
}

export const usage = { inputTokens: 1, outputTokens: 1, cachedTokens: 0 };

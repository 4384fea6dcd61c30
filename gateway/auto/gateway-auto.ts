/**
 * The auto models of one gateway generation (seed 000 "Auto 模型"): present only while the
 * runtime setting `auto_mode_enabled` is on (gateway.yaml, applied by a reload, unless the admin
 * API set a value at run time: `admin/runtime-settings-admin.ts`) and the
 * registry's `auto:` block checks out against the generation's models (YAML plus the admin
 * overlay). A bad block, or a profile named like a registered model, turns auto models off with
 * every problem logged; the gateway starts anyway. Conversations carry over a reload (the
 * router of the generation before, found by its core).
 *
 * Per request, `decideAuto` asks the core's `AutoRouter` with this gateway's facts: the caller
 * check is `Callers.mayUse` on the published model, admission is the core's health at the moment.
 */
import type { Logger } from 'pino';
import { AutoRouter, autoModelFacts, autoWorld, checkAutoBlock, smallestWindowTokens, type AutoDecision, type AutoMetadata, type AutoModelFacts, type ModelsConfig, type RoutingCore } from '../../core/index.ts';
import { Callers, type Caller } from '../callers.ts';
import type { ClientRequest } from '../request-body.ts';
import { autoRequestOf, servedAs, type AutoServing } from './auto-request.ts';

/** A generation's auto models. */
export interface GatewayAuto {
  readonly router: AutoRouter;
  /** Candidate facts by model id and alias. */
  readonly facts: ReadonlyMap<string, AutoModelFacts>;
  /** Names of each model (by id) that must not reach a client of an auto model, longest first. */
  readonly hiddenNames: ReadonlyMap<string, readonly string[]>;
  /** System-prompt substrings that mark a Claude Code permission check (`auto.permission_check`). */
  readonly permissionCheckSystemContains: readonly string[];
}

/** Routers by the core they were built with, so the next generation keeps their conversations. */
const routerOfCore = new WeakMap<RoutingCore, AutoRouter>();

/**
 * The auto models of a generation over `core` (built from `models`), or null when off.
 * `enabled`: the effective `auto_mode_enabled` (the runtime value, else gateway.yaml's). `carryFrom`: the core of the generation before.
 * `log`: problems and warnings are written there when `logProblems` (one worker logs for all).
 */
export function buildGatewayAuto(models: ModelsConfig, core: RoutingCore, enabled: boolean, carryFrom: RoutingCore | null, log: Logger, logProblems: boolean): GatewayAuto | null {
  if (!enabled || models.auto === undefined || models.auto === null) return null;
  const check = checkAutoBlock(models.auto, models.models);
  if (logProblems) {
    for (const w of check.warnings) log.warn({ event: 'auto_config_warning' }, w);
    if (check.config === null) log.error({ event: 'auto_config_invalid', problems: check.problems }, `auto models are off: ${check.problems.join('; ')}`);
  }
  if (check.config === null) return null;
  const router = new AutoRouter(check.config, carryFrom ? (routerOfCore.get(carryFrom) ?? null) : null);
  routerOfCore.set(core, router);
  const hiddenNames = new Map<string, readonly string[]>();
  for (const m of core.allModels()) {
    const names = new Set<string>([m.id, ...m.aliases]);
    for (const r of m.routes) if (r.providerModelId) names.add(r.providerModelId);
    for (const t of m.multiTarget?.targets ?? []) {
      names.add(t.model);
      if (t.route.providerModelId) names.add(t.route.providerModelId);
    }
    hiddenNames.set(m.id, [...names].sort((a, b) => b.length - a.length));
  }
  return { router, facts: autoModelFacts(core, models), hiddenNames, permissionCheckSystemContains: check.config.permissionCheckSystemContains };
}

/** Whether `caller` may name model `name` directly: published, and allowed by its key. */
function mayName(core: RoutingCore, caller: Caller, name: string): boolean {
  const m = core.model(name);
  return m !== undefined && m.published && Callers.mayUse(caller, name);
}

/** What `decideAuto` answers: the request to route (served), or the refusal with its log request. */
export type AutoOutcome =
  | { readonly kind: 'serve'; readonly req: ClientRequest }
  | { readonly kind: 'reject'; readonly status: number; readonly code: string; readonly message: string; readonly req: ClientRequest };

/**
 * The decision for `req` naming the served auto model `req.model` at `nowMs`.
 * @throws Error when `req.model` is not served (check `auto.router.profile` first).
 */
export function decideAuto(auto: GatewayAuto, core: RoutingCore, req: ClientRequest, caller: Caller, sessionId: string | null, nowMs: number): AutoOutcome {
  const world = autoWorld(core, auto.facts, (name) => mayName(core, caller, name), nowMs);
  const d: AutoDecision = auto.router.decide(req.model, autoRequestOf(req, caller.id, sessionId, auto.permissionCheckSystemContains), world, nowMs);
  if (d.kind === 'reject') {
    const serving: AutoServing = { publicModel: req.model, hiddenNames: [], stripThinking: 'none', metadata: d.metadata };
    return { kind: 'reject', status: d.status, code: d.code, message: d.message, req: { ...req, auto: serving } };
  }
  const id = core.model(d.model)?.id ?? d.model;
  const serving: AutoServing = { publicModel: req.model, hiddenNames: auto.hiddenNames.get(id) ?? [d.model], stripThinking: d.stripThinking, metadata: d.metadata };
  return { kind: 'serve', req: servedAs(req, d.model, d.applyEffort, auto.facts.get(d.model)?.maxOutputTokens ?? null, serving) };
}

/**
 * The serving side of a status or content request for a job (a video) that was submitted on the
 * auto model `name` and accepted by `endpointId`: the model that owns that endpoint, and the
 * `AutoServing` that keeps its names from the client. Null when `name` is no served profile, no
 * model owns `endpointId` any more, that model is not among the profile's candidates, or
 * `caller` may not name it.
 */
export function autoJobServing(auto: GatewayAuto, core: RoutingCore, caller: Caller, name: string, endpointId: string): { model: string; serving: AutoServing } | null {
  const p = auto.router.profile(name);
  if (p === undefined) return null;
  const owner = core.allModels().find((m) => m.routes.some((r) => r.endpointId === endpointId));
  if (owner === undefined || !mayName(core, caller, owner.id)) return null;
  const candidate = p.candidates.find((c) => core.model(c.model)?.id === owner.id);
  if (candidate === undefined) return null;
  const metadata: AutoMetadata = { profile: p.name, profileVersion: p.version, requested: name, candidates: p.candidates.map((c) => c.model), chosen: candidate.model, skips: [], sessionAction: 'job_fetch' };
  return { model: owner.id, serving: { publicModel: name, hiddenNames: auto.hiddenNames.get(owner.id) ?? [owner.id], stripThinking: 'none', metadata } };
}

/**
 * Whether `caller` may use the auto model `name` (a served profile with at least one candidate it
 * may name): what a stored `/v1/responses` response of an auto model needs before its caller reads
 * it back or chains onto it.
 */
export function mayUseAuto(auto: GatewayAuto, core: RoutingCore, caller: Caller, name: string): boolean {
  const p = auto.router.profile(name);
  return p !== undefined && p.candidates.some((c) => mayName(core, caller, c.model));
}

/** An auto model as `/v1/models` describes it to one caller. */
export interface AutoModelEntry {
  readonly name: string;
  /** The largest window among the caller's usable candidates (each model's smallest route window); null when one declares none. */
  readonly contextWindow: number | null;
  /** Every input type some usable candidate accepts. */
  readonly inputModalities: readonly string[];
  /** Some usable candidate takes tools. */
  readonly supportsTools: boolean;
}

/**
 * The auto models `caller` may see (at least one candidate it may name), in declaration order,
 * each with the largest window, modalities and tool support among those candidates.
 */
export function autoModelsFor(auto: GatewayAuto, core: RoutingCore, caller: Caller): AutoModelEntry[] {
  const out: AutoModelEntry[] = [];
  for (const name of auto.router.servedNames()) {
    const p = auto.router.profile(name)!;
    let any = false;
    let window: number | null = 0;
    let tools = false;
    const modalities = new Set<string>();
    for (const c of p.candidates) {
      const f = auto.facts.get(c.model);
      if (!f || !mayName(core, caller, c.model)) continue;
      any = true;
      tools ||= f.supportsTools;
      const w = smallestWindowTokens(f);
      window = window === null || w === null ? null : Math.max(window, w);
      for (const r of f.routes) {
        if (r.acceptsText) modalities.add('text');
        for (const x of r.modalities) modalities.add(x);
      }
    }
    if (any) out.push({ name, contextWindow: window, inputModalities: [...modalities], supportsTools: tools });
  }
  return out;
}

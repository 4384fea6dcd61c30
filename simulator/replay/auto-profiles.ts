/**
 * Auto profiles in a simulated run (seed 000 "Auto 模型"), through the core's `AutoRouter`: a
 * trace row naming an auto model is started on the candidate model it picks — the endpoint's
 * own direct model — with the same checks as the gateway's, on what a trace knows: the row's
 * prompt and output tokens (the output count stands for `max_tokens`), no tools, text only, no
 * effort. A row's conversation is its session (the trace's session id, else the request id) of
 * its simulated caller; traces do not record tool results, so no row is in a tool loop and every
 * row ranks the candidates again. Every simulated caller may use every model.
 */
import { AutoRouter, autoModelFacts, autoWorld, checkAutoBlock, type AutoModelFacts, type ModelsConfig, type RoutingCore } from '../../core/index.ts';

/** The auto models of one run. */
export interface SimAuto {
  readonly router: AutoRouter;
  readonly facts: ReadonlyMap<string, AutoModelFacts>;
}

/**
 * The run's auto models, or null when the experiment declares none.
 * @throws Error listing every problem of the block (`where` names the experiment and run).
 */
export function simulatedAuto(config: ModelsConfig, core: RoutingCore, where: string): SimAuto | null {
  if (config.auto === undefined) return null;
  const check = checkAutoBlock(config.auto, config.models);
  if (check.config === null) throw new Error(`${where}: auto: is invalid:\n  ${check.problems.join('\n  ')}`);
  return { router: new AutoRouter(check.config), facts: autoModelFacts(core, config) };
}

/** What a row is routed as: its model (unchanged unless it names an auto model), or the refusal's error code. */
export type SimAutoChoice = { readonly kind: 'route'; readonly model: string } | { readonly kind: 'reject'; readonly code: string };

/** The model row `model` is routed as at `nowMs` (see the file doc). */
export function autoChoice(auto: SimAuto | null, core: RoutingCore, model: string, callerId: string, conversation: string, inputTokens: number, outputTokens: number, nowMs: number): SimAutoChoice {
  if (auto === null || !auto.router.profile(model)) return { kind: 'route', model };
  const d = auto.router.decide(
    model,
    { callerId, sessionId: conversation, openingHash: '', toolLoop: false, inputTokens, maxTokens: outputTokens, modalities: [], hasTools: false, reasoningEffort: null },
    autoWorld(core, auto.facts, () => true, nowMs),
    nowMs,
  );
  return d.kind === 'serve' ? { kind: 'route', model: d.model } : { kind: 'reject', code: d.code };
}

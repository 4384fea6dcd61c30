/**
 * Which candidate of an auto profile serves a request (seed 000 "Auto 模型", "由哪个候选服务"):
 * the first, in the profile's order, that passes every check. A candidate is skipped, with the
 * reason recorded, when
 * - its model is not registered (`not_registered`), or the caller may not name it directly
 *   (`caller_not_allowed`);
 * - the request has tools and the model takes none (`tools_unsupported`);
 * - the request carries an input type (image, audio) no route of the model accepts (`modality_unsupported`);
 * - the prompt estimate × 1.25 plus `max_tokens` capped at the model's output limit exceeds the
 *   smallest context window its routes declare (`context_window`);
 * - the effort that would be sent — the request's own, else the candidate's — is not one the
 *   model declares (`reasoning_effort_unsupported`);
 * - no endpoint of the model admits an attempt now: provider disabled, every breaker open
 *   (`no_admitting_endpoint`).
 * When none passes, the answer's status follows the seed: 404 when the caller may use no
 * candidate (the unknown-model answer), 503 when every usable candidate that accepts the request
 * lacks an admitting endpoint, 400 when every usable model rejects the request. Pure.
 */
import type { Modality } from '../lifecycle/seam.ts';
import { acceptsModalities, type ModalRoute } from '../request/candidates/modality.ts';
import type { AutoCandidate, AutoProfile, ReasoningEffort } from './auto-config.ts';

/**
 * Headroom on the prompt estimate before it is compared with a window (seed 000: ×1.25), since
 * the byte-based estimate can undercount a real tokenizer.
 */
export const PROMPT_ESTIMATE_MARGIN = 1.25;

/** Why a candidate was skipped (see the file doc). */
export type AutoSkipReason =
  | 'not_registered'
  | 'caller_not_allowed'
  | 'tools_unsupported'
  | 'modality_unsupported'
  | 'context_window'
  | 'reasoning_effort_unsupported'
  | 'no_admitting_endpoint';

/** One skipped candidate. */
export interface AutoSkip {
  /** The candidate's model as configured. */
  readonly model: string;
  readonly reason: AutoSkipReason;
}

/** What the checks read of a request. */
export interface AutoRequestFacts {
  /** Estimated prompt tokens (integer ≥ 0). */
  readonly inputTokens: number;
  /** `max_completion_tokens` / `max_tokens`; null when unset. */
  readonly maxTokens: number | null;
  /** Input modalities beyond text. */
  readonly modalities: readonly Modality[];
  /** The request has a non-empty `tools` list. */
  readonly hasTools: boolean;
  /** The request's own `reasoning_effort`; null when it sets none. */
  readonly reasoningEffort: string | null;
}

/** What the checks read of a registered model. */
export interface AutoModelFacts {
  /** Canonical id. */
  readonly id: string;
  /** Its routes (a multi-target model: its targets' routes). */
  readonly routes: ReadonlyArray<ModalRoute & { readonly contextLength: number | null }>;
  readonly supportsTools: boolean;
  /** Declared efforts; null = undeclared (any passes). */
  readonly reasoningEfforts: readonly string[] | null;
  /** Output limit in tokens; null = undeclared. */
  readonly maxOutputTokens: number | null;
}

/** What the driver answers about models at decision time. */
export interface AutoCandidateWorld {
  /** The model named `name` (id or alias), or null when it is not registered. */
  model(name: string): AutoModelFacts | null;
  /** Whether the caller may name `name` directly. */
  mayUse(name: string): boolean;
  /** Whether some endpoint of model `id` admits an attempt now. */
  admits(id: string): boolean;
}

/** The selection's answer. */
export type AutoSelection =
  | {
      readonly kind: 'serve';
      /** Index of the chosen candidate in the profile. */
      readonly index: number;
      readonly candidate: AutoCandidate;
      readonly model: AutoModelFacts;
      /** The effort to send: null = leave the request as it is (its own, or none). */
      readonly applyEffort: ReasoningEffort | null;
      /** Candidates before the chosen one, each with why it was skipped. */
      readonly skips: readonly AutoSkip[];
    }
  | {
      readonly kind: 'reject';
      readonly status: 404 | 503 | 400;
      readonly code: 'model_not_found' | 'all_candidates_unavailable' | 'no_candidate_accepts';
      /** For the client: names only the auto model and the reasons, never a candidate model. */
      readonly message: string;
      readonly skips: readonly AutoSkip[];
    };

/** Tokens a window must hold for `request` on `model` (see the file doc); an integer. */
export function autoContextNeedTokens(request: AutoRequestFacts, model: Pick<AutoModelFacts, 'maxOutputTokens'>): number {
  const out = request.maxTokens === null ? 0 : model.maxOutputTokens === null ? request.maxTokens : Math.min(request.maxTokens, model.maxOutputTokens);
  return Math.ceil(request.inputTokens * PROMPT_ESTIMATE_MARGIN) + out;
}

/** The smallest context window `model`'s routes declare; null when none declares one. */
export function smallestWindowTokens(model: Pick<AutoModelFacts, 'routes'>): number | null {
  let w: number | null = null;
  for (const r of model.routes) if (r.contextLength !== null && (w === null || r.contextLength < w)) w = r.contextLength;
  return w;
}

/**
 * Why `candidate` cannot take `request` on its own terms (everything but the caller and the
 * endpoints), or null when it can.
 */
export function requestRejection(candidate: AutoCandidate, model: AutoModelFacts, request: AutoRequestFacts): AutoSkipReason | null {
  if (request.hasTools && !model.supportsTools) return 'tools_unsupported';
  if (request.modalities.length > 0 && !model.routes.some((r) => acceptsModalities(r, request.modalities))) return 'modality_unsupported';
  const window = smallestWindowTokens(model);
  if (window !== null && autoContextNeedTokens(request, model) > window) return 'context_window';
  const effort = request.reasoningEffort ?? candidate.reasoningEffort;
  if (effort !== null && model.reasoningEfforts !== null && !model.reasoningEfforts.includes(effort)) return 'reasoning_effort_unsupported';
  return null;
}

/** Why `candidate` cannot serve `request` now, or null when it can (every check of the file doc). */
export function skipReason(candidate: AutoCandidate, request: AutoRequestFacts, world: AutoCandidateWorld): AutoSkipReason | null {
  const model = world.model(candidate.model);
  if (model === null) return 'not_registered';
  if (!world.mayUse(candidate.model)) return 'caller_not_allowed';
  return requestRejection(candidate, model, request) ?? (world.admits(model.id) ? null : 'no_admitting_endpoint');
}

/**
 * The candidate of `profile` that serves `request`, or the rejection (see the file doc).
 * `first`: a candidate index tried before the others (a tool loop's current model); it is
 * skipped like any other when it cannot serve, and then the profile's order decides.
 */
export function selectCandidate(profile: AutoProfile, request: AutoRequestFacts, world: AutoCandidateWorld, first: number | null = null): AutoSelection {
  const skips: AutoSkip[] = [];
  let fit: WindowFit | null = null;
  const order: number[] = [];
  if (first !== null && first >= 0 && first < profile.candidates.length) order.push(first);
  for (let i = 0; i < profile.candidates.length; i++) if (i !== first) order.push(i);
  for (const i of order) {
    const c = profile.candidates[i]!;
    const reason = skipReason(c, request, world);
    if (reason === null) {
      const model = world.model(c.model)!;
      const applyEffort = request.reasoningEffort === null ? c.reasoningEffort : null;
      return { kind: 'serve', index: i, candidate: c, model, applyEffort, skips };
    }
    // A tool loop's model that cannot serve is recorded once, like the others.
    skips.push({ model: c.model, reason });
    if (reason === 'context_window') {
      const model = world.model(c.model)!;
      const need = autoContextNeedTokens(request, model);
      const window = smallestWindowTokens(model)!;
      fit = { needTokens: fit === null ? need : Math.min(fit.needTokens, need), largestWindowTokens: fit === null ? window : Math.max(fit.largestWindowTokens, window) };
    }
  }
  return rejection(profile, skips, fit);
}

/** The sizes behind a context-window rejection: the smallest need, the largest window (tokens). */
interface WindowFit {
  needTokens: number;
  largestWindowTokens: number;
}

function rejection(profile: AutoProfile, skips: readonly AutoSkip[], fit: WindowFit | null): AutoSelection {
  const usable = skips.filter((s) => s.reason !== 'not_registered' && s.reason !== 'caller_not_allowed');
  const name = profile.servedName;
  if (usable.length === 0) return { kind: 'reject', status: 404, code: 'model_not_found', message: `The model '${name}' does not exist or you do not have access to it.`, skips };
  if (usable.some((s) => s.reason === 'no_admitting_endpoint')) {
    return { kind: 'reject', status: 503, code: 'all_candidates_unavailable', message: `No model of '${name}' that could take this request is available right now; retry shortly.`, skips };
  }
  const reasons = [...new Set(usable.map((s) => (s.reason === 'context_window' && fit !== null ? `${REASON_TEXT.context_window} (it needs about ${fit.needTokens} tokens; the largest window is ${fit.largestWindowTokens}; shorten the prompt or lower max_tokens)` : REASON_TEXT[s.reason])))];
  return { kind: 'reject', status: 400, code: 'no_candidate_accepts', message: `No model of '${name}' accepts this request: ${reasons.join('; ')}.`, skips };
}

/** Client wording of each request-side reason (no model names: they reach the caller). */
const REASON_TEXT: Record<AutoSkipReason, string> = {
  not_registered: 'not available',
  caller_not_allowed: 'not available',
  tools_unsupported: 'the request has tools, which a model does not support',
  modality_unsupported: 'the request has an input type (image or audio) a model does not accept',
  context_window: 'the prompt plus max_tokens is longer than a model\'s context window',
  reasoning_effort_unsupported: 'the reasoning_effort is not one a model accepts',
  no_admitting_endpoint: 'no endpoint available',
};

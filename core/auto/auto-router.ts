/**
 * Auto models (seed 000 "Auto 模型"): a request naming `auto-<profile>` (or plain `auto`) is
 * handed to one candidate model of the profile and is then routed exactly as a request naming
 * that model. `AutoRouter` joins the pieces: the checked `auto:` block, the candidate checks
 * (`select-candidate.ts`) and the conversation table (`auto-sessions.ts`).
 *
 * Sessions: while a conversation is in a tool loop (its last message is a tool result) it stays
 * on its current model unless that model can no longer serve; a new user turn ranks the
 * candidates again, so a conversation that fell back returns to the preferred model once it
 * recovers. Once a conversation has been served by two models, its history holds thinking that
 * another model wrote: the decision asks the driver to strip thinking blocks before an
 * Anthropic-native upstream (which rejects them), keeping the last tool-loop step's when the
 * current model wrote it.
 *
 * Claude Code's tool permission checks are side calls that share the session but not the
 * opening of the conversation they check for: such a request (`permissionCheck`) is served by
 * the conversation's current model — its own conversation's when it has one, else the one last
 * served in its declared session — like a tool loop that stays (another candidate only when that
 * model cannot serve), and it records nothing: no entry created, moved or marked switched.
 *
 * The decision is data (`AutoDecision`) with what the request log records as `metadata.auto`.
 * Time comes in as `nowMs`.
 */
import type { AutoConfig, AutoProfile, ReasoningEffort } from './auto-config.ts';
import { AutoSessions, autoSessionKey } from './auto-sessions.ts';
import { selectCandidate, type AutoCandidateWorld, type AutoRequestFacts, type AutoSkip } from './select-candidate.ts';

/** What the router reads of a request beyond the candidate checks. */
export interface AutoRequest extends AutoRequestFacts {
  /** The caller's id (the conversation key's first part). */
  readonly callerId: string;
  /** The client-declared session; null when none. */
  readonly sessionId: string | null;
  /** `openingMessagesHash` of the conversation. */
  readonly openingHash: string;
  /** The last message is a tool result (the conversation is in a tool loop). */
  readonly toolLoop: boolean;
  /**
   * The request is a tool permission check of Claude Code (a side call asking whether a tool use
   * may go ahead): it is served by the conversation's current model and changes no session
   * state. Absent ⇒ false.
   */
  readonly permissionCheck?: boolean;
}

/**
 * What the session table did: `new` (no live conversation), `kept` (tool loop on its model),
 * `switched` (tool loop whose model can no longer serve), `ranked` (a new user turn ranked again),
 * `permission_check` (a Claude Code permission check: served, the table left as it was),
 * `job_fetch` (a status or content request of a job, e.g. a video, submitted on the auto model:
 * served by the model that accepted the job, no ranking, the table left as it was).
 */
export type AutoSessionAction = 'new' | 'kept' | 'switched' | 'ranked' | 'permission_check' | 'job_fetch';

/**
 * Thinking blocks to drop before an Anthropic-native upstream: `none`; `all`; `all_but_last_step`
 * (every assistant turn's but the last one's, which the current model wrote in this tool loop).
 */
export type ThinkingStrip = 'none' | 'all' | 'all_but_last_step';

/** `metadata.auto` of the request log. */
export interface AutoMetadata {
  /** The profile's name (`balance`) and version hash. */
  readonly profile: string;
  readonly profileVersion: string;
  /** The name the client used (`auto-balance`, `auto`). */
  readonly requested: string;
  /** Candidate models in the profile's order. */
  readonly candidates: readonly string[];
  /** The chosen candidate's model; null when none served. */
  readonly chosen: string | null;
  /** Skipped candidates with reasons, in the order they were checked. */
  readonly skips: readonly AutoSkip[];
  readonly sessionAction: AutoSessionAction;
}

/** The router's answer for one request. */
export type AutoDecision =
  | {
      readonly kind: 'serve';
      /** The model the request is routed as (the candidate's, as configured). */
      readonly model: string;
      /** The effort to set on the request; null = leave it as sent. */
      readonly applyEffort: ReasoningEffort | null;
      readonly stripThinking: ThinkingStrip;
      readonly metadata: AutoMetadata;
    }
  | {
      readonly kind: 'reject';
      readonly status: 404 | 503 | 400;
      readonly code: 'model_not_found' | 'all_candidates_unavailable' | 'no_candidate_accepts';
      readonly message: string;
      readonly metadata: AutoMetadata;
    };

/** The auto models of one configuration. */
export class AutoRouter {
  readonly sessions: AutoSessions;

  /**
   * @param config the checked `auto:` block (`checkAutoBlock`).
   * @param carryFrom a previous router whose sessions this one keeps (a reload with the same session bounds).
   */
  constructor(
    readonly config: AutoConfig,
    carryFrom: AutoRouter | null = null,
  ) {
    const idleMs = config.sessionIdleTimeoutSec * 1000;
    const prev = carryFrom?.sessions;
    this.sessions = prev && prev.idleTimeoutMs === idleMs && prev.maxSessions === config.maxSessions ? prev : new AutoSessions(idleMs, config.maxSessions);
  }

  /** The profile served under `name` (`auto`, `auto-balance`), or undefined. */
  profile(name: string): AutoProfile | undefined {
    return this.config.profiles.get(name);
  }

  /** Every served name (`auto` included when a default profile is set), in declaration order. */
  servedNames(): string[] {
    return [...this.config.profiles.keys()];
  }

  /**
   * Decides who serves `request` for the auto model `name` at `nowMs`, and records the
   * conversation's model when one serves (see the file doc).
   * @throws Error when `name` is not a served auto model (the driver checks `profile` first).
   */
  decide(name: string, request: AutoRequest, world: AutoCandidateWorld, nowMs: number): AutoDecision {
    const profile = this.config.profiles.get(name);
    if (!profile) throw new Error(`'${name}' is not a served auto model; served: ${this.servedNames().join(', ')}`);
    const key = autoSessionKey(request.callerId, request.sessionId, request.openingHash);
    if (request.permissionCheck === true) return this.permissionCheck(profile, name, key, request, world, nowMs);
    const entry = this.sessions.get(key, nowMs);
    const current = entry !== null && entry.profile === profile.servedName ? profile.candidates.findIndex((c) => c.model === entry.model) : -1;
    const stay = request.toolLoop && current >= 0;
    const sel = selectCandidate(profile, request, world, stay ? current : null);
    const base = { profile: profile.name, profileVersion: profile.version, requested: name, candidates: profile.candidates.map((c) => c.model) };
    const action: AutoSessionAction = current < 0 ? 'new' : !request.toolLoop ? 'ranked' : sel.kind === 'serve' && sel.index === current ? 'kept' : 'switched';
    if (sel.kind === 'reject') return { kind: 'reject', status: sel.status, code: sel.code, message: sel.message, metadata: { ...base, chosen: null, skips: sel.skips, sessionAction: action } };
    const recorded = this.sessions.record(key, profile.servedName, sel.candidate.model, nowMs);
    const stripThinking: ThinkingStrip = !recorded.switched ? 'none' : action === 'kept' ? 'all_but_last_step' : 'all';
    return {
      kind: 'serve',
      model: sel.candidate.model,
      applyEffort: sel.applyEffort,
      stripThinking,
      metadata: { ...base, chosen: sel.candidate.model, skips: sel.skips, sessionAction: action },
    };
  }

  /** `decide` for a permission check (see the file doc): the current model first, nothing recorded. */
  private permissionCheck(profile: AutoProfile, name: string, key: string, request: AutoRequest, world: AutoCandidateWorld, nowMs: number): AutoDecision {
    const own = this.sessions.peek(key, nowMs);
    const entry = own ?? this.sessions.latestInSession(request.callerId, request.sessionId, nowMs)?.entry ?? null;
    const current = entry !== null && entry.profile === profile.servedName ? profile.candidates.findIndex((c) => c.model === entry.model) : -1;
    const sel = selectCandidate(profile, request, world, current >= 0 ? current : null);
    const base = { profile: profile.name, profileVersion: profile.version, requested: name, candidates: profile.candidates.map((c) => c.model) };
    if (sel.kind === 'reject') return { kind: 'reject', status: sel.status, code: sel.code, message: sel.message, metadata: { ...base, chosen: null, skips: sel.skips, sessionAction: 'permission_check' } };
    // Only the check's own conversation history can hold thinking; strip as a switch would.
    const onCurrent = current >= 0 && sel.index === current;
    const stripThinking: ThinkingStrip = own === null ? 'none' : onCurrent ? (own.switched ? 'all_but_last_step' : 'none') : 'all';
    return { kind: 'serve', model: sel.candidate.model, applyEffort: sel.applyEffort, stripThinking, metadata: { ...base, chosen: sel.candidate.model, skips: sel.skips, sessionAction: 'permission_check' } };
  }
}

/**
 * Queue-wait offload for one request (seed 000 "排队等待卸载", "引擎等待", "最大卸载输入"): a model
 * with an active offload policy names one route (usually a remote API) that is never the primary
 * while another route is admissible. An attempt on any other route that waits too long — for an
 * outbound slot or engine-hold place, or (streams) for its first output — is cut short and the
 * request moves to the offload route, at most once; when that fails too, the remaining routes run
 * and then the interrupted route once more, with no offload deadlines. A prompt over the policy's
 * `max_input_tokens` or the offload route's window never offloads.
 *
 * This plan holds the per-request state; the life asks it and starts the attempts.
 */
import type { ResolvedModel, ResolvedRoute } from '../../model/resolved-model.ts';
import type { OffloadPolicy } from '../../offload/offload-policy.ts';
import type { Admission } from '../../admission/admission.ts';

/** Why the offload route was tried (`RoutingMetadata.offloadReason`). */
export type OffloadReason = 'queue_wait' | 'engine_wait' | 'last_resort';

/** One request's offload state. */
export class OffloadPlan {
  /** The model's active offload policy, or null (then nothing here ever applies). */
  readonly policy: OffloadPolicy | null;
  /** The offload route's endpoint id when the policy is active (never the primary then). */
  readonly endpointId: string | null;
  /** Why the offload route was tried, once it was; null before. */
  reason: OffloadReason | null = null;
  /** The route an offload interrupted; tried once more after every other candidate. */
  interrupted: ResolvedRoute | null = null;
  /** The offload route when this request may use it (not pinned, fits its size limits). */
  private route: ResolvedRoute | null = null;
  private interruptedRetried = false;

  constructor(model: ResolvedModel | null) {
    const p = model?.offload;
    this.policy = p && p.active ? p : null;
    this.endpointId = this.policy?.endpointId ?? null;
  }

  /** Whether the offload route was tried. */
  get offloaded(): boolean {
    return this.reason !== null;
  }

  /** The policy's wait (queue or first output) before an attempt is cut short, ms. */
  get waitMs(): number {
    return this.policy?.waitMs ?? 0;
  }

  /**
   * At selection: lets this request use the offload route if it is among `routes` (those that
   * passed the modality and context stages) and the prompt of `inputTokens` fits its limits.
   */
  consider(routes: readonly ResolvedRoute[], inputTokens: number): void {
    if (this.policy === null) return;
    const r = routes.find((x) => x.endpointId === this.endpointId) ?? null;
    const maxIn = this.policy.maxInputTokens;
    const fits = r !== null && (maxIn === null || inputTokens <= maxIn) && (r.contextLength === null || inputTokens <= r.contextLength);
    this.route = fits ? r : null;
  }

  /**
   * The offload route when it is available to this request now: not yet tried, above the
   * context floor, and (unless `nowMs` < 0, which skips admission) admitted by every check gate
   * and the breaker. Null otherwise.
   */
  available(contextFloor: number | null, admission: Admission, nowMs: number): ResolvedRoute | null {
    const r = this.route;
    if (r === null || this.reason !== null) return null;
    if (contextFloor !== null && !(r.contextLength !== null && r.contextLength > contextFloor)) return null;
    if (nowMs >= 0 && (!admission.admits(r, nowMs) || !admission.gates.breaker.admits(r, nowMs))) return null;
    return r;
  }

  /** Whether an attempt on `endpointId` that may be interrupted (`normal` role) can still be cut short for offload. */
  interruptible(interruptibleRole: boolean, endpointId: string, contextFloor: number | null, admission: Admission): boolean {
    return interruptibleRole && endpointId !== this.endpointId && this.available(contextFloor, admission, -1) !== null;
  }

  /** Records that the offload attempt started for `reason`. */
  taken(reason: OffloadReason): void {
    this.reason = reason;
  }

  /** The interrupted route for its one more try after the offload, or null (then or never). */
  takeInterruptedRetry(): ResolvedRoute | null {
    if (this.interrupted === null || this.interruptedRetried || this.reason === null) return null;
    this.interruptedRetried = true;
    return this.interrupted;
  }
}

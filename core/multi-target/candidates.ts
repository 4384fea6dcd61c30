/**
 * The candidate pipeline of a multi-target request (seed 003 "route by request tags", "CIDR
 * filters", "priority tiers"), before any strategy runs — a pure function of the model and the
 * request:
 *
 * 1. Tags. An untagged request uses the targets tagged `default` if there are any, else all
 *    targets. A tagged request uses the targets carrying any of its tags; when none does, the
 *    `default` targets; when there are none either, the request is rejected (400).
 * 2. CIDR. A target with `allowed_cidrs` is a candidate only for callers inside one of them (a
 *    request without a client IP is outside). When every target left by the tags excludes the
 *    caller: 403. Filtered targets are never attempted and cost no fallback budget.
 * 3. Endpoint family, then modalities. A target whose route does not serve the request's
 *    endpoint family is not a candidate; none left ⇒ 400 naming the endpoint — unless the
 *    request says every target must serve it (`RouteRequest.targetMustServe`), when such a
 *    target stays and the walk ends the request on reaching it (`targetCannotServe`). Likewise a target
 *    whose route does not accept the request's input modalities; none left ⇒ 503 naming them.
 * 4. Tiers: the rest, grouped by `priority`, highest first, each in declaration order. Because
 *    the filters run first, a lower tier can serve a request that a filter kept from a healthy
 *    higher tier.
 *
 * Runtime admission (cooldown, rate limits, the fallback budget) happens later, in the lifecycle.
 */
import type { ErrorCode } from '../lifecycle/errors.ts';
import type { RouteRequest } from '../lifecycle/seam.ts';
import { cidrContains, parseIp } from './cidr.ts';
import { acceptsModalities } from '../request/candidates/modality.ts';
import { noRouteServesMessage, servesFamily } from '../request/candidates/endpoint-family.ts';
import { DEFAULT_TAG, type ResolvedMultiTarget, type ResolvedTarget } from './multi-target-model.ts';

/** The pipeline's result: tiers to walk, or a rejection with its error code. */
export type CandidateSelection =
  | { readonly kind: 'tiers'; readonly tiers: ReadonlyArray<readonly ResolvedTarget[]> }
  | { readonly kind: 'reject'; readonly code: ErrorCode; readonly message: string };

/** The request header carrying routing tags (comma separated); drivers never forward it upstream. */
export const ROUTING_TAGS_HEADER = 'x-switchyard-routing-tags';

/** Request tags normalised: trimmed, lower-cased, empties dropped, order kept. */
export function normaliseTags(tags: readonly string[] | null | undefined): string[] {
  if (!tags) return [];
  const out: string[] = [];
  for (const t of tags) {
    const x = t.trim().toLowerCase();
    if (x !== '') out.push(x);
  }
  return out;
}

/**
 * Splits a raw `x-switchyard-routing-tags` header value on commas (for drivers); normalised as
 * `normaliseTags` does.
 */
export function parseRoutingTagsHeader(value: string | null | undefined): string[] {
  return value ? normaliseTags(value.split(',')) : [];
}

/**
 * Runs steps 1–4 for `request` on the model `modelId` with block `mt`.
 * Rejections: `routing_tags_unmatched` (400), `forbidden_by_cidr` (403),
 * `endpoint_not_served` (400), `all_candidates_unavailable` (503, modalities).
 */
export function selectCandidates(modelId: string, mt: ResolvedMultiTarget, request: RouteRequest): CandidateSelection {
  const tags = normaliseTags(request.routingTags);
  let pool: readonly ResolvedTarget[];
  if (tags.length === 0) {
    pool = mt.hasDefaultTag ? mt.targets.filter((t) => t.tags.includes(DEFAULT_TAG)) : mt.targets;
  } else {
    const matched = mt.targets.filter((t) => t.tags.some((x) => tags.includes(x)));
    if (matched.length > 0) pool = matched;
    else if (mt.hasDefaultTag) pool = mt.targets.filter((t) => t.tags.includes(DEFAULT_TAG));
    else {
      return { kind: 'reject', code: 'routing_tags_unmatched', message: `routing tags [${tags.join(', ')}] match no target of model '${modelId}' and no target is tagged '${DEFAULT_TAG}'` };
    }
  }

  if (pool.some((t) => t.allowedCidrs !== null)) {
    const ip = request.clientIp ? parseIp(request.clientIp) : null;
    const admitted = pool.filter((t) => t.allowedCidrs === null || (ip !== null && t.allowedCidrs.some((b) => cidrContains(b, ip))));
    if (admitted.length === 0) {
      return { kind: 'reject', code: 'forbidden_by_cidr', message: `client ${request.clientIp ?? '(unknown address)'} is outside allowed_cidrs of every eligible target of model '${modelId}'` };
    }
    pool = admitted;
  }

  const family = request.endpoint;
  // A family every target must serve keeps the others: the walk ends the request on reaching one.
  if (family != null && !request.targetMustServe && !pool.every((t) => servesFamily(t.route, family))) {
    pool = pool.filter((t) => servesFamily(t.route, family));
    if (pool.length === 0) return { kind: 'reject', code: 'endpoint_not_served', message: noRouteServesMessage(modelId, family, 'target') };
  }

  const capable = pool.filter((t) => acceptsModalities(t.route, request.modalities));
  if (capable.length === 0) {
    return { kind: 'reject', code: 'modality_not_supported', message: `No target of model '${modelId}' accepts ${request.modalities.join(' or ')} input; send text only, or use a model whose routes list ${request.modalities.join(', ')} in input_modalities.` };
  }

  const priorities = [...new Set(capable.map((t) => t.priority))].sort((a, b) => b - a);
  return { kind: 'tiers', tiers: priorities.map((p) => capable.filter((t) => t.priority === p)) };
}

/**
 * Why target `t` cannot serve the request's endpoint family, when the request says every target
 * must serve it (`RouteRequest.targetMustServe`, seed 003 "支持的端点": a non-retryable failure
 * naming the alias and the target; 400 when its provider is not one for the family, the family's
 * own status — 501 for a missing capability — when its kind could serve the family but its
 * route does not); null when it can, or when the request sets no such rule.
 */
export function targetCannotServe(modelId: string, t: ResolvedTarget, request: RouteRequest): { code: ErrorCode; status: number; message: string } | null {
  const rule = request.targetMustServe;
  const family = request.endpoint;
  if (!rule || family == null || servesFamily(t.route, family)) return null;
  if (!rule.providerKinds.includes(t.route.kind)) {
    return { code: 'target_cannot_serve', status: rule.notProviderStatus, message: `model \`${modelId}\` (target \`${t.model}\`) is not a provider of the '${family}' endpoint: routes of kind '${t.route.kind}' cannot serve it; use only targets whose routes serve '${family}'` };
  }
  return { code: 'target_cannot_serve', status: rule.status, message: `model \`${modelId}\` (target \`${t.model}\`) does not support the '${family}' endpoint: its route does not list '${family}' in endpoints:; add it there or remove the target from the group` };
}

/**
 * The public surface of Switchyard's routing core. Drivers import from here only.
 * Sans-I/O and deterministic: time comes in as `nowMs`, randomness as an `Rng`.
 */

// Time and randomness: the caller owns the clock and the seeded streams.
export { createRng, deriveRng, type Rng } from './rng.ts';

// Configuration: models.yaml (zod schema), routing settings, endpoint ids.
export {
  parseModelsConfig,
  formatConfigError,
  ModelsConfigSchema,
  RouteSchema,
  MAX_ROUTE_WEIGHT,
  MAX_OFFLOAD_WAIT_SEC,
  type ModelsConfig,
  type ModelConfig,
  type RouteConfig,
} from './config/models-config.ts';
export type { OffloadConfig } from './config/models-config.ts';
export type { MultiTargetConfig, TargetConfig, CooldownConfig, HealthCheckConfig } from './config/models-config.ts';
export { QuotaWindowConfigSchema } from './config/models-config.ts';
export { endpointId, endpointLocation } from './config/endpoint-id.ts';
export { allowedKeys, closestName, closestPath, unknownPathSegment, type UnknownSegment } from './config/field-names.ts';
export { readableIssue, type ReadableIssue } from './config/readable-issue.ts';
export { yamlSyntaxReport, formatYamlSyntaxError, type YamlErrorLike, type YamlSyntaxReport } from './config/yaml-syntax.ts';
export {
  DEFAULT_ROUTING_SETTINGS,
  RoutingSettingsSchema,
  parseRoutingSettings,
  resolveRoutingSettings,
  routingSettingsFromEnv,
  routingEnvName,
  ROUTING_ENV_NAMES,
  type RoutingSettings,
} from './config/routing-settings.ts';

// The composition root and the resolved model registry.
export { RoutingCore, type RoutingCoreOptions } from './routing-core.ts';
export type { RouteOverlay } from './config/route-overlay.ts';
export { overlaidRouterParams, ROUTEWISE_STRATEGY } from './config/route-overlay.ts';
export type { ResolvedModel, ResolvedRoute, RoutePricing, RouteExclusion, ExclusionReason, ResolvedMultiTarget, ResolvedTarget } from './model/resolved-model.ts';

// A request's life: the seam drivers step, the shared state of the per-model life, and the
// attempt policy each model family follows (commit rule, waits, offload, backoff, retries).
export type {
  RouteRequest,
  TargetMustServe,
  RequestLife,
  LifecycleEvent,
  LifecycleAction,
  RoutingMetadata,
  AttemptRecord,
  CancelReason,
  Modality,
  EndpointFamilyName,
  Usage,
  AttemptKey,
} from './lifecycle/seam.ts';
export type { LifecycleDeps } from './request/router-deps.ts';
export type { MultiTargetDeps } from './request/alias-deps.ts';
export type { OffloadReason } from './request/policy/offload.ts';
export { startRequestLife, routerLife, type LifeDeps } from './request/request-life.ts';
export { routerPolicy, aliasPolicy, type RequestKindPolicy } from './request/policy/kind-policy.ts';
export { commitsAt, type CommitPoint, type CommitEvent } from './request/policy/commit.ts';
export { attemptTotalAtMs, firstTokenAtMs, type AttemptWaits } from './request/policy/attempt-deadlines.ts';
export { backoffMs, type BackoffPolicy } from './request/policy/backoff.ts';
export { classifyFailure, type FailureClass, type RetryCause, type RetryRules } from './request/policy/retry-policy.ts';
export { DeadlineBook, type DeadlineKind } from './request/deadline-book.ts';

// Outcomes: the classification table, health meaning, the client-facing error catalogue.
export { isHealthFailure, type Outcome, type SharedUnitKind } from './lifecycle/outcome.ts';
export { classifyStatus, classifyUpstreamError, OUTCOME_RULES, CONTEXT_LENGTH_WORDING, type HttpErrorClass, type OutcomeRule, type FailureAction, type UpstreamErrorReport } from './lifecycle/outcome-table.ts';
export { ERROR_STATUS, errorForOutcome, type ErrorCode } from './lifecycle/errors.ts';

// Admission: the gates every attempt asks, one file each, composed per model kind.
export { Admission, buildAdmissions, type AdmissionGates, type AdmissionState, type TicketHolder } from './admission/admission.ts';
export type { AdmissionGate, AdmissionTarget, GateName } from './admission/gate.ts';
export type { QueueGate, QueueTarget } from './admission/queue-gate.ts';
export { BreakerGate } from './admission/breaker-claim.ts';
export { CooldownGate } from './admission/cooldown-gate.ts';
export { RetryAfterGate } from './admission/retry-after-gate.ts';
export { TargetRateLimitGate } from './admission/target-rate-limit-gate.ts';
export { OutboundSlotGate, slotResultOf } from './admission/outbound-slot.ts';
export { EngineHoldGate } from './admission/engine-hold-gate.ts';
export { HealthCheckGate } from './admission/health-check-gate.ts';
export { KeyPoolGate } from './admission/key-pool-gate.ts';
export { CALLER_ROLES, roleRank, roleMeets, stricterRole, type CallerRole, type RequestRole } from './keys/caller-role.ts';
export { KeyPool, mergeKeyDeclarations, DEFAULT_KEY_POOL_OPTIONS, type KeyPick, type KeyPoolOptions, type PoolKeyDeclaration } from './keys/key-pool.ts';
export { KeyPools, isKeyRelatedFailure, DEFAULT_KEY_SILENCE_MS, KEY_RELATED_STATUSES, type RouteKeyDeclaration } from './keys/key-pools.ts';
export { keyFingerprint, poolKeyId, routeKeyDeclarations } from './keys/route-keys.ts';
export { kindTakesReservations, OWN_CREDENTIAL_KINDS } from './keys/own-credential-kinds.ts';

// Shared state the gates read: endpoint health, cooldowns, Retry-After, slot pools.
export { HealthRegistry, DEFAULT_HEALTH_OPTIONS, type HealthOptions, type DispatchClaim, type EndpointHealthSnapshot } from './health/health-registry.ts';
export type { BreakerState, BreakerTransition } from './health/health-registry.ts';
export { parseRetryAfterMs, RetryAfterTable } from './health/retry-after.ts';
export { OutboundLimiter, type OutboundLimiterOptions, type SlotResult } from './outbound/outbound-limiter.ts';
export { EngineHold } from './outbound/engine-hold.ts';
export { SlotPool, type SlotTicket } from './outbound/slot-pool.ts';
export { CooldownRegistry, type CooldownPolicy, type CooldownStatus, type CooldownStarted } from './health/cooldown.ts';
export {
  HealthCheckRegistry,
  HEALTH_CHECK_FAILED,
  checkHealthCheckPolicy,
  configureHealthChecks,
  healthCheckPolicy,
  type HealthCheckMode,
  type HealthCheckPolicy,
  type HealthCheckResult,
  type HealthCheckStatus,
  type HealthCheckTransition,
} from './health/health-checks.ts';

// Signals strategies read: prefill load and prompt sizes, session affinity, endpoint stats, hashing.
export {
  estimatePromptTokens,
  utf8ByteLength,
  BYTES_PER_TOKEN,
  TOKENS_PER_IMAGE,
  TOKENS_PER_AUDIO,
  type PromptSizeEstimate,
} from './prefill/prompt-size.ts';
export {
  PrefillLoad,
  estimateUncachedTokens,
  PROMPT_HINT_SWEEP_THRESHOLD,
  type PrefillLease,
  type PrefillLoadView,
  type EndpointPrefillSnapshot,
} from './prefill/prefill-load.ts';
export { chooseOfTwo, elephantAvoids, p2cSharesOneBusy } from './prefill/two-choices.ts';
export { AffinityTable, type AffinityPin } from './affinity/affinity-table.ts';
export { deriveAffinityKey, ipBucket, fnv1a64Hex, ANONYMOUS_AFFINITY_KEY, type CallerIdentity } from './affinity/affinity-key.ts';
export { EndpointStats, DEFAULT_LATENCY_EWMA_ALPHA, type EndpointStatsView, type EndpointStatsSnapshot } from './stats/endpoint-stats.ts';
export { ROUTING_KEY_HEADER, DEFAULT_HASH_ON, type HashSource } from './hashing/hash-key.ts';

// Strategies: the planner contract and registry.
export { StrategyRegistry, BUILTIN_STRATEGIES } from './strategies/registry.ts';
export type { Planner, Candidate, Pick, HedgeOrder, StrategyDefinition, PlannerRoute, PlannerContext } from './strategies/planner.ts';
export { planOrder, type Ordering } from './strategies/planner.ts';
export { StrategyModules, strategyFromModule, checkedPlanner, paramsSchemaFromShape, fileStrategyName, type StrategyModuleRecord, type ExternalStrategy, type ModuleImporter } from './strategies/strategy-module.ts';
export { withoutUnavailableModels, type UnavailableModel } from './model/unavailable-models.ts';

// Multi-target models (seed 003): deployment options, request headers, status rows.
export { DEFAULT_TAG } from './multi-target/multi-target-model.ts';
export { DEFAULT_MULTI_TARGET_OPTIONS, resolveMultiTargetOptions, type MultiTargetOptions } from './multi-target/multi-target-options.ts';
export { ROUTING_TAGS_HEADER, parseRoutingTagsHeader } from './multi-target/candidates.ts';
export type { MultiTargetStatus, TargetStatusRow } from './multi-target/target-status.ts';

// Queue-wait offload (seed 000).
export { resolveOffloadPolicy, type OffloadPolicy, type OffloadInactiveReason } from './offload/offload-policy.ts';

// RouteWise (seed 000 "RouteWise"): the planner, its tap, and its pure parts.
export { RouteWisePlanner, routeWiseStrategy, EnvelopeNotCalibratedError, type RouteWiseDecision, type QuotaSourceStatus, type ReplayedRequest } from './strategies/routewise/routewise.ts';
export { QuotaSnapshotStore, matchesSelector, describeSelector, type QuotaSourceSelector, type QuotaUsageRecord, type ProviderSnapshot } from './strategies/routewise/quota-source.ts';
export { LocalDailyCounter, localDayNumber, nextLocalMidnightUnixMs } from './strategies/routewise/local-daily-counter.ts';
export { RouteWiseParamsSchema, parseRouteWiseParams, BUDGET_ALPHA_HEADER, MOVED_TO_ROUTE, type RouteWiseParams } from './strategies/routewise/params.ts';
export { RouteWiseLifeTap, type AttemptDetail, type AttemptObserver } from './strategies/routewise/life-tap.ts';
export { routeWiseRoute, routeWiseRouteFromPlanner, type RouteWiseRoute, type RouteWisePlannerRoute } from './strategies/routewise/route-spec.ts';
export { onDemandCostUsd, quotaShadowCostUsd, concurrencyCostUsd, QUOTA_Z_CAP, type ProviderType, type TokenPricing } from './strategies/routewise/effective-cost.ts';
export { budgetUsd, type Budget } from './strategies/routewise/budget.ts';
export { solveLatencyLp, drawFromMix, emptyLpSolution, type LpSolution } from './strategies/routewise/lp.ts';
export { LatencyProfile, type LatencyProfileOptions, type ProfileCounts } from './strategies/routewise/latency-profile.ts';
export { HedgeGrid, planHedge, planHedgeArrays, hedgeCheckpointsMs, hedgeSuccessProbability, primaryOnlyProbability, type CdfSource, type HedgeBackup, type HedgePlan } from './strategies/routewise/hedge.ts';
export { OutputLengthPredictor, lengthBucket, DEFAULT_OUTPUT_LENGTH_OPTIONS, type OutputLengthOptions } from './strategies/routewise/output-length.ts';
export { CostEnvelope, floorEnvelope, ENVELOPE_FLOOR_RATIO, type Envelope, type CostEnvelopeOptions } from './strategies/routewise/cost-envelope.ts';
export { ResourceLedger, DEFAULT_QUOTA_BLOCK_MS, DEFAULT_CONCURRENCY_BLOCK_MS, type SharedQuotaFact, type QuotaSnapshot, type QuotaUnit, type QuotaWindow, type RouteResources, type Reservation } from './strategies/routewise/resources.ts';
export { explorationProbability, ExplorationLeases, ProbeGate, ProbeScheduler } from './strategies/routewise/cold-start.ts';
export { routeEndpointFamilies, type DefaultEndpoints } from './model/route-endpoints.ts';

// A list whose members carry their own links (no allocation, no long-lived table entry per member).
export { EngineSignals, type EngineSignalsView, type EngineLoad, type KvEvent } from './stats/engine-signals.ts';
export { PrefixBlockIndex, type PrefixBlockIndexOptions } from './stats/prefix-block-index.ts';
export { llmDStrategy, LlmDPlanner, LlmDParamsSchema, type LlmDParams, type LlmDScores } from './strategies/llm-d/llm-d.ts';
export { prefixCacheScore, queueScores, kvUtilizationScore } from './strategies/llm-d/scorers.ts';
export { sglangCacheAwareStrategy, SglangCacheAwarePlanner, SglangCacheAwareParamsSchema, isImbalanced, type SglangCacheAwareParams, type SglangBranch } from './strategies/sglang-cache-aware/sglang-cache-aware.ts';
export { ApproximateTree } from './strategies/sglang-cache-aware/approximate-tree.ts';
export { dynamoKvStrategy, DynamoKvPlanner, DynamoKvParamsSchema, dynamoCost, type DynamoKvParams, type DynamoProjection } from './strategies/dynamo-kv/dynamo-kv.ts';
export { IntrusiveList, type ListLinks } from './intrusive-list.ts';

// Auto models (seed 000 "Auto 模型"): profiles, candidate selection, conversations.
export { AutoBlockSchema, checkAutoBlock, isAutoModelName, AUTO_MODEL, AUTO_PREFIX, REASONING_EFFORTS, DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_TIMEOUT_SEC, type AutoBlockCheck, type AutoCandidate, type AutoConfig, type AutoProfile, type ReasoningEffort } from './auto/auto-config.ts';
export { selectCandidate, skipReason, requestRejection, autoContextNeedTokens, smallestWindowTokens, PROMPT_ESTIMATE_MARGIN, type AutoCandidateWorld, type AutoModelFacts, type AutoRequestFacts, type AutoSelection, type AutoSkip, type AutoSkipReason } from './auto/select-candidate.ts';
export { AutoSessions, autoSessionKey, openingMessagesHash, type AutoSessionEntry } from './auto/auto-sessions.ts';
export { AutoRouter, type AutoDecision, type AutoMetadata, type AutoRequest, type AutoSessionAction, type ThinkingStrip } from './auto/auto-router.ts';
export { autoModelFacts, autoWorld, modelAdmits } from './auto/auto-world.ts';

// Shared state between gateway replicas as data: sync events, breaker reports, applying shared facts.
export { applySharedOpen, applySharedPin, breakerReports, UNSEEN_BREAKER, type BreakerReport, type BreakerSeen, type SyncEvent } from './sync/sync-events.ts';

/**
 * The public surface of Switchyard's routing core. Drivers import from here only.
 * Sans-I/O and deterministic: time comes in as `nowMs`, randomness as an `Rng`.
 */
export { createRng, deriveRng, type Rng } from './rng.ts';
export { RoutingCore, type ResolvedModel, type ResolvedRoute, type RouteExclusion, type ExclusionReason, type RoutingCoreOptions } from './routing-core.ts';
export {
  parseModelsConfig,
  formatConfigError,
  ModelsConfigSchema,
  type ModelsConfig,
  type ModelConfig,
  type RouteConfig,
} from './config/models-config.ts';
export { endpointId, endpointLocation } from './config/endpoint-id.ts';
export type {
  RouteRequest,
  RequestLife,
  LifecycleEvent,
  LifecycleAction,
  RoutingMetadata,
  AttemptRecord,
  AttemptDeadlines,
  Modality,
  Usage,
} from './lifecycle/seam.ts';
export { classifyStatus, isHealthFailure, type Outcome, type HttpErrorClass } from './lifecycle/outcome.ts';
export { ERROR_STATUS, errorForOutcome, type ErrorCode } from './lifecycle/errors.ts';
export { HealthRegistry, DEFAULT_HEALTH_OPTIONS, type HealthOptions, type DispatchClaim, type EndpointHealthSnapshot } from './health/health-registry.ts';
export type { BreakerState, BreakerTransition } from './health/health-registry.ts';
export { StrategyRegistry, BUILTIN_STRATEGIES } from './strategies/registry.ts';
export type { Planner, Candidate, Pick, StrategyDefinition, PlannerRoute } from './strategies/planner.ts';

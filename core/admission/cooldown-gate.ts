/**
 * The cooldown gate (seed 003 "冷却"): a direct model that opted in to `cooldown:` is left out of
 * the walk of every alias that targets it while it cools down after consecutive failures.
 * `when_all_unavailable: try_anyway` asks the admission to ignore this gate (and only this one).
 */
import type { CooldownRegistry } from '../health/cooldown.ts';
import type { AdmissionGate, AdmissionTarget } from './gate.ts';

/** Check gate over the shared `CooldownRegistry`. */
export class CooldownGate implements AdmissionGate {
  readonly name = 'cooldown' as const;
  constructor(readonly cooldowns: CooldownRegistry) {}

  admits(target: AdmissionTarget, nowMs: number): boolean {
    return !this.cooldowns.active(target.endpointId, nowMs);
  }

  /** True when no endpoint opted in to cooldowns (then none can be cooling). */
  admitsEvery(): boolean {
    return this.cooldowns.isEmpty;
  }

  retryInMs(target: AdmissionTarget, nowMs: number): number {
    const s = this.cooldowns.status(target.endpointId, nowMs);
    return s.state === 'cooldown' ? s.untilMs! - nowMs : 0;
  }
}

/**
 * A hosted API as the simulator sees it: no engine inside, just an admission gate (rate limits →
 * 429 with Retry-After), a TTFT drawn from the distribution fitted to the provider's published
 * summary, a per-token time, a provider-side prompt cache for pricing, and a bill.
 *
 * Latency is independent of our own load — a hosted API serves many tenants and the profiles
 * were measured under theirs — except through the limits. Draws are keyed (simulator/crn.ts) by
 * (request, client try): the same request sent to the same provider draws the same TTFT and
 * per-token time under every strategy, which is what makes paired comparisons tight.
 */
import { keyedBase, keyedUniform } from '../crn.ts';
import type { ResolvedProvider } from './provider-config.ts';
import { RateLimiter, type LimitKind } from './rate-limiter.ts';

/** What the loop tells the provider about one attempt. Token counts are integers ≥ 0. */
export interface ProviderAttempt {
  readonly gid: number;
  /** Index of the trace request (the key of its draws). */
  readonly reqIndex: number;
  /** Client try, 0-based (a client retry draws afresh). */
  readonly tryNo: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly hashIds: readonly number[] | null;
}

/** The provider's answer to an attempt: refused by a limit, or a timeline of the response. */
export type ProviderAdmission =
  | { readonly ok: false; readonly limit: LimitKind; readonly retryAfterMs: number }
  | {
      readonly ok: true;
      /** Virtual ms of the first output token. */
      readonly firstTokenAtMs: number;
      /** Virtual ms of the last output token (= firstTokenAtMs when outputTokens ≤ 1). */
      readonly finishedAtMs: number;
      /** Prompt tokens served from the provider's prompt cache. */
      readonly cachedTokens: number;
      /** Time per output token after the first, ms. */
      readonly tpotMs: number;
    };

/** One hosted provider during one run. */
export class HostedProvider {
  readonly limiter: RateLimiter;
  private readonly base: number;
  private readonly inFlight = new Set<number>();
  private readonly cache = new Map<number, number>();

  /**
   * @param seed run seed; the provider's draws come from the keyed stream `provider/<name>`.
   * @param hashBlockTokens tokens per trace prefix block (prompt-cache granularity).
   */
  constructor(
    readonly spec: ResolvedProvider,
    seed: number,
    private readonly hashBlockTokens: number,
  ) {
    this.limiter = new RateLimiter(spec.limits);
    this.base = keyedBase(seed, `provider/${spec.name}`);
  }

  /** Attempts admitted and not yet released. */
  get running(): number {
    return this.inFlight.size;
  }

  /**
   * Admits `a` at `nowMs` or refuses it (429). `slowFactor` (≥ 1 under a `slow` fault)
   * multiplies TTFT and per-token time.
   * TTFT = Q_ttft(u₁)·ttftScale + ttftMsPer1kInput·input/1000; finish = first + (output − 1)·Q_tpot(u₂).
   * @throws Error when `a.gid` is already in flight here (a driver bug).
   */
  admit(a: ProviderAttempt, nowMs: number, slowFactor = 1): ProviderAdmission {
    if (this.inFlight.has(a.gid)) throw new Error(`provider ${this.spec.name}: attempt ${a.gid} admitted twice`);
    const adm = this.limiter.tryAcquire(nowMs, a.inputTokens + a.outputTokens);
    if (!adm.ok) return adm;
    this.inFlight.add(a.gid);
    const s = this.spec;
    const u1 = keyedUniform(this.base, a.reqIndex, a.tryNo, 0);
    const u2 = keyedUniform(this.base, a.reqIndex, a.tryNo, 1);
    const ttftMs = (s.ttft.quantile(u1) * s.ttftScale + (s.ttftMsPer1kInput * a.inputTokens) / 1000) * slowFactor;
    const tpotMs = s.tpot.quantile(u2) * slowFactor;
    const first = nowMs + ttftMs;
    return {
      ok: true,
      firstTokenAtMs: first,
      finishedAtMs: first + Math.max(0, a.outputTokens - 1) * tpotMs,
      cachedTokens: this.lookupAndInsert(a.hashIds, a.inputTokens, nowMs),
      tpotMs,
    };
  }

  /** Ends attempt `gid` (finished, failed or cancelled); a no-op when it is not in flight. */
  release(gid: number): void {
    if (this.inFlight.delete(gid)) this.limiter.release();
  }

  /** Ends every attempt in flight (an outage); returns their gids in admission order. */
  releaseAll(): number[] {
    const gids = [...this.inFlight];
    for (const g of gids) this.release(g);
    return gids;
  }

  /**
   * Token cost in USD: (uncached input × input price + cached × cached price + output × output
   * price) / 1e6, prices per 1M tokens.
   */
  costUsd(inputTokens: number, cachedTokens: number, outputTokens: number): number {
    const p = this.spec.pricing;
    return ((inputTokens - cachedTokens) * p.inputUsdPer1M + cachedTokens * p.cachedInputUsdPer1M + outputTokens * p.outputUsdPer1M) / 1e6;
  }

  /** @throws Error when the limiter's in-flight count disagrees with the attempts held. */
  invariants(): void {
    this.limiter.invariants();
    if (this.limiter.inFlight !== this.inFlight.size) {
      throw new Error(`provider ${this.spec.name}: limiter counts ${this.limiter.inFlight} in flight, provider holds ${this.inFlight.size}`);
    }
  }

  /** Prompt-cache hit (leading blocks used within the TTL), then marks every block used now. */
  private lookupAndInsert(hashIds: readonly number[] | null, inputTokens: number, nowMs: number): number {
    const ttl = this.spec.promptCacheTtlMs;
    if (ttl === null || hashIds === null || hashIds.length === 0) return 0;
    let hit = 0;
    while (hit < hashIds.length) {
      const t = this.cache.get(hashIds[hit]!);
      if (t === undefined || t < nowMs - ttl) break;
      hit++;
    }
    for (const h of hashIds) this.cache.set(h, nowMs);
    if (this.cache.size > 200_000) {
      for (const [h, t] of this.cache) if (t < nowMs - ttl) this.cache.delete(h);
    }
    return Math.min(inputTokens, hit * this.hashBlockTokens);
  }
}

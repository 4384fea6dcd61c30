/**
 * Per-key request limits of hosted providers with a key pool (experiment `providers[].api_keys`,
 * seed 000 "为某个层级预留上游 key"): every pooled key has its own RPM window, as a hosted API
 * limits each of its keys, on top of the provider's own limits. The secret a simulated route
 * declares for a key is a name, `sim-<provider>-<key id>`: nothing leaves the process.
 */
import { RateLimiter, type Admission } from './rate-limiter.ts';
import type { ProviderEntry } from './provider-config.ts';

/** The secret a simulated route declares for key `keyId` of `provider`. */
export function simKeySecret(provider: string, keyId: string): string {
  return `sim-${provider}-${keyId}`;
}

const ADMITTED: Admission = { ok: true };

/** The per-key limiters of one run, by `<endpoint id>|<key id>`. */
export class KeyLimits {
  private readonly limiters = new Map<string, RateLimiter>();

  /** @param providers the experiment's `providers:`; `endpointIdOf` maps a provider name to its endpoint id. */
  constructor(providers: readonly ProviderEntry[], endpointIdOf: (name: string) => string | undefined) {
    for (const p of providers) {
      const id = endpointIdOf(p.name);
      if (id === undefined) continue;
      for (const k of p.api_keys ?? []) {
        if (k.rpm !== undefined) this.limiters.set(`${id}|${k.id}`, new RateLimiter({ rpm: k.rpm, quota: [], concurrencyRetryAfterMs: 1000 }));
      }
    }
  }

  /** Counts a request of `tokens` on key `keyId` of `endpointId` at `nowMs`, or refuses it (429 with Retry-After). */
  tryAcquire(endpointId: string, keyId: string, nowMs: number, tokens: number): Admission {
    const l = this.limiters.get(`${endpointId}|${keyId}`);
    return l === undefined ? ADMITTED : l.tryAcquire(nowMs, tokens);
  }
}

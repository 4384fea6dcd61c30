/**
 * The registry of quota fetchers RouteWise's quota sources resolve against (seed 000
 * "RouteWise", quota sources and quota reports). The gateway registers none by default: an
 * extension (or a test) registers one per provider with `registerQuotaFetcher`. A fetcher asks
 * its provider (or its billing API) for the account's usage and returns the records as the
 * provider labels them; a route's `quota_source: {provider, usage_label, unit}` then picks the
 * one record whose three fields are exactly its own. The fetcher must count the account the
 * routes actually use, whatever credentials it reads usage with.
 */
import type { QuotaUsageRecord } from '../../core/index.ts';

/** One provider's quota fetcher. */
export interface QuotaFetcher {
  /** The `quota_source.provider` it answers for (one fetcher per provider). */
  readonly provider: string;
  /**
   * The provider's usage records now. Rejects on failure (the poller logs it and keeps the last
   * records); must stop when `signal` aborts (the poller's timeout).
   */
  fetch(signal: AbortSignal): Promise<QuotaUsageRecord[]>;
}

/** Quota fetchers by provider. */
export class QuotaFetcherRegistry {
  private readonly byProvider = new Map<string, QuotaFetcher>();

  /**
   * Registers `fetcher` for its provider; returns a function that unregisters it.
   * @throws Error when the provider name is empty or already has a fetcher (naming it).
   */
  register(fetcher: QuotaFetcher): () => void {
    if (!fetcher.provider) throw new Error('registerQuotaFetcher: the fetcher needs a provider name');
    if (this.byProvider.has(fetcher.provider)) throw new Error(`registerQuotaFetcher: provider '${fetcher.provider}' already has a quota fetcher; unregister it first`);
    this.byProvider.set(fetcher.provider, fetcher);
    return () => {
      if (this.byProvider.get(fetcher.provider) === fetcher) this.byProvider.delete(fetcher.provider);
    };
  }

  /** The fetcher of `provider`, or undefined. */
  get(provider: string): QuotaFetcher | undefined {
    return this.byProvider.get(provider);
  }

  /** Registered provider names, in registration order. */
  providers(): string[] {
    return [...this.byProvider.keys()];
  }
}

/** The process's registry, which gateways use unless their options name another. Empty at start. */
export const quotaFetchers = new QuotaFetcherRegistry();

/**
 * Registers a quota fetcher for every gateway of this process (the seed's `register_quota_fetcher`).
 * @returns a function that unregisters it.
 * @throws Error as `QuotaFetcherRegistry.register`.
 */
export function registerQuotaFetcher(fetcher: QuotaFetcher): () => void {
  return quotaFetchers.register(fetcher);
}

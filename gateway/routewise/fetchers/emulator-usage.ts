/**
 * An example quota fetcher: reads the engine emulator's usage endpoint (`GET /v1/usage`,
 * simulator/emulator/emulator.ts) and returns its records. It shows the shape every fetcher has:
 * one HTTP call with the abort signal, the provider's JSON turned into `QuotaUsageRecord`s, a
 * clear rejection on anything else. Register it with `registerQuotaFetcher(emulatorUsageFetcher
 * ({provider, baseUrl}))`; routes then name `quota_source: {provider, usage_label, unit}` with
 * the emulator's label and unit.
 *
 * The endpoint answers `{"object": "list", "data": [{"provider", "usage_label", "unit", "used",
 * "limit", "window_sec", "resets_at"}]}` (`resets_at`: Unix seconds or null).
 */
import { z } from 'zod';
import type { QuotaUsageRecord } from '../../../core/index.ts';
import type { QuotaFetcher } from '../quota-fetchers.ts';

const UsageBodySchema = z.object({
  data: z.array(
    z.object({
      provider: z.string(),
      usage_label: z.string(),
      unit: z.string(),
      used: z.number(),
      limit: z.number(),
      window_sec: z.number().nullable().optional(),
      resets_at: z.number().nullable().optional(),
    }),
  ),
});

/** Options of `emulatorUsageFetcher`. */
export interface EmulatorUsageFetcherOptions {
  /** The `quota_source.provider` it answers for. */
  provider: string;
  /** The emulator's OpenAI base URL (`http://host:port/v1`); the fetcher reads `<baseUrl>/usage`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>` when set. */
  apiKey?: string;
}

/**
 * A fetcher of the emulator's usage records. Records whose provider is not `provider` are left
 * for the snapshot store to drop.
 * @returns rejects with the HTTP status or the body's problem when the answer is not usage.
 */
export function emulatorUsageFetcher(opts: EmulatorUsageFetcherOptions): QuotaFetcher {
  const url = `${opts.baseUrl.replace(/\/+$/, '')}/usage`;
  return {
    provider: opts.provider,
    async fetch(signal: AbortSignal): Promise<QuotaUsageRecord[]> {
      const res = await fetch(url, { signal, headers: opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {} });
      if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
      const body = UsageBodySchema.safeParse(await res.json());
      if (!body.success) throw new Error(`GET ${url}: not a usage list (${body.error.issues[0]?.message ?? 'bad body'})`);
      return body.data.data.map((r) => ({
        provider: r.provider,
        usageLabel: r.usage_label,
        unit: r.unit,
        used: r.used,
        limit: r.limit,
        windowSec: r.window_sec ?? null,
        resetsAtUnixMs: r.resets_at == null ? null : r.resets_at * 1000,
      }));
    },
  };
}

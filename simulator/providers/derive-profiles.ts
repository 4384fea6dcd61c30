/**
 * Regenerates the committed provider profiles (`profiles/*.json`) from RouteWise's published
 * latency summaries, copied byte for byte into `profiles/source/` (MIT; see profiles/SOURCE.txt), keeping
 * only what the simulator uses: per-provider TTFT n/p50/p90/p99/mean/max, prices per 1M tokens,
 * context length and the plan limits a source states. Run: `npx tsx simulator/providers/derive-profiles.ts`.
 * The numbers are copied, rounded (ms to 0.001, USD to 1e-6 — the sources carry float noise
 * such as 0.19999999999999998); nothing is re-estimated here.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ProfileFileSchema, PROFILES_DIR, type ProfileFile, type ProviderProfile } from './provider-profile.ts';

/** `profiles/source/`: the three RouteWise summary files the profiles are derived from, unchanged. */
export const ROUTEWISE_DIR = fileURLToPath(new URL('./profiles/source/', import.meta.url));

/** Provenance line of each source file (repository path @ commit, from the folder's SOURCE.txt). */
const SOURCES = {
  openrouter: 'HarvardMadSys/RouteWise experiments/simulation/latency_profiles/minimax_m25_openrouter_24h.json @ 03868969c71e04079dfa77e760979a3c37f057e8',
  subscriptions: 'HarvardMadSys/RouteWise experiments/simulation/latency_profiles/minimax_m25_subscriptions.json @ a3691272899961e1dd29fdac4fbffec790969ae3',
  m3: 'HarvardMadSys/RouteWise experiments/simulation/latency_profiles/minimax_m3_shared_profile_24h.json @ 3a38f205346ea29882a631cd42ca3d1e257ac971',
} as const;

type Json = Record<string, unknown>;

const ms = (v: unknown) => Math.round(Number(v) * 1000) / 1000;
const usd = (v: unknown) => Math.round(Number(v) * 1e6) / 1e6;
const slug = (s: string) => s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');

function ttftOf(p: Json) {
  return { n_samples: Number(p.n_samples), p50_ms: ms(p.p50_ms), p90_ms: ms(p.p90_ms), p99_ms: ms(p.p99_ms), mean_ms: ms(p.mean_ms), max_ms: ms(p.max_ms) };
}

function priceOf(input: unknown, output: unknown, cached: unknown) {
  if (input === null || input === undefined || output === null || output === undefined) return null;
  return { input_usd_per_1m: usd(input), output_usd_per_1m: usd(output), cached_input_usd_per_1m: cached === null || cached === undefined ? null : usd(cached) };
}

function read(dir: string, file: string): Json {
  return JSON.parse(readFileSync(join(dir, file), 'utf8')) as Json;
}

function observedOf(stats: Json | undefined): string {
  if (!stats) return 'unknown';
  return `${String(stats.timestamp_min)} .. ${String(stats.timestamp_max)} (${Number(stats.observed_duration_hours).toFixed(2)} h)`;
}

/**
 * Builds the three profile files from the RouteWise folder.
 * @returns file name (without `.json`) → validated profile file.
 * @throws ENOENT when a source file is absent; a zod Error when a source changed shape.
 */
export function deriveProfiles(dir: string = ROUTEWISE_DIR): Record<string, ProfileFile> {
  const out: Record<string, ProfileFile> = {};

  const or = read(dir, 'minimax_m25_openrouter_24h.json');
  const orProviders: Record<string, ProviderProfile> = {};
  for (const [name, p] of Object.entries(or.providers as Record<string, Json>)) {
    const price = (p.openrouter_price ?? {}) as Json;
    orProviders[slug(name)] = {
      label: `${name} via OpenRouter${price.tag ? ` (${String(price.tag)})` : ''}`,
      type: 'on_demand',
      ttft: ttftOf(p),
      pricing: priceOf(price.input_price_per_m, price.output_price_per_m, price.input_cache_read_price_per_m),
      context_length: typeof price.context_length === 'number' ? price.context_length : null,
      limits: {},
      source: `minimax_m25_openrouter_24h.json providers.${name}`,
      notes: '',
    };
  }
  out['minimax-m2.5-openrouter'] = ProfileFileSchema.parse({
    family: 'minimax-m2.5',
    description: 'TTFT of real streaming MiniMax-M2.5 requests through OpenRouter, per upstream provider, with OpenRouter price snapshots',
    source: SOURCES.openrouter,
    licence: 'MIT',
    observed: observedOf(or.run_stats as Json),
    providers: orProviders,
  });

  const sub = read(dir, 'minimax_m25_subscriptions.json');
  const subProviders: Record<string, ProviderProfile> = {};
  for (const [name, p] of Object.entries(sub.providers as Record<string, Json>)) {
    const tier = String(p.tier);
    subProviders[slug(name)] = {
      label: String(p.provider_label),
      type: tier === 'concurrency' ? 'concurrency' : 'quota',
      ttft: ttftOf(p),
      // A subscription has no per-token price: its cost is the plan's fee (fixed_usd_per_hour).
      pricing: { input_usd_per_1m: 0, output_usd_per_1m: 0, cached_input_usd_per_1m: 0 },
      context_length: null,
      limits: {},
      source: `minimax_m25_subscriptions.json providers.${name}`,
      notes: `${String((sub.sample_semantics as Json)[name] ?? '')} Observed ${String(p.timestamp_min)} .. ${String(p.timestamp_max)}.`.trim(),
    };
  }
  out['minimax-m2.5-subscriptions'] = ProfileFileSchema.parse({
    family: 'minimax-m2.5',
    description: 'TTFT of MiniMax-M2.5 on subscription plans (quota and concurrency tiers); per-token price 0',
    source: SOURCES.subscriptions,
    licence: 'MIT',
    observed: 'per provider, see notes',
    providers: subProviders,
  });

  const m3 = read(dir, 'minimax_m3_shared_profile_24h.json');
  const m3Providers: Record<string, ProviderProfile> = {};
  for (const [name, p] of Object.entries(m3.providers as Record<string, Json>)) {
    const tier = String(p.tier);
    const type = tier === 'api' ? 'on_demand' : tier === 'concurrency' ? 'concurrency' : 'quota';
    const limits: ProviderProfile['limits'] = {};
    if (typeof p.concurrency_limit === 'number') limits.concurrency = p.concurrency_limit;
    // The MiniMax Plus plan's windows are stated in the source's notes text:
    // "4500 requests / 5h and 45000 requests / week".
    if (name === 'MiniMax_Plus_SQ') {
      limits.quota = [
        { window_ms: 5 * 3_600_000, requests: 4500 },
        { window_ms: 7 * 24 * 3_600_000, requests: 45_000 },
      ];
    }
    m3Providers[slug(name)] = {
      label: String(p.name ?? name),
      type,
      ttft: ttftOf(p),
      pricing: priceOf(p.input_price_per_m, p.output_price_per_m, p.cached_input_price_per_m),
      context_length: null,
      limits,
      source: `minimax_m3_shared_profile_24h.json providers.${name}`,
      notes: String(p.notes ?? ''),
    };
  }
  out['minimax-m3'] = ProfileFileSchema.parse({
    family: 'minimax-m3',
    description: 'TTFT of real MiniMax-M3 requests (24 h, natural + probe traffic) per provider, with prices and plan limits',
    source: SOURCES.m3,
    licence: 'MIT',
    observed: observedOf(m3.run_stats as Json),
    providers: m3Providers,
  });
  return out;
}

/** Serialises a profile file the way it is committed (2-space JSON, trailing newline). */
export function profileJson(file: ProfileFile): string {
  return `${JSON.stringify(file, null, 2)}\n`;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const [name, file] of Object.entries(deriveProfiles())) {
    writeFileSync(join(PROFILES_DIR, `${name}.json`), profileJson(file));
    process.stdout.write(`wrote profiles/${name}.json (${Object.keys(file.providers).length} providers)\n`);
  }
}

// A gateway configuration for the control-plane suites of part 2: model `rw` (RouteWise, alias
// `rw-alias`, router_params slo_ms 2000) over every emulator, model `plain` (fixed) over the first,
// and the test keys.
import { hashKey } from '../../gateway/callers.ts';
import { buildGatewayConfig, type GatewayConfig } from '../../gateway/config/load.ts';
import type { RunningEmulator } from '../../simulator/emulator/emulator.ts';
import { KEYS } from '../gateway/harness.ts';

/** Cheap and dear prices, so RouteWise has a cost spread. */
export const CHEAP = { input_usd_per_1m: 1, output_usd_per_1m: 2 };
export const DEAR = { input_usd_per_1m: 10, output_usd_per_1m: 20 };

/** The configuration; `urls` overrides the routes' base URLs (a dead upstream). */
export function rwConfig(emus: RunningEmulator[], gateway: Record<string, unknown>, urls: string[] = emus.map((e) => e.baseUrl)): GatewayConfig {
  return buildGatewayConfig({
    models: {
      models: [
        { id: 'rw', aliases: ['rw-alias'], router: 'routewise', router_params: { slo_ms: 2000 }, route: urls.map((u, i) => ({ base_url: u, pricing: i === 0 ? CHEAP : DEAR })) },
        { id: 'plain', route: [{ base_url: urls[0]! }] },
      ],
    },
    gateway: {
      routing_settings: { affinity_enabled: false, prefill_aware_enabled: false },
      health: { failure_threshold: 1000 },
      ...gateway,
      auth: { mode: 'keys', keys: [{ id: 'user', sha256: hashKey(KEYS.user), allowed_models: ['rw', 'plain'] }, { id: 'admin', sha256: hashKey(KEYS.admin), admin: true }] },
    },
  });
}

/** Waits until `cond` holds (checked every 10 ms), failing after `ms` with `what`. */
export async function until(cond: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

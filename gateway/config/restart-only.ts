/**
 * Which settings a configuration reload cannot apply (listeners, workers, seed, log level,
 * upstream pools, request log, store): they need a restart, and a reload says so.
 */
import type { GatewayConfig } from './load.ts';

/**
 * Settings that differ between two configurations and that a reload cannot apply (they need a
 * restart), as dotted names: `server.host`, `server.port`, `server.workers`, `server.admin_host`,
 * `server.admin_port`, `server.seed`, `server.log_level`, `upstream`, `request_log`, `store`, `tracing`.
 * Both configurations must carry the same command-line overrides (the CLI applies them to every
 * load), so a setting that did not change is never reported. Empty when nothing needs a restart.
 */
export function restartOnly(prev: GatewayConfig, next: GatewayConfig): string[] {
  const out: string[] = [];
  const a = prev.settings;
  const b = next.settings;
  for (const k of ['host', 'port', 'workers', 'admin_host', 'admin_port', 'seed', 'log_level'] as const) if (a.server[k] !== b.server[k]) out.push(`server.${k}`);
  if (JSON.stringify(a.upstream) !== JSON.stringify(b.upstream)) out.push('upstream');
  if (JSON.stringify(a.request_log) !== JSON.stringify(b.request_log)) out.push('request_log');
  if (JSON.stringify(a.store) !== JSON.stringify(b.store)) out.push('store');
  if (JSON.stringify(a.tracing) !== JSON.stringify(b.tracing)) out.push('tracing');
  return out;
}
